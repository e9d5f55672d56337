# Fused residual add + RMSNorm in Triton: one program per row reads x and the
# residual once (16-byte loads; the weight loaded first, so its L2 latency
# overlaps the row's HBM read), writes the bf16 sum back into the residual and y
# once -- the task's four passes over HBM and nothing more.

import torch
import triton
import triton.language as tl

EPS = 1e-6
MAX_TILE = 32768
EPT = 8  # elements per thread


@triton.jit
def _rmsnorm_residual(x_ptr, r_ptr, w_ptr, y_ptr, H, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < H
    w = tl.load(w_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_last")
    x = tl.load(x_ptr + row * H + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    r = tl.load(r_ptr + row * H + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
    h = (r + x).to(tl.bfloat16)  # the residual exactly as stored
    tl.store(r_ptr + row * H + offs, h, mask=mask)
    hf = h.to(tl.float32)
    inv = 1.0 / tl.sqrt(tl.sum(hf * hf, axis=0) / H + eps)
    tl.store(y_ptr + row * H + offs, (hf * inv * w.to(tl.float32)).to(tl.bfloat16), mask=mask)


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
    _rmsnorm_residual[(T,)](x, residual, weight.contiguous(), y, H, EPS, BLOCK=block, num_warps=warps)
    return y
