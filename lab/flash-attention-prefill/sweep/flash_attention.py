# Causal flash attention (forward) in Triton.
# LAB VARIANT sweep (round 3): the catalog solution's kernel, byte for byte (so Triton's cache
# shares its builds with the solution's), under a logged per-shape config sweep.
#
# Hypothesis: on Hopper the softmax's exp2 (MUFU, 16 per clock per SM) costs about half the
# tile's wgmma time, and a Triton program cannot overlap the two inside one warpgroup the way
# FlashAttention-3's ping-pong schedule does. Two independent programs per SM can: with
# BLOCK_M = 64 and 4 warps (one warpgroup each, ~80-112 KB of shared memory) the warp
# schedulers interleave one program's softmax with the other's products. The solution's
# autotuner saw only (128, 64, 8, 3), (128, 128, 8, 3) and (64, 64, 4, 3); the sweep adds the
# 2-per-SM points with other depths and the 128-row tiles at 2 and 4 stages, times each on the
# graded shape with CUDA events, keeps the best per shape and logs every timing to stderr as
# one JSON line (data for the next round). A config that fails to build or launch is skipped.
#
# Kernel (as the solution): FlashAttention-2 schedule, one program per (query tile, batch x
# head), longest tiles first; K/V in column tiles through an online softmax in base 2 with the
# scale folded in; tiles left of the diagonal unmasked, the diagonal block masked, tiles right
# of it never loaded. BLOCK_N divides BLOCK_M in every config (the diagonal block is whole tiles).

import json
import math
import sys

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
DEFAULT = (128, 64, 8, 3)  # BLOCK_M, BLOCK_N, num_warps, num_stages
CONFIGS = {
    128: [(128, 64, 8, 3), (64, 64, 4, 3), (128, 128, 8, 2), (64, 64, 4, 2), (128, 64, 8, 4), (64, 32, 4, 4)],
    64: [(128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3), (128, 128, 8, 2), (64, 64, 4, 4), (128, 64, 4, 3)],
}
SWEEP_FROM_T = 4096


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


def _run(cfg, q, k, v, o):
    bm, bn, w, s = cfg
    B, H, T, D = q.shape
    _attn_fwd[(triton.cdiv(T, bm), B * H)](q, k, v, o, T, LOG2E / math.sqrt(D), HEAD_D=D, BLOCK_M=bm, BLOCK_N=bn,
                                          num_warps=w, num_stages=s)
    return o


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


def _sweep(key, q, k, v, o):
    log = {"variant": "prefill sweep", "shape": list(key), "configs": {}}
    best = None
    for cfg in CONFIGS.get(key[3], [DEFAULT]):
        try:
            us = _time_us(lambda: _run(cfg, q, k, v, o))
        except Exception as e:  # noqa: BLE001 - a config that does not build or launch is skipped
            log["configs"][str(cfg)] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1][:200] if str(e).strip() else "")
            continue
        log["configs"][str(cfg)] = round(us, 1)
        if best is None or us < best[0]:
            best = (us, cfg)
    if best is None:
        raise RuntimeError("prefill sweep: no config ran: %s" % log["configs"])
    log["chosen"] = [list(best[1]), round(best[0], 1)]
    print(json.dumps(log), file=sys.stderr, flush=True)
    return best[1]


def flash_attention(q, k, v):
    B, H, T, D = q.shape
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    o = torch.empty_like(q)
    if B * H * T == 0:
        return o
    if T < SWEEP_FROM_T:
        return _run(DEFAULT, q, k, v, o)
    key = (B, H, T, D)
    if key not in _CHOICE:
        _CHOICE[key] = _sweep(key, q, k, v, o)
    return _run(_CHOICE[key], q, k, v, o)
