# NeoX rotary embedding in Triton, in place: one program per token reads its
# cos/sin row once and rotates every head of q and then of k, a block of heads
# at a time -- q and k are read and written exactly once.

import torch
import triton
import triton.language as tl


@triton.jit
def _rope_heads(x_ptr, t, NH, HALF, c, s, offs_d, dmask, BH: tl.constexpr):
    row = x_ptr + t * NH * 2 * HALF
    for h0 in range(0, NH, BH):
        h = h0 + tl.arange(0, BH)
        m = (h < NH)[:, None] & dmask[None, :]
        p = row + h[:, None] * (2 * HALF) + offs_d[None, :]
        x1 = tl.load(p, mask=m, other=0.0).to(tl.float32)
        x2 = tl.load(p + HALF, mask=m, other=0.0).to(tl.float32)
        tl.store(p, (x1 * c[None, :] - x2 * s[None, :]).to(tl.bfloat16), mask=m)
        tl.store(p + HALF, (x2 * c[None, :] + x1 * s[None, :]).to(tl.bfloat16), mask=m)


@triton.jit
def _rope(pos_ptr, q_ptr, k_ptr, cs_ptr, HQ, HK, HALF, BH: tl.constexpr, BD: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    pos = tl.load(pos_ptr + t)
    offs_d = tl.arange(0, BD)
    dmask = offs_d < HALF
    c = tl.load(cs_ptr + pos * (2 * HALF) + offs_d, mask=dmask, other=0.0)
    s = tl.load(cs_ptr + pos * (2 * HALF) + HALF + offs_d, mask=dmask, other=0.0)
    _rope_heads(q_ptr, t, HQ, HALF, c, s, offs_d, dmask, BH)
    _rope_heads(k_ptr, t, HK, HALF, c, s, offs_d, dmask, BH)


def rotary_embedding(positions, query, key, cos_sin_cache):
    T, HQ, D = query.shape
    HK = key.shape[1]
    if T == 0:
        return None
    half = D // 2
    bd = triton.next_power_of_2(half)
    bh = max(1, min(triton.next_power_of_2(max(HQ, HK)), max(1, 4096 // bd)))
    _rope[(T,)](positions, query, key, cos_sin_cache.contiguous(), HQ, HK, half, BH=bh, BD=bd,
                num_warps=4 if bh * bd <= 2048 else 8)
    return None
