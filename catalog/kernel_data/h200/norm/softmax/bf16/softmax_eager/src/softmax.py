# Eager PyTorch baseline of KBench task "softmax" (kernel package h200/norm/softmax/bf16/softmax_eager):
# the call a PyTorch user makes, so that the board's speed-up is over PyTorch's own kernel, not over the
# task's float32 reference maths (task.json's reference, which correctness is still measured against).
# The judge imports softmax() from this file.
import torch


def softmax(x):
    # One fused kernel on the bf16 tensor: float32 max and sum inside, one rounding to bf16.
    return torch.softmax(x, dim=-1)
