# LayerNorm: a CUDA C++ kernel (layernorm_kernel.cu, built by this package's build step into a
# torch extension, as the silu-and-mul solution) at the widths where the Triton solution sits 8%
# over the bandwidth ceiling (H = 8192 and 16384; taken at every H % 8 == 0 in [4096, 16384]),
# and the Triton solution itself, copied unchanged into _layernorm_triton.py, at every other
# width (H = 2048 is at the ceiling already). The kernel: a persistent grid, each CTA's next row
# loaded before the current row's reductions, 32 elements a thread held as packed bf16x2, weight
# and bias staged once a CTA in shared memory (lab/layernorm/NOTES.md, round 8).
# Tensors on the CPU take the reference's formula (_eager); no extension is loaded there.
import torch

import _ext

try:
    import triton  # noqa: F401 - only to know whether the Triton solution can load
except ImportError:  # a machine without Triton (the CPU checks): the CPU path only
    _tri = None
else:
    import _layernorm_triton as _tri

EPS = 1e-5
CUDA_MIN_H, CUDA_MAX_H = 4096, 16384  # the kernel's widths: H % 8 == 0 between these

_kernels = _ext.load() if torch.cuda.is_available() else None


def _eager(x, weight, bias):
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    c = xf - mean
    var = c.pow(2).mean(dim=-1, keepdim=True)
    return (c * torch.rsqrt(var + EPS) * weight.float() + bias.float()).to(torch.bfloat16)


def _takes(x, w, b):
    H = x.shape[1]
    return (H % 8 == 0 and CUDA_MIN_H <= H <= CUDA_MAX_H and x.dtype == torch.bfloat16
            and w.dtype == torch.bfloat16 and b.dtype == torch.bfloat16
            and all(t.data_ptr() % 16 == 0 for t in (x, w, b)))


def _device(x, weight, bias):
    """The device's path (the CPU check runs this one with CPU tensors and the kernel's CPU model)."""
    if x.numel() == 0:
        return torch.empty_like(x)
    xc, w, b = x.contiguous(), weight.contiguous(), bias.contiguous()
    if _takes(xc, w, b):
        y = torch.empty_like(xc)  # fresh: 16-byte aligned, contiguous
        _kernels.layernorm(xc, w, b, y)
        return y
    return _tri.layernorm(x, weight, bias)


def layernorm(x, weight, bias):
    if not x.is_cuda:
        return _eager(x, weight, bias)
    return _device(x, weight, bias)
