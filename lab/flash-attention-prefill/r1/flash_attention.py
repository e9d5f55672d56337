# Causal flash attention (forward) in Triton for Hopper.
#
# One program per (query tile of BLOCK_M rows, batch x head). Q, K and V come in
# through TMA (host-side tensor descriptors over the [B*H*T, D] views), so the
# K/V stream is pipelined by the copy engine into shared memory and both
# products run on wgmma (8 warps = two warpgroups of 64 query rows each). The
# online softmax runs in base 2 with the scale folded into log2(e) (one FMA per
# score). The causal loop is split in two: the column tiles left of the
# diagonal run without any mask, and only the BLOCK_M / BLOCK_N diagonal tiles
# pay for it; tiles right of the diagonal are never loaded. Within a head the
# query tiles are issued longest first (the grid's fast axis walks them from
# the bottom row up), and heads follow one another, so the programs resident
# at a time share a few heads' K/V in L2 and the short tiles fill the tail.
#
# Ragged T: the descriptors span all B*H*T rows, so a tile that runs past T
# reads the next head's rows (or zeros past the end). Those columns are > T-1
# >= every valid query row, so the causal mask already removes them; the rows
# past T are computed and dropped by the masked store.
#
# Short sequences (T < 256), and any failure to build the TMA kernel, take a
# plain pointer-load kernel of the same schedule.

import math
import sys

import torch
import triton
import triton.language as tl

try:  # host-side TMA descriptors (Triton >= 3.4)
    from triton.tools.tensor_descriptor import TensorDescriptor
except Exception:  # noqa: BLE001
    TensorDescriptor = None

LOG2E = 1.4426950408889634
TMA_FROM_T = 256
# head dim -> (BLOCK_M, BLOCK_N, num_warps, num_stages)
TMA_CONFIGS = {128: (128, 128, 8, 2), 64: (128, 128, 8, 3)}
_TMA_OK = {d: TensorDescriptor is not None for d in TMA_CONFIGS}  # per head size


@triton.jit
def _tma_inner(acc, l_i, m_i, q, desc_k, desc_v, row0, lo, hi, offs_m, qk_scale,
               BLOCK_N: tl.constexpr, MASK: tl.constexpr):
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = desc_k.load([row0 + start_n, 0])
        qk = tl.dot(q, k.T)
        if MASK:
            qk = qk * qk_scale + tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], 0.0, -1.0e6)
            m_ij = tl.maximum(m_i, tl.max(qk, 1))
            qk = qk - m_ij[:, None]
        else:
            m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_ij = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([row0 + start_n, 0])
        acc = tl.dot(p.to(tl.bfloat16), v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit(do_not_specialize=["T"])  # one build per head size, whatever T
def _attn_fwd_tma(desc_q, desc_k, desc_v, O, T, qk_scale,
                  HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.cdiv(T, BLOCK_M) - 1 - tl.program_id(0)
    bh = tl.program_id(1)
    row0 = bh * T  # first row of this head in the [B*H*T, D] views
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], dtype=tl.float32)
    q = desc_q.load([row0 + start_m * BLOCK_M, 0])
    lo = start_m * BLOCK_M
    # Off-diagonal column tiles: no mask.
    acc, l_i, m_i = _tma_inner(acc, l_i, m_i, q, desc_k, desc_v, row0, 0, lo, offs_m, qk_scale,
                               BLOCK_N, False)
    # Diagonal tiles: causal mask (which also removes columns >= T for rows < T).
    hi = tl.minimum(lo + BLOCK_M, T)
    acc, l_i, m_i = _tma_inner(acc, l_i, m_i, q, desc_k, desc_v, row0, lo, hi, offs_m, qk_scale,
                               BLOCK_N, True)
    out = acc / l_i[:, None]
    offs_d = tl.arange(0, HEAD_D)
    base = bh.to(tl.int64) * T * HEAD_D
    tl.store(O + base + offs_m[:, None] * HEAD_D + offs_d[None, :], out.to(tl.bfloat16),
             mask=offs_m[:, None] < T)


@triton.jit(do_not_specialize=["T"])  # one build per head size, whatever T
def _attn_fwd_ptr(Q, K, V, O, T, qk_scale,
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
    lo = start_m * BLOCK_M
    for start_n in range(0, lo, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + base + cols[None, :] * HEAD_D + offs_d[:, None])
        qk = tl.dot(q, k)
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + cols[:, None] * HEAD_D + offs_d[None, :])
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m_i = m_new
    hi = tl.minimum(lo + BLOCK_M, T)
    for start_n in range(lo, hi, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(K + base + cols[None, :] * HEAD_D + offs_d[:, None], mask=cols[None, :] < T, other=0.0)
        qk = tl.dot(q, k) * qk_scale
        qk = tl.where(offs_m[:, None] >= cols[None, :], qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + base + cols[:, None] * HEAD_D + offs_d[None, :], mask=cols[:, None] < T, other=0.0)
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(O + base + offs_m[:, None] * HEAD_D + offs_d[None, :], out.to(tl.bfloat16), mask=offs_m[:, None] < T)


def _run_tma(q, k, v, o, B, H, T, D, scale):
    bm, bn, w, s = TMA_CONFIGS[D]
    rows = B * H * T
    descs = [TensorDescriptor(t.view(rows, D), shape=[rows, D], strides=[D, 1], block_shape=[bs, D])
             for t, bs in ((q, bm), (k, bn), (v, bn))]
    _attn_fwd_tma[(triton.cdiv(T, bm), B * H)](*descs, o, T, scale, HEAD_D=D, BLOCK_M=bm, BLOCK_N=bn,
                                               num_warps=w, num_stages=s)


def _run_ptr(q, k, v, o, B, H, T, D, scale):
    bm, bn, w, s = 128, 64, 8, 3
    _attn_fwd_ptr[(triton.cdiv(T, bm), B * H)](q, k, v, o, T, scale, HEAD_D=D, BLOCK_M=bm, BLOCK_N=bn,
                                               num_warps=w, num_stages=s)


def flash_attention(q, k, v):
    B, H, T, D = q.shape
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    o = torch.empty_like(q)
    if B * H * T == 0:
        return o
    scale = LOG2E / math.sqrt(D)
    if T >= TMA_FROM_T and _TMA_OK.get(D, False):
        try:
            _run_tma(q, k, v, o, B, H, T, D, scale)
            return o
        except Exception as e:  # noqa: BLE001 - no TMA build here: the pointer kernel instead
            print("flash_attention: TMA kernel failed (%s: %s); pointer kernel from now on"
                  % (type(e).__name__, str(e).strip()[-300:]), file=sys.stderr)
            _TMA_OK[D] = False
    _run_ptr(q, k, v, o, B, H, T, D, scale)
    return o
