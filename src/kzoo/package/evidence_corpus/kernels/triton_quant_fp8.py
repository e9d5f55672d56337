"""Per-token-group FP8 quantisation: each group of 128 values gets its own scale."""
import torch
import triton
import triton.language as tl

FP8_MAX = 448.0  # largest finite float8_e4m3fn


@triton.jit
def _quant_group(x_ptr, q_ptr, s_ptr, n_groups, GROUP: tl.constexpr, FMAX: tl.constexpr):
    g = tl.program_id(0)
    offs = g * GROUP + tl.arange(0, GROUP)
    x = tl.load(x_ptr + offs).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(x), axis=0), 1e-10)
    scale = amax / FMAX
    tl.store(q_ptr + offs, (x / scale).to(q_ptr.dtype.element_ty))
    tl.store(s_ptr + g, scale)


def quant_fp8(x: torch.Tensor, group: int = 128):
    assert x.shape[-1] % group == 0
    q = torch.empty_like(x, dtype=torch.float8_e4m3fn)
    n_groups = x.numel() // group
    s = torch.empty(x.shape[:-1] + (x.shape[-1] // group,), device=x.device, dtype=torch.float32)
    _quant_group[(n_groups,)](x, q, s, n_groups, GROUP=group, FMAX=FP8_MAX)
    return q, s
