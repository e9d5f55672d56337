# Lab variant `ns1` of rmsnorm-residual (lab/rmsnorm-residual/NOTES.md, "Round 9"): the solution's
# two-pass kernel (inductor's design, `_rmsnorm_residual_loop`) launched with one pipeline stage, as
# inductor launches its reductions (num_stages=1), where the solution runs Triton's default of 3:
# the pipeliner may stage each pass's loads through shared memory, which costs occupancy and buys
# nothing when the second pass reads L2. At H = 4096 and 8192 the solution's tiles; at 16384
# inductor's (4096 columns, 16 warps), which lost 17% at three stages (round 7). Every other width:
# the solution. Layernorm's round 9 (indc) tests the same launch.

import importlib.util
import os

import torch

_SOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "catalog", "solutions", "gpu",
                    "h200", "norm", "rmsnorm", "bf16", "rmsnorm_residual_eager", "src", "rmsnorm_residual.py")
_spec = importlib.util.spec_from_file_location("rmsnorm_residual_solution_for_ns1", _SOL)
solution = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(solution)

REDUCTION_ORDER = "own"  # at 16384 the solution sums in one pass
LOOP = {**solution.LOOP, 16384: (4096, 16)}  # H -> (R, num_warps)


def rmsnorm_residual(x, residual, weight):
    T, H = x.shape
    if H not in LOOP or T == 0 or not (x.is_contiguous() and residual.is_contiguous()):
        return solution.rmsnorm_residual(x, residual, weight)
    R, warps = LOOP[H]
    y = torch.empty_like(x)
    solution._rmsnorm_residual_loop[(T,)](x, residual, weight.contiguous(), y, H, solution.EPS, R=R,
                                          num_warps=warps, num_stages=1)
    return y
