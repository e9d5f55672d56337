# Paged-attention decode over an fp8 KV cache in Triton, flash-decoding style.
# LAB VARIANT f8qk2 (round 6): the solution (round 5's vh16: V to fp16 by a non-hoistable asm
# cvt, then ldmatrix.trans) + round 5's f8qk (S^T = K Q^T as one fp8 wgmma, M = BLOCK_N tokens,
# N = 2 x 16, K read by the MMA straight from its cp.async buffer, q as two e4m3 halves hi + lo
# with an exact power-of-two row scale), with the per-thread register budget capped so that the
# combination keeps >= 3 programs an SM. The kernel is round 5's f8v16 unchanged; what changes is
# the launch: Triton's `maxnreg` compile option (ptxas --maxrregcount) and the configs swept.
#
# Why the cap and not the shared-memory budget: round 5's build lines (docs/catalog-runs/
# lab-1fc8dff/decode*_sweep.jsonl; per_sm from registers and shared memory) say residency was
# lost to REGISTERS, not shared memory:
#   vh16  (128,4,3): 128 regs, 38.0 KB shared -> 4 an SM   (the solution now; 694-708 us events)
#   f8qk  (128,4,3): 155 regs, 46.0 KB        -> 3 an SM   (700-713 us)
#   f8v16 (128,4,2): 253 regs, 56.0 KB        -> 2 an SM by registers (by shared memory 4)
#                                                           (860-895 us, the best f8v16 config)
#   f8v16 (64,4,3):  140 regs, 24.0 KB        -> 3 an SM, but BLOCK_N 64 costs ~40% at every
#                                                           build of round 5 (1050-1085 us)
# (128,4,3) of the combination was never built. BLOCK_N 64 is left out (every 64 config of round
# 5 lost 20-45% to its 128 twin: the per-step fixed cost dominates).
#
# Budget (4 warps = 128 threads; 65536 registers and 228 KB shared memory an SM; 1 KB reserved a
# block). Registers an SM: 3 programs need <= 170 regs (65536 / (3 x 128) = 170.7, allocation in
# 8-register units -> 168), 4 need <= 128. Shared memory: f8v16 (128,4,2) measured 56 KB; a third
# stage adds one K buffer (16 KB) and, if the pipeliner stages V through shared memory, one V
# buffer (16 KB): <= 88 KB. Swept (BLOCK_N, warps, stages, maxnreg; 0 = no cap):
#   (128, 4, 2, 168): 56 KB, <= 168 regs -> 3 an SM (by shared memory 4).
#   (128, 4, 3, 168): 56-88 KB, <= 168 regs -> 3 an SM if <= 75 KB, else 2 by shared memory
#                     (the build line says which); two steps of K/V in flight a program.
#   (128, 4, 2, 128): 56 KB, <= 128 regs -> 4 an SM (the solution's residency); spills likely
#                     (round 5's uncapped 253 includes the wgmma accumulator S^T, 32 regs, live
#                     beside the fp16 V fragments, 64); the build line's "spills" tells.
# In flight: at the target (560 us, 2.15 GB over 132 SMs) an SM takes ~29 B/ns, ~30 KB over ~1 us
# of loaded latency; 3 programs x 32 KB a step ahead = 96 KB: ample.
# Hypothesis: round 5's f8v16 lost because its 253 registers halved residency (2 an SM against
# vh16's 4), not because the two operand changes conflict; capped at 168 with 3 an SM (f8qk's
# residency, at which f8qk alone already beat the old solution by 3%), the K path's saving (no
# ldmatrix + 64 cvt + 64 fp16 fragment registers a step) adds to vh16's. Expected if right:
# ~600-640 us by events (ncu ~570-610 against the solution's 634-662), i.e. 3-8% on the solution;
# if the cap spills heavily, slower than the solution and the sweep/log say so. If `maxnreg` is
# not accepted by this Triton, every capped config fails to launch, is logged, and the sweep falls
# back to FALLBACK = (128, 4, 3, 0) (the uncapped combination at three stages, never built).
# Not verified here (no GPU, no Triton): that Triton 3.6 accepts `maxnreg` as a launch option
# (triton/backends/nvidia/compiler.py CUDAOptions.maxnreg -> the PTX .maxnreg directive, as read in
# its source; not run), the spill count under the cap, that the pipeliner keeps f8qk's wgmma
# path (extra K buffer) with V through the asm, and every figure above that is not a build line.
# Numerics: as f8v16 (emulate.py: worst rel-Frobenius 1.9e-3 under a 14-bit accumulator model,
# 9.5e-4 with fp32 accumulation; tolerance 1e-2).
#
# Config sweep (as round 5): at a shape whose KV cache exceeds SWEEP_FROM_BYTES, the first call
# times every CONFIGS entry at TARGET_PROGRAMS (CUDA events over 3 back-to-back calls), checks
# each against a float32 reference on two sequences (a config that disagrees is logged "mismatch"
# and never chosen), keeps the fastest and logs one JSON line on stderr with each build's
# registers, spills, shared memory and programs an SM.

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
DEFAULT = (128, 4, 2, 0)  # BLOCK_N, num_warps, num_stages, maxnreg (0: none); below the sweep size:
# round 5's f8v16 (128, 4, 2), built and correct on the H200, needs no maxnreg support.
CONFIGS = [(128, 4, 2, 168), (128, 4, 3, 168), (128, 4, 2, 128)]
FALLBACK = (128, 4, 3, 0)  # swept only when no CONFIGS entry ran (e.g. maxnreg refused)
TARGETS = []
SWEEP_FROM_BYTES = 256 << 20
SPOT_TOL = 1e-2  # the task's tolerance; a broken config is off by O(1)
NAME = "f8qk2"


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
    qf = tl.load(q_ptr + qrow[:, None] * D + d[None, :], mask=gm[:, None], other=0.0).to(tl.float32)
    # Row scale 2^(7 - floor(log2 amax)) from the exponent bits: exact, amax * qsc in [128, 256).
    amax = tl.max(tl.abs(qf), 1)
    ebits = tl.maximum((amax.to(tl.int32, bitcast=True) >> 23) & 0xFF, 7)
    qsc = tl.where(amax > 0, ((261 - ebits) << 23).to(tl.float32, bitcast=True), 1.0)
    qs = qf * qsc[:, None]
    q_hi = qs.to(tl.float8e4nv).to(tl.float32)  # round to nearest even, e4m3
    q_lo = qs - q_hi  # exact in float32; rounded to e4m3 below
    # Rows 2g and 2g + 1 of the B operand are query row g's two halves.
    qcat = tl.reshape(tl.permute(tl.join(q_hi, q_lo), (0, 2, 1)), (2 * GP, D)).to(tl.float8e4nv)
    qcat_t = tl.trans(qcat)  # [D, 2 GP], K-major in shared memory (D contiguous)
    colscale = sm_scale_log2 * tl.load(ks_ptr) / qsc
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
        # S^T = K Q^T: wgmma, M = BLOCK_N tokens, N = 2 GP, K = D, fp8 x fp8 -> fp32.
        s2 = tl.dot(k, qcat_t)
        s_hi, s_lo = tl.split(tl.reshape(s2, (BLOCK_N, GP, 2)))
        s_t = (s_hi + s_lo) * colscale[None, :]
        s_t = tl.where(tm[:, None], s_t, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s_t, 0))
        p_t = tl.math.exp2(s_t - m_new[None, :])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p_t, 0)
        # fp8 -> fp16 of V where Triton cannot hoist the dot-operand conversion above it (two
        # operands: not a "pure unary" asm). 4 bytes in one register (element 0 low) -> 2 x f16x2.
        vb = v.to(tl.int8, bitcast=True)
        vh = tl.inline_asm_elementwise(
            "{\n.reg .b16 ve0, ve1;\nmov.b32 {ve0, ve1}, $2;\n"
            "cvt.rn.f16x2.e4m3x2 $0, ve0;\ncvt.rn.f16x2.e4m3x2 $1, ve1;\n}",
            "=r,=r,r,r", [vb, vb], dtype=tl.float16, is_pure=True, pack=4)
        acc = tl.dot(tl.trans(p_t).to(tl.float16), vh, acc * alpha[:, None])
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
    bn, warps, stages, maxnreg = cfg
    extra = {"maxnreg": maxnreg} if maxnreg else {}
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
    for cfg in CONFIGS + [FALLBACK]:
        if cfg == FALLBACK and best is not None:
            break
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
