# Lab variant allheads: one program per (split of the sequence, sequence) runs ALL KV heads, so a
# step reads whole 16-token pages ([16, HK, D] fp8, contiguous) instead of one head's 128-byte rows
# strided by HK * D (a DRAM-locality test). Scores and outputs are batched 3-D dots over the KV
# heads ([HK, GP, D] x [HK, D, BLOCK_N]); each head's query group is padded to GP >= 16 rows.
# Pass 2 (merge over splits) as in the solution.

import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
PAGE = 16
BLOCK_N = 16
TARGET_PROGRAMS = 8192  # counted per KV head, as in the solution
MIN_CHUNK = 512
NUM_WARPS = 8
NUM_STAGES = 3


@triton.jit(do_not_specialize=["HQ", "NBLK", "CHUNK", "SPLITS", "G"])
def _decode_split_all(q_ptr, kc_ptr, vc_ptr, ks_ptr, vs_ptr, bt_ptr, sl_ptr, po_ptr, pm_ptr, pl_ptr,
                      HQ, NBLK, CHUNK, SPLITS, sm_scale_log2, G,
                      HK: tl.constexpr, GP: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr,
                      PAGE: tl.constexpr):
    sp = tl.program_id(0)
    b = tl.program_id(1).to(tl.int64)
    n = tl.load(sl_ptr + b)
    start = sp * CHUNK
    end = tl.minimum(start + CHUNK, n)
    hh = tl.arange(0, HK)
    g = tl.arange(0, GP)
    d = tl.arange(0, D)
    gm2 = tl.broadcast_to((g < G)[None, :], [HK, GP])
    qrow = b * HQ + hh[:, None] * G + g[None, :]  # [HK, GP]
    q = tl.load(q_ptr + qrow[:, :, None] * D + d[None, None, :], mask=gm2[:, :, None], other=0.0).to(tl.float16)
    qk_scale = sm_scale_log2 * tl.load(ks_ptr)
    m_i = tl.zeros([HK, GP], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([HK, GP], dtype=tl.float32)
    acc = tl.zeros([HK, GP, D], dtype=tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    bt_row = bt_ptr + b * NBLK
    for t0 in range(start, end, BLOCK_N):
        tok = t0 + offs_n
        tm = tok < end
        page = tl.load(bt_row + tok // PAGE, mask=tm, other=0)
        slot = page.to(tl.int64) * PAGE + tok % PAGE  # [BLOCK_N]
        # K as [HK, D, BLOCK_N] and V as [HK, BLOCK_N, D]: both gathers walk d fastest.
        kaddr = (slot[None, None, :] * HK + hh[:, None, None]) * D + d[None, :, None]
        vaddr = (slot[None, :, None] * HK + hh[:, None, None]) * D + d[None, None, :]
        kt = tl.load(kc_ptr + kaddr, mask=tm[None, None, :], other=0.0)
        v = tl.load(vc_ptr + vaddr, mask=tm[None, :, None], other=0.0)
        s = tl.dot(q, kt.to(tl.float16)) * qk_scale  # [HK, GP, BLOCK_N]
        s = tl.where(tm[None, None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 2))
        p = tl.math.exp2(s - m_new[:, :, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 2)
        acc = tl.dot(p.to(tl.float16), v.to(tl.float16), acc * alpha[:, :, None])
        m_i = m_new
    part = qrow * SPLITS + sp  # [HK, GP]
    tl.store(po_ptr + part[:, :, None] * D + d[None, None, :], acc * tl.load(vs_ptr), mask=gm2[:, :, None])
    tl.store(pm_ptr + part, m_i, mask=gm2)
    tl.store(pl_ptr + part, l_i, mask=gm2)


@triton.jit(do_not_specialize=["SPLITS"])
def _decode_merge(po_ptr, pm_ptr, pl_ptr, out_ptr, SPLITS, D: tl.constexpr, SP: tl.constexpr):
    r = tl.program_id(0).to(tl.int64)
    s = tl.arange(0, SP)
    sm = s < SPLITS
    m = tl.load(pm_ptr + r * SPLITS + s, mask=sm, other=float("-inf"))
    l = tl.load(pl_ptr + r * SPLITS + s, mask=sm, other=0.0)
    mx = tl.max(m, axis=0)
    w = tl.where(m == float("-inf"), 0.0, tl.math.exp2(m - mx))
    total = tl.sum(l * w, axis=0)
    d = tl.arange(0, D)
    o = tl.load(po_ptr + (r * SPLITS + s)[:, None] * D + d[None, :], mask=sm[:, None], other=0.0)
    out = tl.sum(o * w[:, None], axis=0) / total
    tl.store(out_ptr + r * D + d, out.to(tl.bfloat16))


def paged_attention_decode(query, k_cache, k_cache_scale, v_cache, v_cache_scale, block_tables, seq_lens):
    B, HQ, D = query.shape
    HK = k_cache.shape[2]
    G = HQ // HK
    out = torch.empty(B, HQ, D, dtype=torch.bfloat16, device=query.device)
    if B == 0:
        return out
    nblk = block_tables.shape[1]
    longest = nblk * PAGE
    splits = max(1, min(triton.cdiv(TARGET_PROGRAMS, B * HK), triton.cdiv(longest, MIN_CHUNK)))
    chunk = triton.cdiv(triton.cdiv(longest, splits), BLOCK_N) * BLOCK_N
    splits = triton.cdiv(longest, chunk)
    po = torch.empty(B * HQ * splits, D, dtype=torch.float32, device=query.device)
    pm = torch.empty(B * HQ * splits, dtype=torch.float32, device=query.device)
    pl = torch.empty(B * HQ * splits, dtype=torch.float32, device=query.device)
    gp = max(16, triton.next_power_of_2(G))
    _decode_split_all[(splits, B)](query.contiguous(), k_cache, v_cache, k_cache_scale, v_cache_scale,
                                   block_tables.contiguous(), seq_lens.contiguous(), po, pm, pl,
                                   HQ, nblk, chunk, splits, LOG2E / math.sqrt(D), G,
                                   HK=HK, GP=gp, D=D, BLOCK_N=BLOCK_N, PAGE=PAGE,
                                   num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    _decode_merge[(B * HQ,)](po, pm, pl, out, splits, D=D, SP=max(16, triton.next_power_of_2(splits)), num_warps=4)
    return out
