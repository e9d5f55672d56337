# Per-token cross-entropy in Triton: one program per row streams the logits once
# with an online log-sum-exp (one exponential per element: the running sum is
# rescaled once per tile, not per element) and picks up the label's logit with a
# single load. The [T, V] log-probabilities never exist.

import torch
import triton
import triton.language as tl


@triton.jit
def _cross_entropy(logits_ptr, labels_ptr, loss_ptr, V, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * V
    m = float("-inf")
    s = 0.0
    for start in range(0, V, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(base + offs, mask=offs < V, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    label = tl.load(labels_ptr + row)
    picked = tl.load(base + label).to(tl.float32)
    tl.store(loss_ptr + row, m + tl.log(s) - picked)


def cross_entropy(logits, labels):
    T, V = logits.shape
    loss = torch.empty(T, dtype=torch.float32, device=logits.device)
    if T == 0:
        return loss
    block = min(4096, triton.next_power_of_2(V))
    warps = max(1, min(8, block // 512))
    _cross_entropy[(T,)](logits.contiguous(), labels.contiguous(), loss, V, BLOCK=block, num_warps=warps)
    return loss
