"""The silu-and-mul with its halves swapped, for measuring D.

silu(b) * a instead of silu(a) * b: the same operations on the same bytes,
only the gate/up convention -- the layout the task fixes -- is wrong.
"""
import torch


def drop(x):
    d = x.shape[-1] // 2
    a = x[..., :d].float()
    b = x[..., d:].float()
    return (b * torch.sigmoid(b) * a).to(torch.bfloat16)
