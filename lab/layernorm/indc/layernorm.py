# Lab variant `indc` of layernorm (lab/layernorm/NOTES.md, "Round 9"): torch.compile's kernel as
# inductor writes it, the row width a compile-time constant. Round 6's loop3 had inductor's design
# and tiles (three passes over the row, the second and third served by L2) but took H at run time,
# and lost 20-30% where inductor's own kernel won 6% (673 against 517 us at H = 8192). Two things
# differed from inductor's, and this variant takes both: (1) H and R are constants, as inductor emits
# `rnumel`, so a loop of one tile (H = R = 8192) is no loop at all and the masks are known true;
# (2) the launch asks for one stage (inductor's reduction configs set num_stages=1), where loop3 ran
# Triton's default of 3, which lets the pipeliner stage each pass's loads through shared memory and
# costs occupancy. At H = 16384 the loop has 8 tiles of 2048 (inductor's choice there); at every
# other width the solution's kernels. Beside w16r it tells the warps from the rest.

import importlib.util
import os

import torch
import triton
import triton.language as tl

REDUCTION_ORDER = "own"  # lab/rows_cpu_check.py: held to the task's tolerance, not to bit identity
EPS = 1e-5
# H -> (R, num_warps): torch.compile's autotuned tiles on the H200 (session 22) at graded shapes 0 and 1.
CONFIGS = {8192: (8192, 16), 16384: (2048, 16)}

_SOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "catalog", "solutions", "gpu",
                    "h200", "norm", "layernorm", "bf16", "layernorm_eager", "src", "layernorm.py")
_spec = importlib.util.spec_from_file_location("layernorm_solution_for_indc", _SOL)
solution = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(solution)


@triton.jit
def _layernorm_indc(x_ptr, w_ptr, b_ptr, y_ptr, eps, H: tl.constexpr, R: tl.constexpr):
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


def layernorm(x, weight, bias):
    T, H = x.shape
    if H not in CONFIGS or T == 0 or not x.is_contiguous():
        return solution.layernorm(x, weight, bias)
    R, warps = CONFIGS[H]
    y = torch.empty_like(x)
    _layernorm_indc[(T,)](x, weight.contiguous(), bias.contiguous(), y, EPS, H=H, R=R, num_warps=warps, num_stages=1)
    return y
