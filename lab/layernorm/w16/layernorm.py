# Lab variant `w16` of layernorm (round 7, session 23): round 6's loop3 with 2048-column tiles on 16 warps at H = 8192 (the rmsnorm config that won at 4096). Round 6's header follows.
# from the kernels torch.compile made on the H200 (session 22: 516.8 / 510.5 us at graded shapes
# 0 / 1, where the solution's registers ran 549 / 547 and the bandwidth ceiling is ~505). A program
# takes one row in tiles of R columns, three times: the sum (x kept in L2: evict_last), the
# centred sum of squares (x again, from L2), then y (x a last time, evict_first; weight and bias
# kept). HBM sees x once; a program holds one tile at a time. The maths is the solution's
# two-moment path (the mean, then the centred variance, 1 / sqrt(var + eps)); its sums are taken
# in another order.

import torch
import triton
import triton.language as tl

EPS = 1e-5
REDUCTION_ORDER = "own"  # lab/rows_cpu_check.py: held to the task's tolerance, not to bit identity
# H -> (R, num_warps): inductor's choices at graded shapes 0 and 1; at 2048 (shape 2, where the
# solution beats torch.compile) one tile a row; other widths the last line's rule.
CONFIGS = {8192: (2048, 16), 16384: (2048, 16), 2048: (2048, 4)}  # lab round 7: w16 (loop3 with 2048-column tiles at 8192)


@triton.jit
def _layernorm_loop3(x_ptr, w_ptr, b_ptr, y_ptr, H, eps, R: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * H
    offs = tl.arange(0, R)
    acc = tl.zeros([R], dtype=tl.float32)
    for c in range(0, H, R):
        m = c + offs < H
        acc += tl.load(x_ptr + base + c + offs, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
    mean = tl.sum(acc, axis=0) / H
    acc = tl.zeros([R], dtype=tl.float32)
    for c in range(0, H, R):
        m = c + offs < H
        x = tl.load(x_ptr + base + c + offs, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
        d = tl.where(m, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / H + eps)
    for c in range(0, H, R):
        m = c + offs < H
        x = tl.load(x_ptr + base + c + offs, mask=m, other=0.0, eviction_policy="evict_first").to(tl.float32)
        w = tl.load(w_ptr + c + offs, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
        b = tl.load(b_ptr + c + offs, mask=m, other=0.0, eviction_policy="evict_last").to(tl.float32)
        tl.store(y_ptr + base + c + offs, ((x - mean) * rstd * w + b).to(tl.bfloat16), mask=m)


def _eager(x, weight, bias):
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    c = xf - mean
    var = c.pow(2).mean(dim=-1, keepdim=True)
    return (c * torch.rsqrt(var + EPS) * weight.float() + bias.float()).to(torch.bfloat16)


def layernorm(x, weight, bias):
    T, H = x.shape
    y = torch.empty_like(x)
    if T == 0 or H == 0:
        return y
    if not x.is_contiguous():
        return _eager(x, weight, bias)
    R, warps = CONFIGS.get(H, (min(triton.next_power_of_2(H), 2048), 8))
    _layernorm_loop3[(T,)](x, weight.contiguous(), bias.contiguous(), y, H, EPS, R=R, num_warps=warps)
    return y
