"""Round 4 lab variant "fused" of topk_logits (lab/topk-logits/NOTES.md): w1split's pass 1
with pass 2 folded into it (ONE kernel), done by the row's last segment to finish, while
the other programs on the GPU keep streaming; and one packed 64-bit key per candidate.

Byte and time budget per graded shape (2^29 floats each; 447.8 us of roofline = 2 GiB):
pass 1 reads 2 GiB and writes ~B*E*8 bytes of candidates (<= 17 MB, ~4 us); pass 2 reads
those again plus B*NS counts and thresholds and writes B*600 bytes (<= 27 MB in all at
B = 16384, ~6 us of bandwidth), so bytes are not pass 2's cost: its cost is B programs,
each a bitonic tl.sort of 256 (ns = 1) or 512 int64 keys in 4 warps, run after the last
byte of pass 1 has arrived, with the HBM idle. Round 3's figures fit that: both kernels lose
most at V = 32768 (B = 16384 rows to merge, 4-8x the other shapes), and w1split's pass 1
costs ~410 us + ~1.1 ms x (fraction of its tiles holding a candidate: 27 / 46 / 86%):
it reads near the roofline where candidates are sparse, and each candidate tile's
prefix sum and scattered stores (16 predicated st.global per array per lane, 64-bit
addresses each) cost ~250 SM cycles.
Hypothesis: (1) merging inside the streaming kernel hides the B sorts under other
programs' loads (no second launch, no idle HBM at the end; the sort runs in the one warp
that finished the row last, found by an acq_rel atomic per row after a barrier that orders
the warp's candidate stores); (2) storing ONE int64 key (order-preserving value bits << 32
| inverted column) per candidate instead of a float and an int halves the candidate
branch's stores and address arithmetic, and the merge sorts the keys as loaded. Pass 1
is otherwise w1split's (one warp per <= 32768-column segment, 512-float tiles, two in
flight, the row's shared threshold, the same E, caps and Z). The exact slow fallback is the
solution's, in one warp (tile 512), unchanged in what it computes.
Exactness as before: v >= max(t) <=> key >= okey(max t) << 32 (okey monotone, the low word
>= 0), so the check that every top-K element is a candidate is the same test on keys.
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
E_ROW = 128
E_ROW_SPLIT = 160
FT = 512  # fallback tile (one warp)


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
def _topk_fused(x_ptr, ck_ptr, cnt_ptr, thr_ptr, done_ptr, val_ptr, idx_ptr, V, SEG, NS, Z,
                TILE: tl.constexpr, SAMPLE: tl.constexpr, CAP: tl.constexpr, SLOTS: tl.constexpr,
                K: tl.constexpr, KS: tl.constexpr, FT: tl.constexpr):
    pid = tl.program_id(0)  # = row * NS + segment: the segments of a row are adjacent programs
    row = pid // NS
    s = pid - row * NS
    base = x_ptr + row.to(tl.int64) * V
    # ---- pass 1 (w1split's): the row's threshold from its first SAMPLE columns
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
            pos = n + tl.cumsum(ci, axis=0) - 1
            w = c & (pos < CAP)
            tl.store(ck_ptr + out + pos, _key64(xc, oc), mask=w)  # one 8-byte store per candidate
        n += k
    tl.store(cnt_ptr + pid, n)
    tl.store(thr_ptr + pid, t)
    # ---- the row's last segment to finish merges. The barrier orders every lane's stores
    # above before the release of the atomic (cumulative at gpu scope); the acquire side
    # orders the loads below after the other segments' releases; those loads bypass L1.
    tl.debug_barrier()
    prev = tl.atomic_add(done_ptr + row, 1, sem="acq_rel")
    if prev == NS - 1:
        rowl = row.to(tl.int64)
        j = tl.arange(0, SLOTS)
        present = j < NS * CAP
        sidx = j // CAP
        within = j % CAP
        cnt = tl.load(cnt_ptr + rowl * NS + sidx, mask=present, other=0, cache_modifier=".cg")
        thr = tl.load(thr_ptr + rowl * NS + sidx, mask=present, other=float("-inf"), cache_modifier=".cg")
        tmax = tl.max(thr, axis=0)
        most = tl.max(cnt, axis=0)
        valid = present & (within < cnt)
        rbase = rowl * NS * CAP
        key = tl.load(ck_ptr + rbase + j, mask=valid, other=-9223372036854775807 - 1, cache_modifier=".cg")
        key = tl.where(valid, key, -9223372036854775807 - 1)
        kt = _okey(tmax).to(tl.int64) << 32  # key >= kt  <=>  value >= tmax
        above = tl.sum((valid & (key >= kt)).to(tl.int32), axis=0)
        ok = (most <= CAP) & (above >= K)
        if ok:
            skey = tl.sort(key, descending=True)
            col = 2147483647 - skey.to(tl.int32)  # the low word: the inverted column
            top = j < K
            tl.store(idx_ptr + rowl * K + j, col, mask=top)
            tl.store(val_ptr + rowl * K + j, tl.load(base + col, mask=top, other=0.0), mask=top)
        else:
            far = tl.arange(0, FT)
            # T = the K-th largest key: the largest T with count(key >= T) >= K.
            lo = rowl * 0 - 2147483647 - 1  # int64: hi - lo + 1 overflows int32
            hi = rowl * 0 + 2147483647
            for _it in range(32):
                mid = lo + (hi - lo + 1) // 2
                cc = 0
                for fs in range(0, V, FT):
                    o = fs + far
                    m = o < V
                    kb = _okey(tl.load(base + o, mask=m, other=0.0)).to(tl.int64)
                    cc += tl.sum((m & (kb >= mid)).to(tl.int32), axis=0)
                ge = cc >= K
                lo = tl.where(ge, mid, lo)
                hi = tl.where(ge, hi, mid - 1)
            T = lo.to(tl.int32)
            ngt = 0
            for fs in range(0, V, FT):
                o = fs + far
                m = o < V
                kx = _okey(tl.load(base + o, mask=m, other=0.0))
                ngt += tl.sum((m & (kx > T)).to(tl.int32), axis=0)
            need = K - ngt  # >= 1: the first `need` keys equal to T by column
            nsel = 0
            neq = 0
            for fs in range(0, V, FT):
                o = fs + far
                m = o < V
                xv = tl.load(base + o, mask=m, other=0.0)
                kx = _okey(xv)
                gt = m & (kx > T)
                eq = m & (kx == T)
                eqi = eq.to(tl.int32)
                er = neq + tl.cumsum(eqi, axis=0) - 1
                sel = gt | (eq & (er < need))
                si = sel.to(tl.int32)
                pos2 = nsel + tl.cumsum(si, axis=0) - 1
                tl.store(ck_ptr + rbase + pos2, _key64(xv, o), mask=sel)
                nsel += tl.sum(si, axis=0)
                neq += tl.sum(eqi, axis=0)
            tl.debug_barrier()  # the block's global stores above, visible to the loads below
            kk = tl.arange(0, KS)
            inr = kk < K
            fk = tl.load(ck_ptr + rbase + kk, mask=inr, other=-9223372036854775807 - 1, cache_modifier=".cg")
            fk = tl.where(inr, fk, -9223372036854775807 - 1)
            # (names apart from the other branch's: Triton yields names defined in both; empty = int64 min)
            fkey = tl.sort(fk, descending=True)
            fcol = 2147483647 - fkey.to(tl.int32)
            tl.store(idx_ptr + rowl * K + kk, fcol, mask=inr)
            tl.store(val_ptr + rowl * K + kk, tl.load(base + fcol, mask=inr, other=0.0), mask=inr)


_PLANS = {}


def _plan(V):  # w1split's plan
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
    ck = torch.empty(B * ns * cap, dtype=torch.int64, device=x.device)
    cnt = torch.empty(B * ns, dtype=torch.int32, device=x.device)  # written by every program
    thr = torch.empty(B * ns, dtype=torch.float32, device=x.device)
    done = torch.zeros(B, dtype=torch.int32, device=x.device)  # segments finished, per row
    _topk_fused[(B * ns,)](x, ck, cnt, thr, done, values, indices, V, seg, ns, z,
                           TILE=tile, SAMPLE=sample, CAP=cap, SLOTS=slots, K=K, KS=64, FT=FT,
                           num_warps=1)
    return values, indices
