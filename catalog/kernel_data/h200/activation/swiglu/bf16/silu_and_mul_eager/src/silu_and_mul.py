# Eager PyTorch baseline of KBench task "silu-and-mul" (kernel package
# h200/activation/swiglu/bf16/silu_and_mul_eager): what a PyTorch user writes (and vLLM's native
# SiluAndMul), so that the board's speed-up is over PyTorch's own kernels, not over the task's float32
# reference maths (task.json's reference, which correctness is still measured against). The judge
# imports silu_and_mul() from this file.
import torch.nn.functional as F


def silu_and_mul(x):
    # Two bf16 kernels, silu then the product, each rounding to bf16 where the reference rounds once:
    # 3.5e-3 relative error at the graded shapes, a third of the task's 1e-2. At the smallest
    # correctness shape (3 x 7, 21 values) about 3 input draws in 100,000 exceed 1e-2 (measured on the
    # CPU, which rounds as the GPU does); the form stays, because it is what the board must time.
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]
