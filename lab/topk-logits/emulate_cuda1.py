"""The algorithm of lab/topk-logits/cuda1/topk_kernel.cu, replayed on the CPU row by row
(block-level: the warps' slot order is irrelevant because the buffer is sorted), against a stable
descending sort, bit for bit (values as bits, and indices).

What it models: the sampled threshold (float32 sums over the first 2048 columns; the GPU's sum
order differs only in ulps, which changes which path a row takes, never its result), the buffer
of CAP keys with the count going on past it, the exact check, the sort of 64-bit keys
(order-preserving value bits << 32 | ~column, -0.0 keyed as +0.0), and the exact path as written:
4 passes of 8-bit digits from the top, `need` carried down, then the keys above the K-th and the
first `take` keys equal to it in column order.

  /usr/bin/python3 lab/topk-logits/emulate_cuda1.py [ROWS_AT_GRADED_WIDTHS]
"""
import math
import sys
from statistics import NormalDist

import torch

K, CAP, SAMPLE, E_ROW = 50, 512, 2048, 160


def okey(x):
    b = x.view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    b = torch.where(x == 0, torch.zeros_like(b), b)
    neg = (b & 0x80000000) != 0
    return torch.where(neg, (~b) & 0xFFFFFFFF, b | 0x80000000)


def full_keys(x, cols):
    # The kernel's unsigned 64-bit key, shifted down by 2^63 so that int64 keeps its order.
    return ((okey(x) - 0x80000000) << 32) | (0xFFFFFFFF - cols)


def threshold(row, V):
    if V <= CAP:
        return -math.inf
    z = NormalDist().inv_cdf(1.0 - min(E_ROW / V, 0.5))
    s = row[:min(V, SAMPLE)].to(torch.float32)
    mean = (s.sum() / s.numel()).item()
    sd = math.sqrt((((s - mean) ** 2).sum() / s.numel()).item()) if math.isfinite(mean) else math.nan
    return mean + z * sd


def exact(row):
    V = row.numel()
    u = okey(row)
    prefix, pmask, need = 0, 0, K
    for p in range(4):
        shift = 24 - 8 * p
        sel = u[(u & pmask) == prefix]
        hist = torch.bincount(((sel >> shift) & 255), minlength=256)
        acc = 0
        for d in range(255, -1, -1):
            if acc + int(hist[d]) >= need:
                break
            acc += int(hist[d])
        need -= acc
        prefix |= d << shift
        pmask |= 255 << shift
    kth, take = prefix, need
    cols = torch.arange(V, dtype=torch.int64)
    above = cols[u > kth]
    equal = cols[u == kth][:take]
    got = torch.cat([above, equal])
    assert got.numel() == K, (got.numel(), above.numel(), take)
    return full_keys(row[got], got)


def topk_row(row, force_exact=False):
    V = row.numel()
    t = threshold(row, V)
    cols = torch.arange(V, dtype=torch.int64)
    take = row >= t if not math.isnan(t) else torch.zeros(V, dtype=torch.bool)
    n = int(take.sum())
    if force_exact or n < K or n > CAP:
        keys, path = exact(row), "exact"
    else:
        keys, path = full_keys(row[take], cols[take]), "fast"
    keys = torch.sort(keys, descending=True).values[:K]
    idx = 0xFFFFFFFF - (keys & 0xFFFFFFFF)
    return row[idx], idx, path, n


def check(x, force_exact=False):
    rv, ri = torch.sort(x, dim=-1, descending=True, stable=True)
    rv, ri = rv[:, :K], ri[:, :K]
    bad, paths, counts = 0, {"fast": 0, "exact": 0}, []
    for r in range(x.shape[0]):
        v, i, path, n = topk_row(x[r], force_exact)
        paths[path] += 1
        counts.append(n)
        if not (torch.equal(i, ri[r]) and torch.equal(v.view(torch.int32), rv[r].view(torch.int32))):
            bad += 1
    return bad, paths, counts


def judge_like(B, V, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, V, generator=g)
    f = torch.rand(B, generator=g) * 2 - 1
    return x * torch.exp2(f).unsqueeze(1)


def adversarial(V, g):
    rows = [torch.zeros(V), torch.full((V,), 3.0), torch.arange(V, dtype=torch.float32),
            torch.arange(V, dtype=torch.float32).flip(0), torch.randint(0, 4, (V,), generator=g).float()]
    r = torch.randn(V, generator=g)
    r[::2] = -0.0
    r[1::7] = 0.0
    rows.append(r)
    r = torch.randn(V, generator=g)
    r[5] = math.inf
    r[V // 2] = -math.inf
    rows.append(r)
    r = torch.full((V,), -math.inf)
    rows.append(r)
    r = torch.randn(V, generator=g)
    r[-60:] = 50.0  # late spikes, tied
    rows.append(r)
    r = torch.randn(V, generator=g)
    r[:2048] = 0.0  # a flat sample: sd 0, the threshold the sample's mean
    rows.append(r)
    r = torch.randn(V, generator=g)
    kth = torch.sort(r, descending=True).values[K - 1]
    r[torch.randperm(V, generator=g)[:30]] = kth  # duplicates at the K-th place
    rows.append(r)
    return torch.stack(rows)


def main():
    n_graded = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    g = torch.Generator().manual_seed(7)
    total_bad = 0
    # the task's correctness shapes (64 x 32000 cut to 16 rows), then widths around the buffer and the sample
    shapes = [(1, 50), (3, 1000), (2, 4097), (16, 32000), (5, 65537), (4, 128256),
              (4, 511), (4, 512), (4, 513), (3, 51), (4, 2047), (4, 2049), (2, 32768)]
    for B, V in shapes:
        for seed in (1, 2):
            bad, paths, _ = check(judge_like(B, V, seed * 1000 + V))
            total_bad += bad
            print("judge-like %d x %d seed %d: bad %d, paths %s" % (B, V, seed, bad, paths))
    for B, V in ((n_graded, 131072), (n_graded // 2, 262144), (n_graded, 32768)):
        bad, paths, counts = check(judge_like(B, V, 99 + V))
        total_bad += bad
        print("graded width %d (%d rows): bad %d, paths %s, candidates min %d mean %.1f max %d (CAP %d)"
              % (V, B, bad, paths, min(counts), sum(counts) / len(counts), max(counts), CAP))
    for V in (1000, 4096, 32768, 131072):
        x = adversarial(V, g)
        for force in (False, True):
            bad, paths, _ = check(x, force)
            total_bad += bad
            print("adversarial V=%d%s: %d rows, bad %d, paths %s" % (V, " (exact forced)" if force else "", x.shape[0], bad, paths))
    bad, paths, _ = check(judge_like(8, 32768, 5), force_exact=True)
    total_bad += bad
    print("judge-like 8 x 32768, exact forced: bad %d" % bad)
    print("BAD %d" % total_bad)
    return 1 if total_bad else 0


if __name__ == "__main__":
    sys.exit(main())
