# Eager PyTorch baseline of KBench task "rmsnorm-residual" (kernel package
# h200/norm/rmsnorm/bf16/rmsnorm_residual_eager): the calls a PyTorch user makes, so that the board's
# speed-up is over PyTorch's own kernels, not over the task's float32 reference maths (task.json's
# reference, which correctness is still measured against). The judge imports rmsnorm_residual() from
# this file.
import torch
import torch.nn.functional as F

EPS = 1e-6  # fixed by the task: scalars are constants, not judge-generated inputs


def rmsnorm_residual(x, residual, weight):
    # The bf16 add computes the sum in float32 and rounds it once, which is how the task stores it.
    residual.add_(x)
    if hasattr(F, "rms_norm"):
        return F.rms_norm(residual, (residual.shape[-1],), weight, EPS)
    # torch before 2.4 (the CPU CI's 1.13) has no F.rms_norm: the formula as model code writes it
    # (Hugging Face's LlamaRMSNorm), float32 statistics, the normalised row rounded to bf16, then the
    # bf16 gain -- the same two roundings as F.rms_norm's composite form.
    h = residual.float()
    h = h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + EPS)
    return weight * h.to(residual.dtype)
