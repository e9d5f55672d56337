# Paged-attention decode over an fp8 KV cache in Triton, flash-decoding style.
# LAB VARIANT split (round 6): the catalog solution (round 5's vh16) with its split count re-chosen.
# The kernels are the solution's (vh16's source, whose kernel is the solution's line for line);
# the config stays (128, 4, 3); only the programs target of the split arithmetic is swept.
#
# Hypothesis: TARGET_PROGRAMS = 2048 was fixed when a step cost more and 2 programs ran an SM.
# With vh16 a program holds 128 registers and 38 KB shared (round 5's build line) -> 4 an SM,
# 528 resident programs on 132 SMs, and every graded sequence holds L tokens (uniform work), so
# the split count trades the wave tail against the per-program fixed cost (1.5-5 us, round 4's
# fit) and the merge pass's partial traffic. At the graded shapes (programs = B HK splits; waves
# at 528 an SM-set):
#   (128,32,8,128,8192):  target 1024 -> 1 split 1024 programs 1.94 waves; 2048 (now) -> 2, 2048,
#                         3.88; 3072 -> 3, 3072, 5.82; 4096 -> 4, 4096, 7.76. 1536 = 2048's.
#   (256,32,8,128,4096):  1024/1536/2048 -> 1 split 2048 programs 3.88 waves (now); 3072/4096 ->
#                         2 splits 4096 programs 7.76 waves.
#   (256,8,1,128,32768):  1024 -> 4 splits 1.94 waves; 1536 -> 6, 2.91; 2048 (now) -> 8, 3.88;
#                         3072 -> 12, 5.82; 4096 -> 16, 7.76.
# MIN_CHUNK (512) binds only where longest / splits < 512; the smallest graded chunk swept is
# 2048 tokens, so MIN_CHUNK changes nothing at a graded shape and is not swept (emulate.py's
# graded lines). Expected: at shapes 0 and 2 the 1024 target (one split at shape 0: no merge
# partials beyond one) gains 1-3% if the fixed cost is the 3-5 us end of round 4's fit, loses
# ~1-2% if the tail of the 1.94-wave grid dominates; shape 1 can only keep 2048 or lose.
# Not verified here (no GPU): every figure above except the split arithmetic (checked on CPU).
#
# Sweep: at a shape whose KV cache exceeds SWEEP_FROM_BYTES, the first call builds (128, 4, 3),
# spot-checks it against float32 (two sequences), then times TARGET_PROGRAMS and each TARGETS
# entry that gives a different split count (CUDA events, REPS back-to-back calls each, the current
# target re-timed alongside); a target is chosen only if it beats the current one by > MARGIN.
# One JSON line on stderr per graded shape: times, splits and waves of each target, the choice.

import json
import math
import sys

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
PAGE = 16
MIN_CHUNK = 512
TARGET_PROGRAMS = 2048
DEFAULT = (128, 4, 3)  # BLOCK_N, num_warps, num_stages: the solution's
CONFIGS = [DEFAULT]
TARGETS = [1024, 1536, 3072, 4096]
REPS = 5
MARGIN = 0.01  # a target must beat the current one by > 1% (3-call events noise ~1%)
SWEEP_FROM_BYTES = 256 << 20
SPOT_TOL = 1e-2  # the task's tolerance; a broken config is off by O(1)
NAME = "split"


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
        # fp8 -> fp16 of V where Triton cannot hoist the dot-operand conversion above it (two
        # operands: not a "pure unary" asm). 4 bytes in one register (element 0 low) -> 2 x f16x2.
        vb = v.to(tl.int8, bitcast=True)
        vh = tl.inline_asm_elementwise(
            "{\n.reg .b16 ve0, ve1;\nmov.b32 {ve0, ve1}, $2;\n"
            "cvt.rn.f16x2.e4m3x2 $0, ve0;\ncvt.rn.f16x2.e4m3x2 $1, ve1;\n}",
            "=r,=r,r,r", [vb, vb], dtype=tl.float16, is_pure=True, pack=4)
        s = tl.dot(q, tl.trans(k.to(tl.float16))) * qk_scale
        s = tl.where(tm[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
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


def _splits(B, HK, longest, bn, target):
    splits = max(1, min(triton.cdiv(target, B * HK), triton.cdiv(longest, MIN_CHUNK)))
    chunk = triton.cdiv(triton.cdiv(longest, splits), bn) * bn
    return triton.cdiv(longest, chunk), chunk


_BUILD = {}


def _note_build(cfg, kern):
    # Registers, spills, shared memory of a config's build and the programs an SM they allow
    # (65536 registers, 228 KB of shared memory less 1 KB a block): for the sweep log, best effort.
    if cfg in _BUILD:
        return
    try:
        regs = getattr(kern, "n_regs", None)
        shared = getattr(getattr(kern, "metadata", None), "shared", None)
        per_sm = None
        if regs and shared is not None:
            by_regs = 65536 // (((regs * 32 + 255) // 256) * 256 * cfg[1])
            per_sm = min(by_regs, (228 * 1024) // (shared + 1024), 32)
        _BUILD[cfg] = {"regs": regs, "spills": getattr(kern, "n_spills", None), "shared": shared,
                       "per_sm": per_sm}
    except Exception as e:  # noqa: BLE001
        _BUILD[cfg] = str(e)[:80]


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
    kern = _decode_split[(HK, splits, B)](query, k_cache, v_cache, k_cache_scale, v_cache_scale,
                                          block_tables, seq_lens, po, pm, pl,
                                          HQ, HK, nblk, chunk, splits, LOG2E / math.sqrt(D),
                                          G=G, GP=gp, D=D, BLOCK_N=bn, PAGE=PAGE,
                                          num_warps=warps, num_stages=stages)
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


def _e4m3_table(device):
    # The 256 e4m3fn byte values as float32 (0x7f / 0xff NaN), as the task's reference decodes them.
    vals = []
    for byte in range(256):
        e, mnt = (byte >> 3) & 0xF, byte & 7
        v = float("nan") if (e == 15 and mnt == 7) else (mnt / 8 * 2.0 ** -6 if e == 0 else (1 + mnt / 8) * 2.0 ** (e - 7))
        vals.append(-v if byte & 0x80 else v)
    return torch.tensor(vals, dtype=torch.float32, device=device)


def _spot_error(out, query, k_cache, k_cache_scale, v_cache, v_cache_scale, block_tables, seq_lens):
    # Relative error of sequences 0 and B - 1 against float32 attention over their dequantised
    # cache (bytes gathered as uint8, decoded by table): guards the sweep against a config that
    # builds and runs but computes something else.
    B, HQ, D = query.shape
    HK = k_cache.shape[2]
    table = _e4m3_table(query.device)
    worst = 0.0
    for b in sorted({0, B - 1}):
        n = int(seq_lens[b])
        blocks = block_tables[b, : triton.cdiv(n, PAGE)].long()
        k = (table[k_cache.view(torch.uint8)[blocks].long()] * k_cache_scale.float()).reshape(-1, HK, D)[:n]
        v = (table[v_cache.view(torch.uint8)[blocks].long()] * v_cache_scale.float()).reshape(-1, HK, D)[:n]
        k = k.repeat_interleave(HQ // HK, dim=1).transpose(0, 1)
        v = v.repeat_interleave(HQ // HK, dim=1).transpose(0, 1)
        s = torch.matmul(query[b].float().unsqueeze(1), k.transpose(1, 2)) / math.sqrt(D)
        ref = torch.matmul(torch.softmax(s, dim=-1), v).squeeze(1)
        worst = max(worst, float((out[b].float() - ref).norm() / ref.norm()))
    return worst


_CHOICE = {}


def _sweep(key, args):
    log = {"variant": NAME, "shape": list(key), "configs": {}, "spot": {}, "targets": {}}
    best = None
    for cfg in CONFIGS:
        try:
            us = _time_us(lambda: _run(cfg, TARGET_PROGRAMS, *args))
        except Exception as e:  # noqa: BLE001 - a config that does not build or launch is skipped
            log["configs"][str(cfg)] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1][:200] if str(e).strip() else "")
            continue
        log["configs"][str(cfg)] = round(us, 1)
        try:
            err = _spot_error(_run(cfg, TARGET_PROGRAMS, *args), *args)
            log["spot"][str(cfg)] = float("%.3g" % err)
        except Exception as e:  # noqa: BLE001 - the check itself failing does not disqualify the config
            err = 0.0
            log["spot"][str(cfg)] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1][:120] if str(e).strip() else "")
        if not err <= SPOT_TOL:
            log["configs"][str(cfg)] = "mismatch %.3g at %.1f us" % (err, us)
            continue
        if best is None or us < best[0]:
            best = (us, cfg, TARGET_PROGRAMS)
    if best is None:
        raise RuntimeError("%s: no config ran: %s" % (NAME, log["configs"]))
    cfg = best[1]
    B, HQ, HK, D, nblk, NB = key
    per_sm = (_BUILD.get(cfg) or {}).get("per_sm") if isinstance(_BUILD.get(cfg), dict) else None
    seen = {}
    for target in [TARGET_PROGRAMS] + TARGETS:
        splits, chunk = _splits(B, HK, nblk * PAGE, cfg[0], target)
        if splits in seen:
            continue
        seen[splits] = target
        us = _time_us(lambda: _run(cfg, target, *args), reps=REPS)
        log["targets"][target] = {"us": round(us, 1), "splits": splits, "chunk": chunk,
                                  "programs": B * HK * splits,
                                  "waves": round(B * HK * splits / (132.0 * per_sm), 2) if per_sm else None}
        if target == TARGET_PROGRAMS:
            best = (us, cfg, target)
        elif us < best[0] * (1 - MARGIN):
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
