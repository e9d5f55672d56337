# Causal flash attention (forward) in Triton, FlashAttention-2's schedule: one
# program per (query tile, batch x head); K/V streamed in column tiles (at long
# sequences the tile sizes, warps and pipeline depth are autotuned per sequence
# length and head size; short ones take one fixed config, so the compiles stay few)
# through an online softmax in base 2 (the scale folded into log2(e)), so the
# [T, T] scores never leave the chip. Tiles left of the diagonal run unmasked;
# only the diagonal tiles pay for the causal mask, and tiles right of it are
# never loaded. Query tiles are issued longest first to even out the tail.

import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


# BLOCK_N divides BLOCK_M in every config: the diagonal block is whole tiles.
CONFIGS = [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
           for bm, bn, w, s in ((128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3))]
TUNE_FROM_T = 1024


@triton.jit
def _attn_fwd(Q, K, V, O, T, qk_scale,
              HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.cdiv(T, BLOCK_M) - 1 - tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    base = bh * T * HEAD_D
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_D)
    q = tl.load(Q + base + offs_m[:, None] * HEAD_D + offs_d[None, :], mask=offs_m[:, None] < T, other=0.0)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    # Columns left of this tile's diagonal block: every query row sees all of them.
    lo = start_m * BLOCK_M
    for start_n in range(0, lo, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + base + cols[None, :] * HEAD_D + offs_d[:, None])
        s = tl.dot(q, k) * qk_scale
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + cols[:, None] * HEAD_D + offs_d[None, :])
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m_i = m_new
    # The diagonal block: causal mask (and the ragged end of the sequence).
    hi = tl.minimum(lo + BLOCK_M, T)
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + base + cols[None, :] * HEAD_D + offs_d[:, None], mask=cols[None, :] < T, other=0.0)
        s = tl.dot(q, k) * qk_scale
        s = tl.where(offs_m[:, None] >= cols[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + cols[:, None] * HEAD_D + offs_d[None, :], mask=cols[:, None] < T, other=0.0)
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(O + base + offs_m[:, None] * HEAD_D + offs_d[None, :], out.to(tl.bfloat16), mask=offs_m[:, None] < T)


_attn_fwd_tuned = triton.autotune(configs=CONFIGS, key=["T", "HEAD_D"])(_attn_fwd)


def flash_attention(q, k, v):
    B, H, T, D = q.shape
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    o = torch.empty_like(q)
    if B * H * T == 0:
        return o
    grid = lambda meta: (triton.cdiv(T, meta["BLOCK_M"]), B * H)  # noqa: E731
    if T >= TUNE_FROM_T:
        _attn_fwd_tuned[grid](q, k, v, o, T, LOG2E / math.sqrt(D), HEAD_D=D)
    else:
        _attn_fwd[grid](q, k, v, o, T, LOG2E / math.sqrt(D), HEAD_D=D, BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=3)
    return o
