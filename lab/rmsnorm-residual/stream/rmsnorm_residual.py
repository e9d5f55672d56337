"""Round 3 lab variant "stream" of rmsnorm_residual (lab/rmsnorm-residual/NOTES.md).

Hypothesis: the solution (EPT 32, one row per program, 85% of the roofline) loses
bandwidth to L2 thrashing between its four streams (2 GiB through a 60 MB L2) and to
write-backs competing with the reads; Streaming hints: x and the residual are read once (eviction_policy="evict_first"),
the weight is reused by every row ("evict_last"), and the residual and y are written
once with st.global.cs (cache_modifier=".cs", evict-first in L2).
Layout as the solution's, so the hints alone differ.
"""

import torch
import triton
import triton.language as tl

EPS = 1e-6
MAX_TILE = 32768
EPT = 32  # elements per thread (sets num_warps, at most 16)


@triton.jit
def _rmsnorm_residual(x_ptr, r_ptr, w_ptr, y_ptr, T, H, eps, BLOCK: tl.constexpr):
    # One row per program, held in registers (16-byte accesses): the task's four
    # passes over HBM (x and the residual read, the residual and y written) and no more.
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    cm = offs < H
    x = tl.load(x_ptr + row * H + offs, mask=cm, other=0.0, eviction_policy="evict_first")
    r = tl.load(r_ptr + row * H + offs, mask=cm, other=0.0, eviction_policy="evict_first")
    w = tl.load(w_ptr + offs, mask=cm, other=0.0, eviction_policy="evict_last")
    h = (r.to(tl.float32) + x.to(tl.float32)).to(tl.bfloat16)  # the residual exactly as stored
    tl.store(r_ptr + row * H + offs, h, mask=cm, cache_modifier=".cs")
    hf = h.to(tl.float32)
    inv = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=0) / H + eps)
    tl.store(y_ptr + row * H + offs, (hf * inv * w.to(tl.float32)).to(tl.bfloat16), mask=cm, cache_modifier=".cs")


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
