"""The fp8 quantisation with its scale applied the wrong way, for measuring D.

q = x * scale instead of x / scale: the convention of a kernel written for
an inverted scale (1 / scale stored), the commonest fp8 scaling bug. The
scale itself is right; every row of q is not.
"""
import torch

from kzoo_judge import dtypes

FP8_MAX = 448.0
MIN_SCALE = 1.0 / (FP8_MAX * 512.0)


def drop(x):
    xf = x.float()
    scale = torch.clamp(xf.abs().amax(dim=-1, keepdim=True) / FP8_MAX, min=MIN_SCALE)
    q = torch.clamp(xf * scale, -FP8_MAX, FP8_MAX)
    return dtypes.from_float(q, "float8_e4m3fn"), scale
