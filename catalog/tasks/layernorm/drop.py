"""The LayerNorm that ignores its shift, for measuring D.

A correct normalisation and gain that never adds `bias`: the output is off
by the bias vector in every row, the mistake of a kernel that drops the
affine map's second operand.
"""
import torch

EPS = 1e-5


def drop(x, weight, bias):
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    var = (xf - mean).pow(2).mean(dim=-1, keepdim=True)
    return ((xf - mean) * torch.rsqrt(var + EPS) * weight.float()).to(torch.bfloat16)
