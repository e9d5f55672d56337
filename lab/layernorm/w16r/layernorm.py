# Lab variant `w16r` of layernorm (lab/layernorm/NOTES.md, "Round 9"): at H = 8192 the solution's
# two-moment kernel (`_layernorm`: the row in registers, the mean, then the centred sum of squares)
# on 16 warps, 16 elements a thread, where the solution runs its one-pass kernel on 4 warps, 64 a
# thread. torch.compile's kernel at this width is a one-row program on 16 warps (517 us against the
# solution's 549); no round has timed the in-register kernel at that many warps (round 3: 32 a
# thread 562 us, 64 a thread 550). Beside indc it tells the warps from the compile-time width.
# Every other width: the solution.

import importlib.util
import os

import torch

REDUCTION_ORDER = "own"  # the solution's one-pass kernel sums otherwise at this width

_SOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "catalog", "solutions", "gpu",
                    "h200", "norm", "layernorm", "bf16", "layernorm_eager", "src", "layernorm.py")
_spec = importlib.util.spec_from_file_location("layernorm_solution_for_w16r", _SOL)
solution = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(solution)

WIDTH, WARPS = 8192, 16


def layernorm(x, weight, bias):
    T, H = x.shape
    if H != WIDTH or T == 0 or not x.is_contiguous():
        return solution.layernorm(x, weight, bias)
    y = torch.empty_like(x)
    solution._layernorm[(T,)](x, weight.contiguous(), bias.contiguous(), y, T, H, solution.EPS,
                              BLOCK=WIDTH, RPP=1, num_warps=WARPS)
    return y
