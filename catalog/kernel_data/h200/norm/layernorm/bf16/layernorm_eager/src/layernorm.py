# Eager PyTorch baseline of KBench task "layernorm" (kernel package h200/norm/layernorm/bf16/layernorm_eager):
# the call a PyTorch user makes, so that the board's speed-up is over PyTorch's own kernel, not over the
# task's float32 reference maths (task.json's reference, which correctness is still measured against).
# The judge imports layernorm() from this file.
import torch
import torch.nn.functional as F

EPS = 1e-5  # fixed by the task: scalars are constants, not judge-generated inputs


def layernorm(x, weight, bias):
    H = x.shape[-1]
    if x.is_cuda:
        # PyTorch's fused LayerNorm on the bf16 tensors: float32 mean and (biased) variance, one
        # rounding to bf16.
        return F.layer_norm(x, (H,), weight, bias, EPS)
    # The CPU LayerNorm of torch 1.13 (the CPU CI's) centres bf16 rows with a rounded mean: a row of one
    # value comes out up to 0.36 off instead of equal to the bias. The same call on the float32 upcast
    # is exact.
    return F.layer_norm(x.float(), (H,), weight.float(), bias.float(), EPS).to(x.dtype)
