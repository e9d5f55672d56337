"""A floating input set drawn on the GPU in one pass over its bytes (draw_normal.cu).

inputs.py's torch recipe for a float input -- a float32 normal, each row scaled in float32, the
cast to the input's dtype -- runs three kernels and moves ~10 bytes an element: 3.5 ms for a 1 GiB
bf16 set on an H200, ~370 sets a 3-case grade. The kernel writes the set once. Its law is the
recipe's (a float32 normal times its row's float32 factor, rounded once to the dtype); its values
are its own: Philox4x32-10 keyed by the input's seed, not torch's generator.

So a run draws every set one way: whether the kernel is used is settled at its first use (it
loads, and its draw of a known set is the host build's to the bit, KNOWN_SHA256, or it is off
from then on), and once it has drawn, a failure is an error, not a fall back to the torch
recipe, which would make different values for the sets regenerated after it (the pristine
copies of the compared calls).

On by default on a GPU since session 29 (Options.fused_draw), when the H200 drew the known set
to the bit in each format and a 16 M-element set as the host build does (tests/test_draw_fused.py
OnTheGpu; docs/GPU.md).
"""
import ctypes
import hashlib

import torch

from . import draw_ptx, ptx_module

# draw_normal.cu's KZOO_F32, KZOO_BF16, KZOO_F16, and its kernel for each
FORMATS = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}
KERNELS = {torch.float32: "kzoo_draw_normal_f32", torch.bfloat16: "kzoo_draw_normal_bf16",
           torch.float16: "kzoo_draw_normal_f16"}
THREADS = 256
BLOCKS_PER_SM = 8
ALIGN = 16  # a group's 4 elements are one store: 16 bytes (float32) or 8

# The known set: KNOWN_N elements in rows of KNOWN_COLS (the last row and the last group partial),
# row factors 2^(k/KNOWN_ROWS - 0.5) for row k, drawn with KNOWN_KEY; KNOWN_SHA256 is the SHA-256
# of its bytes as the host build draws them (tests/test_draw_fused.py makes them again).
KNOWN_N, KNOWN_COLS, KNOWN_KEY = 100003, 1001, 0x5DEECE66D2B7E151
KNOWN_ROWS = -(-KNOWN_N // KNOWN_COLS)
KNOWN_SHA256 = {
    torch.float32: "f5f8402b5e9ea8d05c25e3bdf683b2450862ac15cf474b3ff321235c7b6675a4",
    torch.bfloat16: "0e6586513a2b7ea3e4bbc5210efc16cee959ac3453dd88765f0d72066af0f82d",
    torch.float16: "afc7d6ccea677a2050fb1e917b230bea983bd966479dd68ba9e34eb074883cf2",
}


def key_words(key):
    """The kernel's two 32-bit key words of a 64-bit seed."""
    return key & 0xFFFFFFFF, (key >> 32) & 0xFFFFFFFF


def known_scale(device):
    return torch.exp2(torch.arange(KNOWN_ROWS, dtype=torch.float64, device=device) / KNOWN_ROWS - 0.5).to(torch.float32)


def digest(t):
    return hashlib.sha256(t.detach().contiguous().view(torch.uint8).cpu().numpy().tobytes()).hexdigest()


def known_answers(draw, device):
    """{dtype: sha256} of the known set drawn by `draw(out, scale, key)` in each format."""
    scale = known_scale(device)
    got = {}
    for dtype in FORMATS:
        out = torch.empty(KNOWN_N, dtype=dtype, device=device)
        draw(out, scale, KNOWN_KEY, KNOWN_COLS)
        got[dtype] = digest(out)
    return got


class Kernel:
    """The loaded kernels for the current CUDA context. `load()` -> (kernel, None) or (None, why)."""

    def __init__(self, module):
        self._module = module

    @classmethod
    def load(cls):
        module, why = ptx_module.Module.load(draw_ptx.PTX, list(KERNELS.values()), THREADS, BLOCKS_PER_SM)
        return (cls(module), None) if module is not None else (None, "the draw's kernel: %s" % why)

    def draw(self, out, scale, key, cols):
        """Fills the contiguous tensor `out` (a FORMATS dtype, 16-byte aligned) in rows of `cols`
        elements, row k scaled by the float32 scale[k] (or by nothing: scale None). None, or why not."""
        n = out.numel()
        if n == 0:
            return None
        k0, k1 = key_words(key)
        args = [ctypes.c_void_p(out.data_ptr()), ctypes.c_int64(n), ctypes.c_int64(max(1, cols)),
                ctypes.c_void_p(scale.data_ptr() if scale is not None else 0), ctypes.c_uint32(k0), ctypes.c_uint32(k1)]
        return self._module.launch(KERNELS[out.dtype], args, out.device)


class Lazy:
    """The kernel loaded at its first use, in the context then current, and used only once its draw
    of the known set was the host build's (known_answers). `load` and `device_type` stand in for
    the CUDA kernel in the tests (the same source built for the host)."""

    def __init__(self, log, load=None, device_type="cuda", known=None):
        self._log, self._load, self._device_type = log, load or Kernel.load, device_type
        self._known = known if known is not None else KNOWN_SHA256
        self._kernel, self._settled, self._off, self.drawn = None, False, False, 0

    def usable(self, device, dtype):
        """Whether a set of `dtype` on `device` is drawn by the kernel: asked before the set takes
        anything from its torch generator, so that the torch recipe, when this says no, draws what
        it always did."""
        if self._off or torch.device(device).type != self._device_type or dtype not in FORMATS:
            return False
        if not self._settled:
            self._settled = True
            self._kernel, why = self._load()
            if self._kernel is None:
                return self._turn_off(why)
            try:
                got = known_answers(self._draw_checked, device)
            except RuntimeError as e:
                return self._turn_off(str(e))
            wrong = [str(d).replace("torch.", "") for d in FORMATS if got[d] != self._known.get(d)]
            if wrong:
                return self._turn_off("its draw of the known set differs from the host build's in %s" % ", ".join(wrong))
        return self._kernel is not None

    @staticmethod
    def fits(out):
        """Whether the kernel can write `out` where it lies (contiguous, aligned)."""
        return out.is_contiguous() and out.data_ptr() % ALIGN == 0

    def draw(self, out, scale, key, cols):
        """Draws `out` (usable() said yes). A failure raises: sets drawn before it would be drawn
        again another way."""
        self._draw_checked(out, scale, key, cols)
        self.drawn += 1

    def _draw_checked(self, out, scale, key, cols):
        if not self.fits(out):
            raise RuntimeError("the fused draw needs a contiguous tensor aligned to %d bytes" % ALIGN)
        if scale is not None and (scale.dtype != torch.float32 or not scale.is_contiguous()
                                  or scale.numel() * max(1, cols) < out.numel()):
            raise RuntimeError("the fused draw's row factors are one contiguous float32 a row")
        why = self._kernel.draw(out, scale, key, cols)
        if why:
            raise RuntimeError("the fused draw failed: %s" % why)

    def _turn_off(self, why):
        self._off = True
        self._log("the fused draw is off: %s" % why)
        return False
