# Paged-attention decode over an fp8 KV cache in Triton, flash-decoding style.
#
# Pass 1: one program per (KV head, split of the sequence, sequence); the KV
# head is the grid's fast axis, so the programs running together read the
# neighbouring 128-byte rows of the same 16-token pages. A program streams its
# split BLOCK_N tokens at a time through the block table, K and V loads issued
# together at the top of the step, dequantises the fp8 bytes in registers to
# float16 (one cvt.rn.f16x2.e4m3x2 per two values; float16 holds every e4m3
# value exactly, and the per-tensor scales are folded into the score scale and
# applied once to the output), and runs all query heads of the KV group
# together -- padded to 16 rows, so both products run on tensor cores --
# through an online softmax in base 2. Each split leaves its unnormalised
# output, running maximum and sum. Pass 2 merges the splits with their
# log-sum-exp weights. Splits are chosen from the batch's shape (never from
# seq_lens, which would need a device-to-host copy) so that about 2048
# programs run: every SM stays busy to the end.
#
# The block table is read one step ahead: each step loads the next step's page ids
# into registers carried by the loop. Why: Triton's pipeliner gives the table's load
# indirection level 1 (it feeds the K/V addresses) and leaves it out of the pipeline,
# so each step waited a whole dependent load's latency before it could issue its K/V
# gathers. With that wait gone, three stages (the table no longer competing) and
# fewer, longer splits won on the H200 (lab round 4, docs/CATALOG.md).
#
# V reaches its tensor-core operand as fp16 through a shared-memory tile read with
# ldmatrix.trans. Why: P V contracts over tokens, so V's operand is transposed, and with a
# plain cast Triton hoists the operand's layout conversion above the fp8 -> fp16 cast and
# reads the fp8 bytes transposed from the cp.async buffer, one byte at a time (ldmatrix.trans
# has no 8-bit form before Blackwell). The conversion is an inline asm Triton cannot hoist:
# V is read with 16-byte loads, converted, and transposed as 16-bit values. It won at
# every graded shape (lab round 5's vh16 on the H200, docs/CATALOG.md).

import math

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
PAGE = 16
BLOCK_N = 128
TARGET_PROGRAMS = 2048
MIN_CHUNK = 512
NUM_WARPS = 4
# Three stages: with the table read a step ahead, the third stage's deeper K/V prefetch
# paid for its shared memory at every graded shape (lab round 4's sweep; round 3, with
# the table's wait in every step, had two stages ahead).
NUM_STAGES = 3


# Sizes stay unspecialised: one build per head size, whatever the batch.
@triton.jit(do_not_specialize=["HQ", "HK", "NBLK", "CHUNK", "SPLITS", "G"])
def _decode_split(q_ptr, kc_ptr, vc_ptr, ks_ptr, vs_ptr, bt_ptr, sl_ptr, po_ptr, pm_ptr, pl_ptr,
                  HQ, HK, NBLK, CHUNK, SPLITS, sm_scale_log2,
                  G, GP: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr, PAGE: tl.constexpr):
    h = tl.program_id(0)
    sp = tl.program_id(1)
    b = tl.program_id(2).to(tl.int64)
    n = tl.load(sl_ptr + b)
    start = sp * CHUNK
    end = tl.minimum(start + CHUNK, n)
    g = tl.arange(0, GP)
    gm = g < G
    d = tl.arange(0, D)
    qrow = b * HQ + h * G + g
    q = tl.load(q_ptr + qrow[:, None] * D + d[None, :], mask=gm[:, None], other=0.0).to(tl.float16)
    qk_scale = sm_scale_log2 * tl.load(ks_ptr)
    m_i = tl.zeros([GP], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([GP], dtype=tl.float32)
    acc = tl.zeros([GP, D], dtype=tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    bt_row = bt_ptr + b * NBLK
    # The first step's page ids; each step loads the next step's (masked past the split's end).
    page_next = tl.load(bt_row + (start + offs_n) // PAGE, mask=(start + offs_n) < end, other=0)
    for t0 in range(start, end, BLOCK_N):
        tok = t0 + offs_n
        tm = tok < end
        page = page_next
        nxt = tok + BLOCK_N
        page_next = tl.load(bt_row + nxt // PAGE, mask=nxt < end, other=0)
        slot = (page.to(tl.int64) * PAGE + tok % PAGE) * HK + h
        k = tl.load(kc_ptr + slot[:, None] * D + d[None, :], mask=tm[:, None], other=0.0)
        v = tl.load(vc_ptr + slot[:, None] * D + d[None, :], mask=tm[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k.to(tl.float16))) * qk_scale
        s = tl.where(tm[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        # V to fp16 by inline asm (the header: two operands, so Triton cannot hoist the
        # dot-operand layout conversion above it and read fp8 bytes transposed one at a time).
        # 4 bytes in one register (element 0 low) -> 2 x f16x2, bit-exact with Triton's cast.
        vb = v.to(tl.int8, bitcast=True)
        vh = tl.inline_asm_elementwise(
            "{\n.reg .b16 ve0, ve1;\nmov.b32 {ve0, ve1}, $2;\n"
            "cvt.rn.f16x2.e4m3x2 $0, ve0;\ncvt.rn.f16x2.e4m3x2 $1, ve1;\n}",
            "=r,=r,r,r", [vb, vb], dtype=tl.float16, is_pure=True, pack=4)
        acc = tl.dot(p.to(tl.float16), vh, acc * alpha[:, None])
        m_i = m_new
    part = qrow * SPLITS + sp
    tl.store(po_ptr + part[:, None] * D + d[None, :], acc * tl.load(vs_ptr), mask=gm[:, None])
    tl.store(pm_ptr + part, m_i, mask=gm)
    tl.store(pl_ptr + part, l_i, mask=gm)


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
    longest = nblk * PAGE  # an upper bound of every seq_len, known without a sync
    splits = max(1, min(triton.cdiv(TARGET_PROGRAMS, B * HK), triton.cdiv(longest, MIN_CHUNK)))
    chunk = triton.cdiv(triton.cdiv(longest, splits), BLOCK_N) * BLOCK_N
    splits = triton.cdiv(longest, chunk)
    po = torch.empty(B * HQ * splits, D, dtype=torch.float32, device=query.device)
    pm = torch.empty(B * HQ * splits, dtype=torch.float32, device=query.device)
    pl = torch.empty(B * HQ * splits, dtype=torch.float32, device=query.device)
    gp = max(16, triton.next_power_of_2(G))
    _decode_split[(HK, splits, B)](query.contiguous(), k_cache, v_cache, k_cache_scale, v_cache_scale,
                                   block_tables.contiguous(), seq_lens.contiguous(), po, pm, pl,
                                   HQ, HK, nblk, chunk, splits, LOG2E / math.sqrt(D),
                                   G=G, GP=gp, D=D, BLOCK_N=BLOCK_N, PAGE=PAGE,
                                   num_warps=NUM_WARPS, num_stages=NUM_STAGES)
    _decode_merge[(B * HQ,)](po, pm, pl, out, splits, D=D, SP=max(16, triton.next_power_of_2(splits)), num_warps=4)
    return out
