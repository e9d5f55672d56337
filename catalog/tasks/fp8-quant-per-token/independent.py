"""An independent correct per-token fp8 quantisation, for the error floor E.

float64 for the scale and the division (rounded to float32 where the task
stores a float32), |x|'s maximum from torch.max over the negated and plain
values rather than abs().amax(), and the e4m3fn rounding through the judge's
own encoder (kzoo_judge.dtypes, a search over the format's value table)
rather than the reference's bit-field arithmetic or torch's cast.
"""
import torch

from kzoo_judge import dtypes

FP8_MAX = 448.0
MIN_SCALE = 1.0 / (FP8_MAX * 512.0)


def independent(x):
    xd = x.double()
    amax = torch.maximum(xd.max(dim=-1, keepdim=True).values, (-xd).max(dim=-1, keepdim=True).values)
    scale = torch.clamp((amax / FP8_MAX).float(), min=MIN_SCALE)
    q = (xd / scale.double()).float()
    return dtypes.from_float(q, "float8_e4m3fn"), scale
