"""Round 4 lab variant "pick" of layernorm (lab/layernorm/NOTES.md): per width, the kernel
and layout that won that graded shape in round 3 (H200, us at shapes 0/1/2 = H 8192 /
16384 / 2048; solution 562/594/511, onepass 655/597/561, onepass_ept64 550/795/747,
onepass_rpp2 597/690/586):
- H in (4096, 8192] (shape 0): onepass_ept64 (one tuple reduction of the shifted moments,
  64 elements per thread, 4 warps, one row per program): 550 us;
- otherwise the solution (mean, then the centred sum of squares; 32 elements per thread;
  4 rows per program at H >= 16384 with the next row's load issued first): 594 / 511 us.
Hypothesis: the round-3 winners compose (expected 550 / 594 / 511). The maths at each
width is the winning kernel's, unchanged (emulate.py checks both).
"""

import torch
import triton
import triton.language as tl

EPS = 1e-5
MAX_TILE = 32768
EPT = 32  # the solution's elements per thread (sets num_warps, at most 16)
RPP = 4  # the solution's rows per program at H >= 16384; 1 below
EPT_1P = 64  # onepass_ept64's, used at 4096 < H <= 8192


@triton.jit
def _layernorm(x_ptr, w_ptr, b_ptr, y_ptr, T, H, eps, BLOCK: tl.constexpr, RPP: tl.constexpr):
    row0 = tl.program_id(0).to(tl.int64) * RPP
    offs = tl.arange(0, BLOCK)
    cm = offs < H
    xn = tl.load(x_ptr + row0 * H + offs, mask=cm & (row0 < T), other=0.0)
    w = tl.load(w_ptr + offs, mask=cm, other=0.0)
    b = tl.load(b_ptr + offs, mask=cm, other=0.0)
    for i in range(RPP):
        row = row0 + i
        x = xn.to(tl.float32)
        nrow = row + 1
        xn = tl.load(x_ptr + nrow * H + offs, mask=cm & (nrow < T) & (i + 1 < RPP), other=0.0)
        mean = tl.sum(x, axis=0) / H
        c = tl.where(cm, x - mean, 0.0)
        rstd = 1.0 / tl.sqrt(tl.sum(c * c, axis=0) / H + eps)
        y = c * rstd * w.to(tl.float32) + b.to(tl.float32)
        tl.store(y_ptr + row * H + offs, y.to(tl.bfloat16), mask=cm & (row < T))


@triton.jit
def _add2(a, b, c, d):
    return a + c, b + d


@triton.jit
def _layernorm_1p(x_ptr, w_ptr, b_ptr, y_ptr, T, H, eps, BLOCK: tl.constexpr, RPP: tl.constexpr):
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
    w = weight.contiguous()
    b = bias.contiguous()
    block = triton.next_power_of_2(H)
    if block == 8192:  # onepass_ept64 (round 3: 550 us at 65536 x 8192 against the solution's 562)
        warps = max(1, min(16, block // (32 * EPT_1P)))
        _layernorm_1p[(T,)](x, w, b, y, T, H, EPS, BLOCK=block, RPP=1, num_warps=warps)
        return y
    warps = max(1, min(16, block // (32 * EPT)))
    rpp = max(1, min(RPP if H >= 16384 else 1, T))
    _layernorm[(triton.cdiv(T, rpp),)](x, w, b, y, T, H, EPS, BLOCK=block, RPP=rpp, num_warps=warps)
    return y
