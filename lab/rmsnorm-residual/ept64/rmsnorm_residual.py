"""Round 3 lab variant "ept64" of rmsnorm_residual (lab/rmsnorm-residual/NOTES.md).

Hypothesis: with 64 elements per thread (8 x 16-byte loads per lane per tensor) a row
takes half the warps (H=4096: 2, 8192: 4, 16384: 8): the block reduction spans fewer
warps, the per-program fixed registers are amortised over twice the bytes, and more
programs share an SM, so more bytes are in flight per SM. No hints.
"""

import torch
import triton
import triton.language as tl

EPS = 1e-6
MAX_TILE = 32768
EPT = 64  # elements per thread (sets num_warps, at most 16)


@triton.jit
def _rmsnorm_residual(x_ptr, r_ptr, w_ptr, y_ptr, T, H, eps, BLOCK: tl.constexpr):
    # One row per program, held in registers (16-byte accesses): the task's four
    # passes over HBM (x and the residual read, the residual and y written) and no more.
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    cm = offs < H
    x = tl.load(x_ptr + row * H + offs, mask=cm, other=0.0)
    r = tl.load(r_ptr + row * H + offs, mask=cm, other=0.0)
    w = tl.load(w_ptr + offs, mask=cm, other=0.0)
    h = (r.to(tl.float32) + x.to(tl.float32)).to(tl.bfloat16)  # the residual exactly as stored
    tl.store(r_ptr + row * H + offs, h, mask=cm)
    hf = h.to(tl.float32)
    inv = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=0) / H + eps)
    tl.store(y_ptr + row * H + offs, (hf * inv * w.to(tl.float32)).to(tl.bfloat16), mask=cm)


def _eager(x, residual, weight):
    # Rows wider than one tile (none of the task's shapes): the plain formula.
    residual.copy_((residual.float() + x.float()).to(residual.dtype))
    h = residual.float()
    return (h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + EPS) * weight.float()).to(torch.bfloat16)


def rmsnorm_residual(x, residual, weight):
    T, H = x.shape
    y = torch.empty_like(x)
    if T == 0 or H == 0:
        return y
    if H > MAX_TILE or not (x.is_contiguous() and residual.is_contiguous()):
        return _eager(x, residual, weight)
    block = triton.next_power_of_2(H)
    warps = max(1, min(16, block // (32 * EPT)))
    _rmsnorm_residual[(T,)](x, residual, weight.contiguous(), y, T, H, EPS, BLOCK=block, num_warps=warps)
    return y
