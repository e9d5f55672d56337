# CPU solution: the residual added in place in bf16 (torch rounds the float sum
# once, as the task stores it), then RMSNorm with in-place float32 temporaries.
import torch

EPS = 1e-6


def rmsnorm_residual(x, residual, weight):
    residual.add_(x)
    h = residual.float()
    inv = h.square().mean(dim=-1, keepdim=True).add_(EPS).rsqrt_()
    return h.mul_(inv).mul_(weight.float()).to(torch.bfloat16)
