import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_residual(x_ptr, res_ptr, w_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """out = rmsnorm(x + res) * w; res is overwritten with x + res (the next layer's residual)."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    r = tl.load(res_ptr + row * n_cols + cols, mask=mask, other=0.0).to(tl.float32)
    h = x + r
    tl.store(res_ptr + row * n_cols + cols, h.to(res_ptr.dtype.element_ty), mask=mask)
    ms = tl.sum(h * h, axis=0) / n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * n_cols + cols, (h * tl.rsqrt(ms + eps) * w).to(out_ptr.dtype.element_ty), mask=mask)


def rmsnorm_residual(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6):
    assert x.shape == residual.shape and x.is_contiguous() and residual.is_contiguous()
    n_cols = x.shape[-1]
    rows = x.numel() // n_cols
    out = torch.empty_like(x)
    block = triton.next_power_of_2(n_cols)
    _rmsnorm_residual[(rows,)](x, residual, weight, out, n_cols, eps, BLOCK=block, num_warps=min(16, max(4, block // 1024)))
    return out
