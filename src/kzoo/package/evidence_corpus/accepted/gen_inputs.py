"""Test inputs, generated deterministically at run time (never stored)."""
import torch


def make_inputs(rows: int, cols: int, dtype=torch.bfloat16, seed: int = 0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(rows, cols, generator=g, device="cuda", dtype=torch.float32) * 3.0
    # a few rows of extremes: all equal, one huge value, -inf padding
    x[0].fill_(1.0)
    x[1, 7] = 1e4
    x[2, cols // 2 :] = float("-inf")
    return x.to(dtype)
