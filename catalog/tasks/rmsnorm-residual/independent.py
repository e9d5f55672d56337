"""An independent correct fused residual-add + RMSNorm, for the error floor E.

float64, and the RMS through a vector norm (||h|| / sqrt(H)) instead of the
reference's mean of squares; the residual is still rounded to its bf16 storage
before normalising, because that rounding is part of the task's definition.
"""
import math

import torch

EPS = 1e-6


def independent(x, residual, weight):
    h = (residual.double() + x.double()).to(residual.dtype)
    residual.copy_(h)
    hd = h.double()
    rms = torch.sqrt((torch.linalg.vector_norm(hd, dim=-1, keepdim=True) / math.sqrt(hd.shape[-1])) ** 2 + EPS)
    y = (hd / rms * weight.double()).to(torch.bfloat16)
    return y
