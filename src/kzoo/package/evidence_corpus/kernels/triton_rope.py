import torch
import triton
import triton.language as tl


@triton.jit
def _rope(q_ptr, cos_ptr, sin_ptr, seq_len, n_heads, stride_t, stride_h, HALF: tl.constexpr):
    t = tl.program_id(0)
    h = tl.program_id(1)
    offs = tl.arange(0, HALF)
    base = q_ptr + t * stride_t + h * stride_h
    x1 = tl.load(base + offs).to(tl.float32)
    x2 = tl.load(base + HALF + offs).to(tl.float32)
    c = tl.load(cos_ptr + t * HALF + offs)
    s = tl.load(sin_ptr + t * HALF + offs)
    tl.store(base + offs, (x1 * c - x2 * s).to(q_ptr.dtype.element_ty))
    tl.store(base + HALF + offs, (x1 * s + x2 * c).to(q_ptr.dtype.element_ty))


def apply_rope(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """In place on q of shape (tokens, heads, head_dim); cos/sin of shape (tokens, head_dim // 2)."""
    tokens, heads, dim = q.shape
    _rope[(tokens, heads)](q, cos, sin, tokens, heads, q.stride(0), q.stride(1), HALF=dim // 2)
    return q
