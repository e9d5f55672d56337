# Fused residual add + RMSNorm: a CUDA C++ kernel (rmsnorm_residual_kernel.cu, built by this
# package's build step into a torch extension, as the silu-and-mul solution) at the widths where
# the Triton solution takes its one-pass kernel on a 16384-wide block and sits 2.5% over the
# bandwidth ceiling (H = 16384; taken at every H % 8 == 0 in (8192, 16384]), and the Triton
# solution itself, copied unchanged into _rmsnorm_residual_triton.py, at every other width
# (H = 4096 and 8192 are at the ceiling already). The kernel: a persistent grid, each CTA's next
# row loaded before the current row's reduction (x into registers, the residual by cp.async into
# shared memory), h = bf16(residual + x) held as packed bf16x2 and written back in place, the
# weight staged once a CTA in shared memory (lab/rmsnorm-residual/NOTES.md, round 8).
# Tensors on the CPU take the reference's formula (_eager); no extension is loaded there.
import torch

import _ext

try:
    import triton  # noqa: F401 - only to know whether the Triton solution can load
except ImportError:  # a machine without Triton (the CPU checks): the CPU path only
    _tri = None
else:
    import _rmsnorm_residual_triton as _tri

EPS = 1e-6
CUDA_MIN_H, CUDA_MAX_H = 8200, 16384  # the kernel's widths: H % 8 == 0 between these

_kernels = _ext.load() if torch.cuda.is_available() else None


def _eager(x, residual, weight):
    residual.copy_((residual.float() + x.float()).to(residual.dtype))
    h = residual.float()
    return (h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + EPS) * weight.float()).to(torch.bfloat16)


def _takes(x, residual, w):
    H = x.shape[1]
    return (H % 8 == 0 and CUDA_MIN_H <= H <= CUDA_MAX_H and x.is_contiguous() and residual.is_contiguous()
            and x.dtype == residual.dtype == w.dtype == torch.bfloat16
            and all(t.data_ptr() % 16 == 0 for t in (x, residual, w)))


def _device(x, residual, weight):
    """The device's path (the CPU check runs this one with CPU tensors and the kernel's CPU model)."""
    T, H = x.shape
    if T == 0 or H == 0:
        return torch.empty_like(x)
    w = weight.contiguous()
    if _takes(x, residual, w):
        y = torch.empty_like(x)  # fresh: 16-byte aligned, contiguous
        _kernels.rmsnorm_residual(x, residual, w, y)
        return y
    return _tri.rmsnorm_residual(x, residual, weight)


def rmsnorm_residual(x, residual, weight):
    if not x.is_cuda:
        return _eager(x, residual, weight)
    return _device(x, residual, weight)
