"""Round 3 lab variant "onepass_rpp2" of layernorm (lab/layernorm/NOTES.md): "onepass_ept64"
with 2 rows per program at every H: the second row's load is issued before the first
row's reduction, so each program keeps a row in flight while it reduces and writes,
and weight and bias are loaded once per two rows.

onepass's hypothesis: the solution reduces each row twice (the mean, then the centred sum
of squares), and with 8-16 warps per row each block-wide reduction is a shared
memory round trip and barriers during which the program has nothing in flight.
Here both moments come from ONE reduction of a tuple (sum of d, sum of d*d, with
d = x - x[row, 0]: shifted data, so a large mean does not cancel the variance in
float32), halving the barriers per row; x stays in registers as loaded (read once,
16-byte accesses), the next row's load is issued before the current row's
reduction where a program has several rows. Layout as the solution's (EPT
elements per thread, RPP rows per program by H), so the difference is the
reduction alone.
"""

import torch
import triton
import triton.language as tl

EPS = 1e-5
MAX_TILE = 32768
EPT = 64  # elements per thread (sets num_warps, at most 16)
RPP_WIDE = 2  # rows per program at H >= 16384
RPP = 2  # rows per program below


@triton.jit
def _add2(a, b, c, d):
    return a + c, b + d


@triton.jit
def _layernorm(x_ptr, w_ptr, b_ptr, y_ptr, T, H, eps, BLOCK: tl.constexpr, RPP: tl.constexpr):
    row0 = tl.program_id(0).to(tl.int64) * RPP
    offs = tl.arange(0, BLOCK)
    cm = offs < H
    xn = tl.load(x_ptr + row0 * H + offs, mask=cm & (row0 < T), other=0.0)
    pn = tl.load(x_ptr + tl.minimum(row0, T - 1) * H).to(tl.float32)  # the row's shift (any row's value is safe)
    w = tl.load(w_ptr + offs, mask=cm, other=0.0)
    b = tl.load(b_ptr + offs, mask=cm, other=0.0)
    for i in tl.static_range(RPP):
        row = row0 + i
        x = xn
        p = pn
        if i + 1 < RPP:  # compile-time: the next row's loads go out before this row's reduction
            nrow = row + 1
            xn = tl.load(x_ptr + nrow * H + offs, mask=cm & (nrow < T), other=0.0)
            pn = tl.load(x_ptr + tl.minimum(nrow, T - 1) * H).to(tl.float32)
        d = tl.where(cm, x.to(tl.float32) - p, 0.0)
        s1, s2 = tl.reduce((d, d * d), 0, _add2)
        md = s1 / H
        rstd = 1.0 / tl.sqrt(tl.maximum(s2 / H - md * md, 0.0) + eps)
        y = (d - md) * rstd * w.to(tl.float32) + b.to(tl.float32)
        tl.store(y_ptr + row * H + offs, y.to(tl.bfloat16), mask=cm & (row < T))


def _eager(x, weight, bias):
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    c = xf - mean
    var = c.pow(2).mean(dim=-1, keepdim=True)
    return (c * torch.rsqrt(var + EPS) * weight.float() + bias.float()).to(torch.bfloat16)


def layernorm(x, weight, bias):
    T, H = x.shape
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    if H > MAX_TILE:
        return _eager(x, weight, bias)
    x = x.contiguous()
    block = triton.next_power_of_2(H)
    warps = max(1, min(16, block // (32 * EPT)))
    rpp = max(1, min(RPP_WIDE if H >= 16384 else RPP, T))
    _layernorm[(triton.cdiv(T, rpp),)](x, weight.contiguous(), bias.contiguous(), y, T, H, EPS,
                                        BLOCK=block, RPP=rpp, num_warps=warps)
    return y
