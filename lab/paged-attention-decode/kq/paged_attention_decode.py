# Paged-attention decode over an fp8 KV cache in Triton, flash-decoding style.
# LAB VARIANT kq (round 3): the products transposed so that the token axis is M.
#
# Hypothesis: the solution runs Q K^T with M = the query group padded to 16 rows, which Triton
# can only lower to mma.sync (MMAv3/wgmma needs M % 64 == 0): every warp reloads its K^T and
# V slices from shared memory with ldmatrix and the p tile crosses warps once more, and with
# one 4-warp program per SM (its 3-stage pipeline fills shared memory) that latency is not
# hidden: 875 us, 51% of the roofline. Computing S^T = K Q^T ([BLOCK_N, 16], M = BLOCK_N) and
# O^T = V^T P^T ([D, 16], M = D) puts both products on wgmma, operands straight from shared
# memory, issued asynchronously by a warpgroup, so the per-step instruction count falls and
# the gathers dominate again. The row sum of P is accumulated elementwise ([BLOCK_N, 16]) and
# reduced once after the loop, leaving one cross-warp reduction (the max) per step.
#
# Everything else is the solution's: one program per (KV head, split, sequence), KV head the
# fast grid axis; fp8 -> fp16 in registers (exact); per-tensor scales folded into the score
# scale and applied once to the output; online softmax in base 2; split-KV partials merged by
# log-sum-exp weights in a second pass; splits from the batch's shape only (no sync).
#
# Config sweep: at a shape whose KV cache exceeds SWEEP_FROM_BYTES, the first call times every
# entry of CONFIGS (BLOCK_N, num_warps, num_stages) at TARGET_PROGRAMS, then the winner at each
# of TARGETS, with CUDA events over 3 back-to-back calls, keeps the best for that shape, and
# logs every timing to stderr as one JSON line ("kq sweep"). A config that fails to build or
# launch (shared memory) is logged and skipped. Smaller shapes take DEFAULT.

import json
import math
import sys

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
PAGE = 16
MIN_CHUNK = 512
TARGET_PROGRAMS = 4096
DEFAULT = (128, 4, 2)  # BLOCK_N, num_warps, num_stages
CONFIGS = [(128, 4, 2), (128, 4, 3), (128, 8, 2), (128, 8, 3), (64, 4, 3), (64, 4, 4), (256, 8, 2)]
TARGETS = [2048, 8192, 16384]
SWEEP_FROM_BYTES = 256 << 20
NAME = "kq"


# Sizes stay unspecialised: one build per head size and config, whatever the batch.
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
    # Q^T [D, GP]: the B operand of S^T = K Q^T (bf16 -> fp16 is exact for these magnitudes).
    q_t = tl.load(q_ptr + qrow[None, :] * D + d[:, None], mask=gm[None, :], other=0.0).to(tl.float16)
    qk_scale = sm_scale_log2 * tl.load(ks_ptr)
    m_i = tl.zeros([GP], dtype=tl.float32) - float("inf")
    l_part = tl.zeros([BLOCK_N, GP], dtype=tl.float32)
    acc_t = tl.zeros([D, GP], dtype=tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    bt_row = bt_ptr + b * NBLK
    for t0 in range(start, end, BLOCK_N):
        tok = t0 + offs_n
        tm = tok < end
        page = tl.load(bt_row + tok // PAGE, mask=tm, other=0)
        slot = (page.to(tl.int64) * PAGE + tok % PAGE) * HK + h
        k = tl.load(kc_ptr + slot[:, None] * D + d[None, :], mask=tm[:, None], other=0.0)
        v = tl.load(vc_ptr + slot[:, None] * D + d[None, :], mask=tm[:, None], other=0.0)
        s_t = tl.dot(k.to(tl.float16), q_t) * qk_scale  # [BLOCK_N, GP], M = tokens
        s_t = tl.where(tm[:, None], s_t, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s_t, 0))
        p_t = tl.math.exp2(s_t - m_new[None, :])
        alpha = tl.math.exp2(m_i - m_new)
        l_part = l_part * alpha[None, :] + p_t
        acc_t = tl.dot(tl.trans(v.to(tl.float16)), p_t.to(tl.float16), acc_t * alpha[None, :])  # [D, GP]
        m_i = m_new
    l_i = tl.sum(l_part, 0)
    part = qrow * SPLITS + sp
    tl.store(po_ptr + part[None, :] * D + d[:, None], acc_t * tl.load(vs_ptr), mask=gm[None, :])
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


def _splits(B, HK, longest, bn, target):
    splits = max(1, min(triton.cdiv(target, B * HK), triton.cdiv(longest, MIN_CHUNK)))
    chunk = triton.cdiv(triton.cdiv(longest, splits), bn) * bn
    return triton.cdiv(longest, chunk), chunk


def _run(cfg, target, query, k_cache, k_cache_scale, v_cache, v_cache_scale, block_tables, seq_lens):
    bn, warps, stages = cfg
    B, HQ, D = query.shape
    HK = k_cache.shape[2]
    G = HQ // HK
    nblk = block_tables.shape[1]
    splits, chunk = _splits(B, HK, nblk * PAGE, bn, target)  # nblk * PAGE bounds every seq_len
    out = torch.empty(B, HQ, D, dtype=torch.bfloat16, device=query.device)
    po = torch.empty(B * HQ * splits, D, dtype=torch.float32, device=query.device)
    pm = torch.empty(B * HQ * splits, dtype=torch.float32, device=query.device)
    pl = torch.empty(B * HQ * splits, dtype=torch.float32, device=query.device)
    gp = max(16, triton.next_power_of_2(G))
    _decode_split[(HK, splits, B)](query, k_cache, v_cache, k_cache_scale, v_cache_scale,
                                   block_tables, seq_lens, po, pm, pl,
                                   HQ, HK, nblk, chunk, splits, LOG2E / math.sqrt(D),
                                   G=G, GP=gp, D=D, BLOCK_N=bn, PAGE=PAGE,
                                   num_warps=warps, num_stages=stages)
    _decode_merge[(B * HQ,)](po, pm, pl, out, splits, D=D, SP=max(16, triton.next_power_of_2(splits)), num_warps=4)
    return out


def _time_us(fn, reps=3):
    fn()  # build, warm
    torch.cuda.synchronize()
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record()
    for _ in range(reps):
        fn()
    e1.record()
    e1.synchronize()
    return e0.elapsed_time(e1) * 1000.0 / reps


_CHOICE = {}


def _sweep(key, args):
    log = {"variant": NAME, "shape": list(key), "configs": {}, "targets": {}}
    best = None
    for cfg in CONFIGS:
        try:
            us = _time_us(lambda: _run(cfg, TARGET_PROGRAMS, *args))
        except Exception as e:  # noqa: BLE001 - a config that does not build or launch is skipped
            log["configs"][str(cfg)] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1][:200] if str(e).strip() else "")
            continue
        log["configs"][str(cfg)] = round(us, 1)
        if best is None or us < best[0]:
            best = (us, cfg, TARGET_PROGRAMS)
    if best is None:
        raise RuntimeError("%s: no config ran: %s" % (NAME, log["configs"]))
    cfg = best[1]
    for target in TARGETS:
        us = _time_us(lambda: _run(cfg, target, *args))
        log["targets"][target] = round(us, 1)
        if us < best[0]:
            best = (us, cfg, target)
    log["chosen"] = [list(best[1]), best[2], round(best[0], 1)]
    print(json.dumps(log), file=sys.stderr, flush=True)
    return best[1], best[2]


def paged_attention_decode(query, k_cache, k_cache_scale, v_cache, v_cache_scale, block_tables, seq_lens):
    B, HQ, D = query.shape
    if B == 0:
        return torch.empty(B, HQ, D, dtype=torch.bfloat16, device=query.device)
    args = (query.contiguous(), k_cache, k_cache_scale, v_cache, v_cache_scale,
            block_tables.contiguous(), seq_lens.contiguous())
    NB, _, HK, _ = k_cache.shape
    nblk = block_tables.shape[1]
    if 2 * B * nblk * PAGE * HK * D < SWEEP_FROM_BYTES:
        return _run(DEFAULT, TARGET_PROGRAMS, *args)
    key = (B, HQ, HK, D, nblk, NB)
    if key not in _CHOICE:
        _CHOICE[key] = _sweep(key, args)
    cfg, target = _CHOICE[key]
    return _run(cfg, target, *args)
