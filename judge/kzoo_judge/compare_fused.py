"""Two 16-bit float outputs compared on the GPU in one pass over their bytes (compare_narrow.cu).

compare.py's float32 path for 16-bit outputs gives its figures through about twelve torch
kernels a chunk; this gives the same figures from one kernel over the whole tensors and a few
torch reductions over its per-thread partials (a few MB). What compare.py does with them is
the same either way: a ratio within MARGIN of 1, or anything not finite, sends the comparison
to the float64 path (compare._narrow_figures).

The kernel is PTX (compare_ptx.py, built from compare_narrow.cu) loaded through the CUDA driver
with ctypes (ptx_module.py): no compiler in the sandbox. Every failure is a value: compare.py then
takes its torch path.

On by default on a GPU since session 29 (Options.fused_compare), when an H200 run gave the torch
path's verdicts and figures at 0.5 G and 16 M elements (scripts/gpu/compare_probe.py, 6.3x and
1.4x) and the judge's GPU test classes passed (docs/GPU.md).
"""
import ctypes

import torch

from . import compare_ptx, ptx_module

# compare_narrow.cu's KZOO_BF16 and KZOO_F16 (its host build's fmt), and its kernel for each
FORMATS = {torch.bfloat16: 0, torch.float16: 1}
KERNELS = {torch.bfloat16: "kzoo_compare_narrow_bf16", torch.float16: "kzoo_compare_narrow_f16"}
THREADS = 256
BLOCKS_PER_SM = 4


def partial_buffers(nthreads, device):
    """The kernel's outputs, one element a thread: absmax, rmax, ridx, sd, se, bad."""
    return (torch.empty(nthreads, dtype=torch.float32, device=device), torch.empty(nthreads, dtype=torch.float32, device=device),
            torch.empty(nthreads, dtype=torch.int64, device=device), torch.empty(nthreads, dtype=torch.float64, device=device),
            torch.empty(nthreads, dtype=torch.float64, device=device), torch.empty(nthreads, dtype=torch.int32, device=device))


def reduce(parts, out, exp):
    """The partials of one launch over the flat tensors `out` and `exp`, reduced on their device
    with one host sync: (any bad, absmax, worst ratio, its flat index, out and expected there as
    float64, ||d||, ||exp||) -- or None when no thread saw an element. The worst is the first
    index among the largest ratios, as torch.argmax takes it."""
    absmax, rmax, ridx, sd, se, bad = parts
    best = rmax.max()
    k = torch.where(rmax == best, ridx, torch.full_like(ridx, torch.iinfo(torch.int64).max)).min()
    f64 = torch.float64
    kc = k.clamp(0, max(out.numel() - 1, 0))
    vals = torch.stack([(bad != 0).any().to(f64), absmax.max().to(f64), best.to(f64), k.to(f64),
                        out[kc].to(f64), exp[kc].to(f64), sd.sum().sqrt(), se.sum().sqrt()]).tolist()
    if vals[2] < 0:
        return None
    return bool(vals[0]), vals[1], vals[2], int(vals[3]), vals[4], vals[5], vals[6], vals[7]


class Kernel:
    """The loaded kernel for the current CUDA context. `load()` -> (kernel, None) or (None, why)."""

    def __init__(self, module):
        self._module = module
        self.blocks = module.blocks

    @classmethod
    def load(cls):
        module, why = ptx_module.Module.load(compare_ptx.PTX, list(KERNELS.values()), THREADS, BLOCKS_PER_SM)
        return (cls(module), None) if module is not None else (None, "the comparison's kernel: %s" % why)

    def partials(self, out, exp, bound):
        """Launches the kernel over the flat, contiguous 16-bit tensors `out` and `exp` (one dtype,
        one device) on the current stream. Returns (the partials, None) or (None, why)."""
        nthreads = self.blocks * THREADS
        parts = partial_buffers(nthreads, exp.device)
        atol, rtol = bound if bound is not None else (0.0, 0.0)
        args = [ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(exp.data_ptr()), ctypes.c_int64(exp.numel()),
                ctypes.c_int(bound is not None), ctypes.c_float(atol), ctypes.c_float(rtol)]
        args += [ctypes.c_void_p(p.data_ptr()) for p in parts]
        why = self._module.launch(KERNELS[exp.dtype], args, exp.device)
        return (None, why) if why else (parts, None)


class Lazy:
    """The kernel loaded at its first use, in the context then current, and trusted only once its
    first figures were the torch path's for the same tensors (compare._compare_values runs both
    that once: on hardware or a driver this PTX has not met, a wrong figure turns it off instead
    of deciding a verdict). A load, a launch or that first check that fails is said once through
    `log`, and the torch path is taken from then on. `load` and `device_type` stand in for the
    CUDA kernel in the tests (the same source built for the host)."""

    def __init__(self, log, load=None, device_type="cuda"):
        self._log, self._load, self._device_type = log, load or Kernel.load, device_type
        self._kernel, self._failed, self.trusted = None, False, False

    def figures(self, out, exp, bound):
        """reduce()'s figures for the flat tensors, or None (the torch path, then)."""
        if self._failed or exp.device.type != self._device_type or exp.dtype not in FORMATS or out.dtype != exp.dtype:
            return None
        if self._kernel is None:
            self._kernel, why = self._load()
            if self._kernel is None:
                self._off(why)
                return None
        parts, why = self._kernel.partials(out, exp, bound)
        if parts is None:
            self._off(why)
            return None
        return reduce(parts, out, exp)

    def settle(self, agreed, detail):
        """The first figures' check (compare._compare_values): trusted from now on, or off."""
        if agreed:
            self.trusted = True
        else:
            self._off("its first figures were not the torch path's (%s)" % detail)

    def _off(self, why):
        self._failed = True
        self._log("the fused comparison is off: %s" % why)
