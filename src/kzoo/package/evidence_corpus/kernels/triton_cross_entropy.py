"""Fused cross-entropy over a large vocabulary: logsumexp and the target logit in one pass per row."""
import torch
import triton
import triton.language as tl


@triton.jit
def _ce_fwd(logits_ptr, target_ptr, loss_ptr, lse_ptr, vocab, stride, ignore_index, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    target = tl.load(target_ptr + row)
    base = logits_ptr + row * stride
    m = -float("inf")
    s = 0.0
    for start in range(0, vocab, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(base + cols, mask=cols < vocab, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    tl.store(lse_ptr + row, lse)
    x_t = tl.load(base + target).to(tl.float32)
    loss = tl.where(target == ignore_index, 0.0, lse - x_t)
    tl.store(loss_ptr + row, loss)


def cross_entropy(logits: torch.Tensor, target: torch.Tensor, ignore_index: int = -100) -> torch.Tensor:
    n, vocab = logits.shape
    loss = torch.empty(n, device=logits.device, dtype=torch.float32)
    lse = torch.empty_like(loss)
    _ce_fwd[(n,)](logits, target, loss, lse, vocab, logits.stride(0), ignore_index, BLOCK=4096, num_warps=8)
    valid = (target != ignore_index).sum().clamp(min=1)
    return loss.sum() / valid
