"""Reference implementations in plain PyTorch, in float64 where precision matters."""
import torch
import torch.nn.functional as F


def softmax_ref(x: torch.Tensor) -> torch.Tensor:
    x64 = x.double()
    return (x64 - x64.amax(-1, keepdim=True)).exp().div_((x64 - x64.amax(-1, keepdim=True)).exp().sum(-1, keepdim=True)).to(x.dtype)


def rmsnorm_residual_ref(x, residual, weight, eps: float = 1e-6):
    h = x.double() + residual.double()
    y = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps) * weight.double()
    return y.to(x.dtype), h.to(x.dtype)


def fp8_blockscale_gemm_ref(a, a_scale, b, b_scale, group: int = 128):
    a32 = a.float() * a_scale.repeat_interleave(group, dim=-1)[..., : a.shape[-1]]
    b32 = b.float() * b_scale.repeat_interleave(group, 0).repeat_interleave(group, 1)[: b.shape[0], : b.shape[1]]
    return (a32 @ b32.t()).to(torch.bfloat16)


def attention_ref(q, k, v, causal: bool = True):
    return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal).to(q.dtype)
