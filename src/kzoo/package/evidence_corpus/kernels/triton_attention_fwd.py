"""Causal flash attention forward (simplified: no dropout, head_dim in {64, 128})."""
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _attn_fwd(Q, K, V, O, sm_scale, N_CTX, stride_qm, stride_km, stride_vm, stride_om,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + off_hz * N_CTX * stride_qm + offs_m[:, None] * stride_qm + offs_d[None, :])
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # log2(e): exp2 is cheaper than exp
    for start_n in range(0, (start_m + 1) * BLOCK_M, BLOCK_N):
        k = tl.load(K + off_hz * N_CTX * stride_km + (start_n + offs_n)[None, :] * stride_km + offs_d[:, None])
        qk = tl.dot(q, k) * qk_scale
        qk = tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_ij[:, None])
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = tl.load(V + off_hz * N_CTX * stride_vm + (start_n + offs_n)[:, None] * stride_vm + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(O + off_hz * N_CTX * stride_om + offs_m[:, None] * stride_om + offs_d[None, :], acc.to(O.dtype.element_ty))


def attention(q, k, v):
    B, H, N, D = q.shape
    o = torch.empty_like(q)
    grid = (triton.cdiv(N, 128), B * H)
    _attn_fwd[grid](q, k, v, o, 1.0 / math.sqrt(D), N, q.stride(2), k.stride(2), v.stride(2), o.stride(2),
                    BLOCK_M=128, BLOCK_N=64, HEAD_DIM=D, num_warps=8, num_stages=3)
    return o
