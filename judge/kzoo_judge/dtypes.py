"""Task dtypes to torch dtypes, and float8 on every torch we run on.

torch 1.13 (Debian, CI) has no float8 dtypes. There a float8 tensorSpec is
passed as a torch.uint8 tensor holding the exact float8 bytes; on a torch
with float8 dtypes it is a real float8 tensor. References and submissions
read either form with `to_float(t, "float8_e4m3fn")`, which decodes the bytes
exactly (every float8 value is exact in float32), and write float8 with
`from_float`. Quantised int8 is plain int8 on every version.
"""

import torch

_NATIVE = {
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float32": torch.float32,
    "float64": torch.float64,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "int32": torch.int32,
    "int64": torch.int64,
    "bool": torch.bool,
}

from .dtype_names import ALL, FLOAT8  # noqa: E402 - the names, shared with task.py (no torch there)

assert set(ALL) == set(_NATIVE) | set(FLOAT8)

# (exponent bits, mantissa bits, bias, has infinities) of each float8 format.
_F8_LAYOUT = {"float8_e4m3fn": (4, 3, 7, False), "float8_e5m2": (5, 2, 15, True)}


def has_native_float8():
    return hasattr(torch, "float8_e4m3fn") and hasattr(torch, "float8_e5m2")


def torch_dtype(name):
    """The torch dtype that carries a task dtype on this torch."""
    if name in _NATIVE:
        return _NATIVE[name]
    if name in FLOAT8:
        return getattr(torch, name) if has_native_float8() else torch.uint8
    raise ValueError("unknown dtype %r (known: %s)" % (name, ", ".join(ALL)))


def is_float8(name):
    return name in FLOAT8


def is_floating(name):
    return name in ("bfloat16", "float16", "float32", "float64") or name in FLOAT8


def _decode_byte(code, fmt):
    ebits, mbits, bias, has_inf = _F8_LAYOUT[fmt]
    sign = -1.0 if code & 0x80 else 1.0
    e = (code >> mbits) & ((1 << ebits) - 1)
    m = code & ((1 << mbits) - 1)
    emax = (1 << ebits) - 1
    if has_inf and e == emax:
        return sign * float("inf") if m == 0 else float("nan")
    if not has_inf and e == emax and m == (1 << mbits) - 1:
        return float("nan")  # e4m3fn: only S.1111.111 is NaN, no infinities
    if e == 0:
        return sign * (m / (1 << mbits)) * 2.0 ** (1 - bias)
    return sign * (1 + m / (1 << mbits)) * 2.0 ** (e - bias)


_TABLES = {}


def decode_table(fmt):
    """float32 value of each of the 256 codes of a float8 format."""
    if fmt not in _TABLES:
        _TABLES[fmt] = torch.tensor([_decode_byte(c, fmt) for c in range(256)], dtype=torch.float32)
    return _TABLES[fmt]


def max_finite(fmt):
    return {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0, "int8": 127.0}[fmt]


def to_float(t, fmt=None):
    """float32 values of `t`; a uint8 tensor is decoded as float8 `fmt` bytes."""
    if t.dtype == torch.uint8 and fmt in FLOAT8:
        table = decode_table(fmt).to(t.device)
        return table[t.long()]
    return t.to(torch.float32)


def _encode_float8(x, fmt):
    """Round-to-nearest-even float -> float8 codes (uint8), saturating to the largest finite."""
    dev = x.device
    vals = decode_table(fmt)[:128].to(dev)
    finite = torch.isfinite(vals)
    pos_codes = torch.arange(128, device=dev)[finite]
    pos_vals = vals[finite]  # ascending: codes are monotone in value
    x = x.detach().to(torch.float32).reshape(-1)
    a = x.abs().clamp(max=float(pos_vals[-1]))
    hi = torch.searchsorted(pos_vals, a).clamp(max=len(pos_vals) - 1)
    lo = (hi - 1).clamp(min=0)
    d_hi = (pos_vals[hi] - a).abs()
    d_lo = (a - pos_vals[lo]).abs()
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (pos_codes[hi] % 2 == 0))
    out = pos_codes[torch.where(pick_hi, hi, lo)].to(torch.uint8)
    out = torch.where(x < 0, out | 0x80, out)
    return torch.where(torch.isnan(x), torch.full_like(out, 0x7F), out)


def from_float(x, fmt):
    """Encode real values as float8 `fmt` (nearest-even, saturating) in this torch's carrier dtype."""
    if has_native_float8():
        m = max_finite(fmt)
        return x.to(torch.float32).clamp(-m, m).to(getattr(torch, fmt))
    return _encode_float8(x, fmt).reshape(x.shape)


def float8_bytes(t):
    """The raw bytes of a float8 tensor in either form, as uint8."""
    return t if t.dtype == torch.uint8 else t.view(torch.uint8)


def _cdiv(a, b):
    return -(-a // b)


def _grid_blocks(qshape, grid, block_size):
    blocks = []
    for x, s in zip(qshape, grid):
        if s < 1:
            return None
        if s == 1:
            b = max(x, 1)
        elif s == x:
            b = 1
        elif block_size and _cdiv(x, block_size) == s:
            b = block_size
        else:
            b = _cdiv(x, s)
        if _cdiv(x, b) != s:
            return None
        blocks.append(b)
    return tuple(blocks)


def scale_grid(qshape, sshape, block_size=None):
    """(grid, block) of a quantised tensor of shape `qshape` with scales of shape `sshape`.

    The grid is the scale shape padded to q's rank; block[d] is how many
    elements of q one scale covers along d. The grid comes from the ratio of
    the shapes (cdiv, so ragged tails get a partial last block); `block_size`
    (the tensorSpec's quantized.block_size) settles the ratio where a ragged
    tail makes it ambiguous. A scale of lower rank is aligned with q's leading
    dims first (per-row [M] for q [M, K]), then with its trailing dims.
    """
    qshape, sshape = tuple(qshape), tuple(sshape)
    n = len(qshape)
    cands = []
    if len(sshape) == n:
        cands.append(sshape)
    elif len(sshape) < n:
        if all(s == 1 for s in sshape):
            cands.append((1,) * n)
        cands.append(sshape + (1,) * (n - len(sshape)))
        cands.append((1,) * (n - len(sshape)) + sshape)
    for grid in cands:
        blocks = _grid_blocks(qshape, grid, block_size)
        if blocks is not None:
            return grid, blocks
    raise ValueError("scale shape %s does not tile a quantised tensor of shape %s" % (list(sshape), list(qshape)))


def expand_blocks(scale, qshape, block_size=None):
    """`scale` broadcast to one value per element of q (blocks repeated, ragged tails cropped)."""
    grid, blocks = scale_grid(tuple(qshape), tuple(scale.shape), block_size)
    s = scale.reshape(grid)
    for d, b in enumerate(blocks):
        if b > 1 and s.shape[d] > 1:
            s = s.repeat_interleave(b, dim=d).narrow(d, 0, qshape[d])
    return s.expand(tuple(qshape))


def dequantize(q, scale, fmt, block_size=None):
    """float32 real values of quantised `q` (float8 in either form, or int8): q * scale per block.

    References use this so they read exactly the bytes the submission got.
    """
    vals = to_float(q, fmt) if fmt in FLOAT8 else q.to(torch.float32)
    return vals * expand_blocks(scale.to(device=q.device, dtype=torch.float32), tuple(q.shape), block_size)
