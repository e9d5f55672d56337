# Lab variant `c2k` of rmsnorm-residual (lab/rmsnorm-residual/NOTES.md, "Round 9 on the H200"): at
# H = 16384 the solution's two-pass kernel with the width a compile-time constant, at one pipeline
# stage, on 2048-column tiles and 16 warps: layernorm's `indc` in this form ran 508 us against 547
# there. `ns1` (one stage, the width at run time) lost 12%, so the constant width is what it tests.
# `c4k` is the same on 4096-column tiles (inductor's choice for this task). Other widths: the solution.

import importlib.util
import os

import torch
import triton
import triton.language as tl

_SOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "catalog", "solutions", "gpu",
                    "h200", "norm", "rmsnorm", "bf16", "rmsnorm_residual_eager", "src", "rmsnorm_residual.py")
_spec = importlib.util.spec_from_file_location("rmsnorm_residual_solution_for_" + os.path.basename(os.path.dirname(
    os.path.abspath(__file__))), _SOL)
solution = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(solution)

REDUCTION_ORDER = "own"
WIDTH, R, WARPS = 16384, 2048, 16


@triton.jit
def _rms_loop_c(x_ptr, r_ptr, w_ptr, y_ptr, eps, H: tl.constexpr, R: tl.constexpr):
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
        tl.store(r_ptr + base + c + offs, h, mask=m)
        tl.store(y_ptr + base + c + offs, (h.to(tl.float32) * inv * w.to(tl.float32)).to(tl.bfloat16), mask=m)


def rmsnorm_residual(x, residual, weight):
    T, H = x.shape
    if H != WIDTH or T == 0 or not (x.is_contiguous() and residual.is_contiguous()):
        return solution.rmsnorm_residual(x, residual, weight)
    y = torch.empty_like(x)
    _rms_loop_c[(T,)](x, residual, weight.contiguous(), y, solution.EPS, H=H, R=R, num_warps=WARPS, num_stages=1)
    return y
