"""The RMSNorm that ignores the fused residual, for measuring D.

It normalises x alone and leaves residual untouched: a correct RMSNorm that
skips the task's distinguishing feature (residual += x in place). Both
outputs -- y and the updated residual -- come out wrong.
"""
import torch

EPS = 1e-6


def drop(x, residual, weight):
    h = x.float()
    y = (h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + EPS) * weight.float()).to(torch.bfloat16)
    return y
