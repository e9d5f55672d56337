"""Inputs from the secret seed: fresh, reproducible only by whoever holds the seed.

Every use (one correctness trial, one timed iteration, one warm-up call) gets
its own seed, derived from the run's secret with a keyed hash of a label, so
the judge can regenerate any input set exactly (pristine copies for the
reference and the read-only check) without storing it, and the submission,
which never sees the secret, cannot predict or recognise one.

Generation is generic (the schema has no per-input value hints):
- floating inputs: normal, with each row scaled by a factor in [0.5, 2]
  (log-uniform) so rows differ in magnitude (on a GPU drawn by one kernel,
  draw_fused.py: the same law, the kernel's own values);
- quantised inputs (tensorSpec `quantized`): real values as above, one scale
  per block chosen as an exact power of two so the block's largest value fits
  the format, real float8 / int8 bytes stored, scales in the `<name>_scale`
  input; the reference dequantises these exact bytes (dtypes.dequantize);
- integers: uniform in the dtype's range for int8/uint8, [0, 1024) for
  int32/int64; bool: fair coin;
- a tensorSpec `meaning` containing `in [lo, hi)` (or `[lo, hi]`), with lo/hi
  expressions over the dims, narrows the range; the word `distinct` makes all
  values of the tensor different (e.g. cache slots).
"""

import hashlib
import hmac
import math
import re

import torch

from . import dtypes, expr

_RANGE = re.compile(r"in\s*\[\s*([^,\]]+?)\s*,\s*([^\])]+?)\s*([\])])")


class Secret:
    """The run's secret seed. Only the judge process ever holds one."""

    def __init__(self, key):
        if not isinstance(key, bytes) or len(key) < 16:
            raise ValueError("the secret seed must be at least 16 bytes")
        self._key = key

    def derive(self, *label):
        msg = "/".join(str(p) for p in label).encode()
        return int.from_bytes(hmac.new(self._key, msg, hashlib.sha256).digest()[:8], "little") & ((1 << 63) - 1)

    def sign(self, data):
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()


def _gen(seed, device):
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    return g


# The fused draw (draw_fused.Lazy) when the judge turns it on (Options.fused_draw), else None.
_FUSED = None


def use_fused(draw):
    """Floating inputs drawn by draw_fused's kernel where it is usable (None: torch's recipe)."""
    global _FUSED
    _FUSED = draw


def _row_scaled_normal(shape, g, device, dtype=torch.float32, key=None, out=None):
    """A float32 normal, each row scaled by 2^U(-1, 1) in float32, as `dtype`. With the fused draw
    (key: the input's seed) one kernel writes it, into `out` when given: the row factors still
    come from `g`, the normal from the kernel's own generator; the same law, other values
    (draw_fused.py)."""
    if _FUSED is not None and key is not None and _FUSED.usable(device, dtype):
        if out is None or out.dtype != dtype or list(out.shape) != list(shape) or not _FUSED.fits(out):
            out = torch.empty(shape, dtype=dtype, device=device)
        if out.numel() == 0:
            return out
        rows, scale = 1, None
        if len(shape) >= 2:
            for s in shape[:-1]:
                rows *= s
            scale = torch.exp2(torch.rand(rows, generator=g, device=device) * 2 - 1)
        _FUSED.draw(out, scale, key, shape[-1] if len(shape) >= 2 else out.numel())
        return out
    x = torch.randn(shape, generator=g, device=device, dtype=torch.float32)
    if len(shape) >= 2 and x.numel() > 0:
        rows = 1
        for s in shape[:-1]:
            rows *= s
        f = torch.rand(rows, generator=g, device=device) * 2 - 1
        x = x.reshape(rows, shape[-1]).mul_(torch.exp2(f).unsqueeze(1)).reshape(shape)
    return x.to(dtype)


def _range_hint(spec, dims):
    m = _RANGE.search(spec.meaning or "")
    if not m:
        return None
    lo = expr.evaluate(m.group(1), dims)
    hi = expr.evaluate(m.group(2), dims)
    if not isinstance(lo, float) or not isinstance(hi, float):
        raise ValueError("input %r: range hint %r is not numeric" % (spec.name, m.group(0)))
    inclusive = m.group(3) == "]"
    return lo, hi, inclusive


def _integers(spec, shape, dims, g, device):
    tdt = dtypes.torch_dtype(spec.dtype)
    hint = _range_hint(spec, dims)
    if hint is not None:
        lo, hi, inclusive = int(math.ceil(hint[0])), int(math.floor(hint[1])), hint[2]
        if inclusive:
            hi += 1
    elif spec.dtype == "int8":
        lo, hi = -128, 128
    elif spec.dtype == "uint8":
        lo, hi = 0, 256
    else:
        lo, hi = 0, 1024
    if hi <= lo:
        raise ValueError("input %r: empty value range [%d, %d)" % (spec.name, lo, hi))
    n = 1
    for s in shape:
        n *= s
    if "distinct" in (spec.meaning or ""):
        if hi - lo < n:
            raise ValueError("input %r: %d distinct values do not fit in [%d, %d)" % (spec.name, n, lo, hi))
        vals = torch.randperm(hi - lo, generator=g, device=device)[:n] + lo
        return vals.reshape(shape).to(tdt)
    return torch.randint(lo, hi, shape, generator=g, device=device, dtype=torch.int64).to(tdt)


def block_amax(x, grid, blocks):
    """max |x| over each block (ragged tails padded with zeros)."""
    pad = []
    for d in reversed(range(x.dim())):
        pad += [0, grid[d] * blocks[d] - x.shape[d]]
    xp = torch.nn.functional.pad(x.abs(), pad) if any(pad) else x.abs()
    view = []
    for g_, b in zip(grid, blocks):
        view += [g_, b]
    xp = xp.reshape(view)
    for d in reversed(range(x.dim())):
        xp = xp.amax(dim=2 * d + 1)
    return xp


def quantize(real, fmt, sshape, block_size=None):
    """(q, scale): q holds real float8/int8 bytes, scale exact powers of two, real ~= q * scale."""
    grid, blocks = dtypes.scale_grid(tuple(real.shape), tuple(sshape), block_size)
    fmax = dtypes.max_finite(fmt)
    amax = block_amax(real, grid, blocks)
    # Smallest power of two with amax / scale <= fmax: exact in float32, so the
    # scale itself adds no rounding error (the schema's per-tensor requirement).
    e = torch.ceil(torch.log2(torch.where(amax > 0, amax / fmax, torch.ones_like(amax))))
    scale = torch.exp2(e.clamp(-100, 100)).to(torch.float32)
    full = dtypes.expand_blocks(scale.reshape(sshape), tuple(real.shape), block_size)
    scaled = real / full
    if fmt == "int8":
        q = torch.round(scaled).clamp(-127, 127).to(torch.int8)
    else:
        q = dtypes.from_float(scaled, fmt)
    return q, scale.reshape(sshape)


def _quant_format(spec):
    if dtypes.is_float8(spec.dtype):
        return spec.dtype
    if spec.dtype == "int8":
        return "int8"
    raise ValueError("quantised input %r has dtype %s; only float8 and int8 hold quantised values" % (spec.name, spec.dtype))


def layout(task, dims):
    """[(torch dtype, shape)] of the inputs make_inputs makes, in definition order."""
    return [(dtypes.torch_dtype(s.dtype), list(sh)) for s, sh in zip(task.inputs, task.input_shapes(dims))]


def make_inputs(task, dims, seed, device="cpu", out=None):
    """The input tensors of one use, in definition order, generated on `device`. With `out` (one
    contiguous tensor an input, of layout()'s dtypes and shapes: the judge's arena slots), they are
    made there and `out` is returned: a float input the fused draw makes is written in place, any
    other is made, then copied in. The values are the same either way."""
    shapes = task.input_shapes(dims)
    by_name = {s.name: (s, sh) for s, sh in zip(task.inputs, shapes)}
    into = {s.name: o for s, o in zip(task.inputs, out)} if out is not None else {}
    made = {}
    # Quantised tensors first: they also make their `<name>_scale` input.
    order = sorted(task.inputs, key=lambda s: s.quantized is None)
    for spec in order:
        if spec.name in made:
            continue
        shape = by_name[spec.name][1]
        key = _mix(seed, spec.name)
        g = _gen(key, device)
        if spec.quantized is not None:
            sspec, sshape = by_name[spec.name + "_scale"]
            real = _row_scaled_normal(shape, g, device, key=key)
            q, scale = quantize(real, _quant_format(spec), sshape, (spec.quantized or {}).get("block_size"))
            made[sspec.name] = scale.to(dtypes.torch_dtype(sspec.dtype))
            made[spec.name] = q
        elif dtypes.is_float8(spec.dtype):
            made[spec.name] = dtypes.from_float(_floats(spec, shape, dims, g, device, key=key), spec.dtype)
        elif dtypes.is_floating(spec.dtype):
            made[spec.name] = _floats(spec, shape, dims, g, device, dtypes.torch_dtype(spec.dtype), key, into.get(spec.name))
        elif spec.dtype == "bool":
            made[spec.name] = torch.rand(shape, generator=g, device=device) < 0.5
        else:
            made[spec.name] = _integers(spec, shape, dims, g, device)
    if out is None:
        return [made[s.name] for s in task.inputs]
    for s, o in zip(task.inputs, out):
        if made[s.name] is not o:
            o.copy_(made[s.name])
    return list(out)


def _floats(spec, shape, dims, g, device, dtype=torch.float32, key=None, out=None):
    hint = _range_hint(spec, dims)
    if hint is not None:
        lo, hi, _ = hint
        return (torch.rand(shape, generator=g, device=device) * (hi - lo) + lo).to(dtype)
    return _row_scaled_normal(shape, g, device, dtype, key, out)


def _mix(seed, name):
    return int.from_bytes(hashlib.sha256(("%d/%s" % (seed, name)).encode()).digest()[:8], "little") & ((1 << 63) - 1)


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)
