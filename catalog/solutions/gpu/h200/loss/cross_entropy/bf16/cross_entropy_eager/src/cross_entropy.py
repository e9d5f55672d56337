# Per-token cross-entropy in Triton: one program per row streams the logits once
# (16-byte loads, the next tile's load issued before the current tile is used)
# with an online log-sum-exp in base 2. The tile is viewed as [BLOCK/8, 8]: each
# thread keeps a running max and sum per 8-element vector it owns, so a tile
# costs one exponential per element plus one per vector and no cross-thread
# reduction; the vectors are combined once at the end. The label's logit is a
# single load. The [T, V] log-probabilities never exist.

import torch
import triton
import triton.language as tl

BLOCK = 8192
WARPS = 8
VEC = 8
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453


@triton.jit
def _cross_entropy(logits_ptr, labels_ptr, loss_ptr, V, BLOCK: tl.constexpr, VEC: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    base = logits_ptr + row * V
    R: tl.constexpr = BLOCK // VEC
    offs = tl.arange(0, R)[:, None] * VEC + tl.arange(0, VEC)[None, :]
    m_acc = tl.full([R], float("-inf"), tl.float32)
    s_acc = tl.zeros([R], tl.float32)
    xn = tl.load(base + offs, mask=offs < V, other=float("-inf"))
    for start in range(0, V, BLOCK):
        xc = xn
        on = start + BLOCK + offs
        xn = tl.load(base + on, mask=on < V, other=float("-inf"))
        x = xc.to(tl.float32) * 1.4426950408889634
        m_new = tl.maximum(m_acc, tl.max(x, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s_acc = s_acc * tl.exp2(m_acc - m_safe) + tl.sum(tl.exp2(x - m_safe[:, None]), axis=1)
        m_acc = m_new
    m = tl.max(m_acc, axis=0)
    s = tl.sum(s_acc * tl.exp2(m_acc - m), axis=0)
    label = tl.load(labels_ptr + row)
    picked = tl.load(base + label).to(tl.float32)
    tl.store(loss_ptr + row, (m + tl.log2(s)) * 0.6931471805599453 - picked)


def cross_entropy(logits, labels):
    T, V = logits.shape
    loss = torch.empty(T, dtype=torch.float32, device=logits.device)
    if T == 0:
        return loss
    block = max(VEC * 32, min(BLOCK, triton.next_power_of_2(V)))
    warps = max(1, min(WARPS, block // (VEC * 32 * 2)))
    _cross_entropy[(T,)](logits.contiguous(), labels.contiguous(), loss, V, BLOCK=block, VEC=VEC, num_warps=warps)
    return loss
