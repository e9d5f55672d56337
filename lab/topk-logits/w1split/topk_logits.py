"""Round 3 lab variant "w1split" of topk_logits (lab/topk-logits/NOTES.md).

Hypothesis: round 2's pass 1 (4-warp programs, a per-element relaxed atomic for
each candidate's slot, per-element pointer tensors for the counter) reads at half
the bandwidth because each program stalls on atomic round trips and block-wide
barriers and holds many registers, so too few bytes are in flight per SM. Here
pass 1 is one warp per (row, segment of <= 32768 columns): every reduction and
scan is warp shuffles only (no shared memory, no barrier), each lane issues
16-byte loads, TWO tiles are in flight ahead of the one being filtered
(prefetch distance 2), and a candidate's slot comes from a warp prefix sum
(no atomics; the scan runs only in tiles that hold a candidate). The threshold
is the row's, from the moments of its first 2048 columns, identical in every
segment of the row (no max-of-noisy-thresholds bias, so fewer candidates are
needed), and the segments of a row are adjacent programs (the sample is an L2
hit after the first). The counters need no zeroing (no memset launch).
Pass 2 (_merge, exact tie order, slow exact fallback) is round 2's, unchanged.
"""

import math
from statistics import NormalDist

import torch
import triton
import triton.language as tl

K = 50
TILE = 512  # one warp: 16 floats per lane per tile (4 x 16-byte loads), 2 tiles in flight ahead
SAMPLE = 2048  # columns of the row's start that set its threshold
SEGMAX = 32768
E_ROW = 128  # expected candidates per row (one segment; round 2's figure)
E_ROW_SPLIT = 160  # several segments: the same t in each (no max bias), a margin for the Poisson tail
FT = 1024  # fallback tile


@triton.jit
def _okey(x):
    # Order-preserving int32 key of a float32 (signed compare), -0.0 -> +0.0.
    b = x.to(tl.int32, bitcast=True)
    b = tl.where(x == 0.0, 0, b)
    return tl.where(b < 0, b ^ 0x7FFFFFFF, b)


@triton.jit
def _key64(v, i):
    return (_okey(v).to(tl.int64) << 32) | (2147483647 - i).to(tl.int64)


@triton.jit
def _select(x_ptr, cv_ptr, ci_ptr, cnt_ptr, thr_ptr, V, SEG, NS, Z,
            TILE: tl.constexpr, SAMPLE: tl.constexpr, CAP: tl.constexpr):
    pid = tl.program_id(0)  # = row * NS + segment: the segments of a row are adjacent programs
    row = pid // NS
    s = pid - row * NS
    base = x_ptr + row.to(tl.int64) * V
    # The row's threshold t = mean + Z * std of its first SAMPLE columns: the same
    # sample, code and order in every segment of the row, so the same t.
    sa = tl.arange(0, SAMPLE)
    xs = tl.load(base + sa, mask=sa < V, other=0.0)
    n0 = tl.minimum(V, SAMPLE).to(tl.float32)
    mean = tl.sum(xs, axis=0) / n0
    var = tl.maximum(tl.sum(xs * xs, axis=0) / n0 - mean * mean, 0.0)
    t = mean + Z * tl.sqrt(var)
    t = tl.where(t == t, t, float("-inf"))  # NaN (infinite inputs): take everything -> overflow -> exact path
    start = s * SEG
    end = tl.minimum(start + SEG, V)
    ar = tl.arange(0, TILE)
    out = pid.to(tl.int64) * CAP
    o1 = start + ar
    xa = tl.load(base + o1, mask=o1 < end, other=0.0)
    o2 = o1 + TILE
    xb = tl.load(base + o2, mask=o2 < end, other=0.0)
    n = 0
    for st in range(start, end, TILE):
        xc = xa
        xa = xb
        on = st + 2 * TILE + ar
        xb = tl.load(base + on, mask=on < end, other=0.0)  # two tiles ahead of the one filtered
        oc = st + ar
        c = (oc < end) & (xc >= t)
        ci = c.to(tl.int32)
        k = tl.sum(ci, axis=0)
        if k > 0:
            # Slots in column order: the warp's inclusive prefix sum of the flags.
            pos = n + tl.cumsum(ci, axis=0) - 1
            w = c & (pos < CAP)
            tl.store(cv_ptr + out + pos, xc, mask=w)
            tl.store(ci_ptr + out + pos, oc, mask=w)
        n += k
    # The segment's candidate count (> CAP: overflow -> pass 2's exact path) and t.
    tl.store(cnt_ptr + pid, n)
    tl.store(thr_ptr + pid, t)


@triton.jit(do_not_specialize=["V", "NS"])  # fewer compiles; no vector loads here
def _merge(x_ptr, cv_ptr, ci_ptr, cnt_ptr, thr_ptr, val_ptr, idx_ptr, V, NS,
           CAP: tl.constexpr, SLOTS: tl.constexpr, K: tl.constexpr, KS: tl.constexpr, FT: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    j = tl.arange(0, SLOTS)
    present = j < NS * CAP
    sidx = j // CAP
    within = j % CAP
    cnt = tl.load(cnt_ptr + row * NS + sidx, mask=present, other=0)
    thr = tl.load(thr_ptr + row * NS + sidx, mask=present, other=float("-inf"))
    tmax = tl.max(thr, axis=0)
    most = tl.max(cnt, axis=0)
    valid = present & (within < cnt)
    rbase = row * NS * CAP
    v = tl.load(cv_ptr + rbase + j, mask=valid, other=float("-inf"))
    i = tl.load(ci_ptr + rbase + j, mask=valid, other=0)
    i = tl.where(valid, i, V)
    above = tl.sum((valid & (v >= tmax)).to(tl.int32), axis=0)
    ok = (most <= CAP) & (above >= K)
    if ok:
        key = tl.sort(_key64(v, i), descending=True)
        col = 2147483647 - key.to(tl.int32)  # the low word: the inverted column
        top = j < K
        tl.store(idx_ptr + row * K + j, col, mask=top)
        tl.store(val_ptr + row * K + j, tl.load(x_ptr + row * V + col, mask=top, other=0.0), mask=top)
    else:
        base = x_ptr + row * V
        ar = tl.arange(0, FT)
        # T = the K-th largest key: the largest T with count(key >= T) >= K.
        lo = row * 0 - 2147483647 - 1
        hi = row * 0 + 2147483647
        for _it in range(32):
            mid = lo + (hi - lo + 1) // 2
            c = 0
            for st in range(0, V, FT):
                o = st + ar
                m = o < V
                kb = _okey(tl.load(base + o, mask=m, other=0.0)).to(tl.int64)
                c += tl.sum((m & (kb >= mid)).to(tl.int32), axis=0)
            ge = c >= K
            lo = tl.where(ge, mid, lo)
            hi = tl.where(ge, hi, mid - 1)
        T = lo.to(tl.int32)
        ngt = 0
        for st in range(0, V, FT):
            o = st + ar
            m = o < V
            kx = _okey(tl.load(base + o, mask=m, other=0.0))
            ngt += tl.sum((m & (kx > T)).to(tl.int32), axis=0)
        need = K - ngt  # >= 1: the first `need` keys equal to T by column
        nsel = 0
        neq = 0
        for st in range(0, V, FT):
            o = st + ar
            m = o < V
            xv = tl.load(base + o, mask=m, other=0.0)
            kx = _okey(xv)
            gt = m & (kx > T)
            eq = m & (kx == T)
            eqi = eq.to(tl.int32)
            er = neq + tl.cumsum(eqi, axis=0) - 1
            sel = gt | (eq & (er < need))
            si = sel.to(tl.int32)
            pos = nsel + tl.cumsum(si, axis=0) - 1
            tl.store(cv_ptr + rbase + pos, xv, mask=sel)
            tl.store(ci_ptr + rbase + pos, o, mask=sel)
            nsel += tl.sum(si, axis=0)
            neq += tl.sum(eqi, axis=0)
        tl.debug_barrier()  # the block's global stores above, visible to the loads below
        kk = tl.arange(0, KS)
        inr = kk < K
        kv = tl.load(cv_ptr + rbase + kk, mask=inr, other=float("-inf"))
        ki = tl.load(ci_ptr + rbase + kk, mask=inr, other=0)
        ki = tl.where(inr, ki, V)
        # (names apart from the other branch's: Triton yields names defined in both)
        fkey = tl.sort(_key64(kv, ki), descending=True)
        fcol = 2147483647 - fkey.to(tl.int32)
        tl.store(idx_ptr + row * K + kk, fcol, mask=inr)
        tl.store(val_ptr + row * K + kk, tl.load(base + fcol, mask=inr, other=0.0), mask=inr)


_PLANS = {}


def _plan(V):
    p = _PLANS.get(V)
    if p is None:
        tile = min(TILE, triton.next_power_of_2(V))
        sample = min(SAMPLE, triton.next_power_of_2(V))
        ns = triton.cdiv(V, SEGMAX)
        seg = triton.cdiv(triton.cdiv(V, ns), tile) * tile
        ns = triton.cdiv(V, seg)
        e_row = E_ROW if ns == 1 else E_ROW_SPLIT
        e = 1.3 * e_row * min(seg, V) / V  # per segment, with room for the estimate's error
        cap = max(64, triton.next_power_of_2(int(math.ceil(e + 6.5 * math.sqrt(e)))))
        if V <= cap:
            z = float("-inf")  # every element is a candidate
        else:
            z = NormalDist().inv_cdf(1.0 - e_row / V)
        slots = triton.next_power_of_2(ns * cap)
        p = _PLANS[V] = (tile, sample, ns, seg, cap, z, slots)
    return p


def topk_logits(logits):
    B, V = logits.shape
    if V < K or B == 0 or logits.dtype != torch.float32:
        v, i = torch.sort(logits, dim=-1, descending=True, stable=True)
        return v[:, :K].contiguous(), i[:, :K].contiguous()
    x = logits.contiguous()
    values = torch.empty(B, K, dtype=torch.float32, device=x.device)
    indices = torch.empty(B, K, dtype=torch.int64, device=x.device)
    tile, sample, ns, seg, cap, z, slots = _plan(V)
    cv = torch.empty(B * ns * cap, dtype=torch.float32, device=x.device)
    ci = torch.empty(B * ns * cap, dtype=torch.int32, device=x.device)
    cnt = torch.empty(B * ns, dtype=torch.int32, device=x.device)  # written by every pass-1 program
    thr = torch.empty(B * ns, dtype=torch.float32, device=x.device)
    _select[(B * ns,)](x, cv, ci, cnt, thr, V, seg, ns, z, TILE=tile, SAMPLE=sample, CAP=cap,
                       num_warps=1)
    _merge[(B,)](x, cv, ci, cnt, thr, values, indices, V, ns, CAP=cap, SLOTS=slots, K=K, KS=64, FT=FT,
                 num_warps=4 if slots <= 512 else 8)
    return values, indices
