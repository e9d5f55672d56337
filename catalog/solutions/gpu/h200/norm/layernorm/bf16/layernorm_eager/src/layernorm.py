# LayerNorm as a CUDA C++ kernel (layernorm_kernel.cu), built by this package's
# build step into a torch extension: one thread block per row, the row held in
# registers as 16-byte vectors, both moments from registers (mean, then the
# centred sum of squares: no cancellation), warp-shuffle block reductions, and
# y written with 16-byte stores. x is read once and y written once.
import torch

import _ext

_kernels = _ext.load()


def layernorm(x, weight, bias):
    y = torch.empty_like(x)
    if x.numel() == 0:
        return y
    _kernels.layernorm(x.contiguous(), weight.contiguous(), bias.contiguous(), y, 1e-5)
    return y
