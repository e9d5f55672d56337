# Paged-attention decode over an fp8 KV cache in Triton, flash-decoding style.
# LAB VARIANT occ (round 4): the solution's kernel, byte for byte, with its registers capped.
#
# Hypothesis: residency, not bytes per program, is what leaves ~45% of the bandwidth unused. At
# BLOCK_N 128 / 4 warps / 2 stages a program holds the fp16 copies of its K^T and V dot operands
# in registers (2 x 128 x 128 fp16 over 128 threads = 128 registers a thread before s, p, acc and
# addresses), so if the build takes > 168 registers a thread only 2 programs (8 warps, 2 a
# scheduler) fit an SM although shared memory (2 x 32 KB stages) has room for 3: the per-step
# latencies (block-table load, cp.async wait, barriers of the cross-warp max/sum) are then hidden
# by too few warps. Triton's maxnreg option (CUDAOptions.maxnreg, the PTX .maxnreg) caps the
# registers: 168 gives 3 programs an SM, 128 (spilling, if the build needs more) tests how much a
# cap costs. The sweep logs each build's registers, spills and shared memory, which says which
# residency each point had: that is the data for round 5 whatever wins.
#
# Config sweep (as round 3's): at a shape whose KV cache exceeds SWEEP_FROM_BYTES, the first call
# times every CONFIGS entry (BLOCK_N, num_warps, num_stages, maxnreg) at TARGET_PROGRAMS, then the
# winner at each of TARGETS (CUDA events over 3 back-to-back calls), keeps the best and logs it
# as one JSON line on stderr, with each build's registers, spills and shared memory ("build").

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
DEFAULT = (128, 4, 2, None)  # BLOCK_N, num_warps, num_stages, maxnreg
CONFIGS = [(128, 4, 2, None), (128, 4, 2, 168), (128, 4, 2, 128)]
TARGETS = [2048, 8192]
SWEEP_FROM_BYTES = 256 << 20
NAME = "occ"


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
    q = tl.load(q_ptr + qrow[:, None] * D + d[None, :], mask=gm[:, None], other=0.0).to(tl.float16)
    qk_scale = sm_scale_log2 * tl.load(ks_ptr)
    m_i = tl.zeros([GP], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([GP], dtype=tl.float32)
    acc = tl.zeros([GP, D], dtype=tl.float32)
    offs_n = tl.arange(0, BLOCK_N)
    bt_row = bt_ptr + b * NBLK
    for t0 in range(start, end, BLOCK_N):
        tok = t0 + offs_n
        tm = tok < end
        page = tl.load(bt_row + tok // PAGE, mask=tm, other=0)
        slot = (page.to(tl.int64) * PAGE + tok % PAGE) * HK + h
        k = tl.load(kc_ptr + slot[:, None] * D + d[None, :], mask=tm[:, None], other=0.0)
        v = tl.load(vc_ptr + slot[:, None] * D + d[None, :], mask=tm[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k.to(tl.float16))) * qk_scale
        s = tl.where(tm[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = tl.dot(p.to(tl.float16), v.to(tl.float16), acc * alpha[:, None])
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


def _splits(B, HK, longest, bn, target):
    splits = max(1, min(triton.cdiv(target, B * HK), triton.cdiv(longest, MIN_CHUNK)))
    chunk = triton.cdiv(triton.cdiv(longest, splits), bn) * bn
    return triton.cdiv(longest, chunk), chunk


_BUILD = {}


def _note_build(cfg, kern):
    # Registers, spills and shared memory of a config's build, for the sweep log (best effort).
    if cfg in _BUILD:
        return
    try:
        _BUILD[cfg] = {"regs": getattr(kern, "n_regs", None), "spills": getattr(kern, "n_spills", None),
                       "shared": getattr(getattr(kern, "metadata", None), "shared", None)}
    except Exception as e:  # noqa: BLE001
        _BUILD[cfg] = str(e)[:80]


def _run(cfg, target, query, k_cache, k_cache_scale, v_cache, v_cache_scale, block_tables, seq_lens):
    bn, warps, stages, maxnreg = cfg
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
    extra = {} if maxnreg is None else {"maxnreg": maxnreg}
    kern = _decode_split[(HK, splits, B)](query, k_cache, v_cache, k_cache_scale, v_cache_scale,
                                          block_tables, seq_lens, po, pm, pl,
                                          HQ, HK, nblk, chunk, splits, LOG2E / math.sqrt(D),
                                          G=G, GP=gp, D=D, BLOCK_N=bn, PAGE=PAGE,
                                          num_warps=warps, num_stages=stages, **extra)
    _note_build(cfg, kern)
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
    log["build"] = {str(c): v for c, v in _BUILD.items()}
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
