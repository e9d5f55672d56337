# Lab variant `loop2` of rmsnorm-residual (lab/rmsnorm-residual/NOTES.md, "Round 6"): inductor's
# design, read from the kernels torch.compile made on the H200 (session 22), which run within 1%
# of the bandwidth ceiling where the solution is 4% over it. A program takes one row in tiles of R
# columns, twice: pass 1 loads x and the residual (kept in L2: evict_last) and sums the squares
# of their bf16 sum; pass 2 loads them again, from L2 (evict_first: done with them), and writes
# the residual and y. HBM still sees each byte once; a program holds one tile at a time, so
# registers do not bound how many programs an SM runs. The maths is the solution's (the sum
# rounded to bf16 first, 1 / sqrt(mean + eps)); the sum of squares is taken in another order.

import torch
import triton
import triton.language as tl

EPS = 1e-6
REDUCTION_ORDER = "own"  # lab/rows_cpu_check.py: held to the task's tolerance, not to bit identity
# H -> (R, num_warps): inductor's choices at the graded widths, one row a program (its XBLOCK rows
# of a tile folded into R); other widths the last line's rule.
CONFIGS = {4096: (2048, 16), 8192: (1024, 2), 16384: (4096, 16)}


@triton.jit
def _rmsnorm_loop2(x_ptr, r_ptr, w_ptr, y_ptr, H, eps, R: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * H
    offs = tl.arange(0, R)
    acc = tl.zeros([R], dtype=tl.float32)
    for c in range(0, H, R):
        m = c + offs < H
        x = tl.load(x_ptr + base + c + offs, mask=m, other=0.0, eviction_policy="evict_last")
        r = tl.load(r_ptr + base + c + offs, mask=m, other=0.0, eviction_policy="evict_last")
        h = (r.to(tl.float32) + x.to(tl.float32)).to(tl.bfloat16).to(tl.float32)
        acc += h * h
    inv = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / H + eps)
    for c in range(0, H, R):
        m = c + offs < H
        x = tl.load(x_ptr + base + c + offs, mask=m, other=0.0, eviction_policy="evict_first")
        r = tl.load(r_ptr + base + c + offs, mask=m, other=0.0, eviction_policy="evict_first")
        w = tl.load(w_ptr + c + offs, mask=m, other=0.0, eviction_policy="evict_last")
        h = (r.to(tl.float32) + x.to(tl.float32)).to(tl.bfloat16)
        tl.store(r_ptr + base + c + offs, h, mask=m)  # this tile's residual is read above, before
        tl.store(y_ptr + base + c + offs, (h.to(tl.float32) * inv * w.to(tl.float32)).to(tl.bfloat16), mask=m)


def _eager(x, residual, weight):
    residual.copy_((residual.float() + x.float()).to(residual.dtype))
    h = residual.float()
    return (h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + EPS) * weight.float()).to(torch.bfloat16)


def rmsnorm_residual(x, residual, weight):
    T, H = x.shape
    y = torch.empty_like(x)
    if T == 0 or H == 0:
        return y
    if not (x.is_contiguous() and residual.is_contiguous()):
        return _eager(x, residual, weight)
    R, warps = CONFIGS.get(H, (min(triton.next_power_of_2(H), 2048), 8))
    _rmsnorm_loop2[(T,)](x, residual, weight.contiguous(), y, H, EPS, R=R, num_warps=warps)
    return y
