# CPU emulation of round 7's bookkeeping (NOTES.md "Round 7"), run with /usr/bin/python3 (torch),
# from the repository root. Per variant (n192: 128x192 tiles; m192w3: 192x128 tiles; n192mc:
# 128x192 tiles walked as vertical pairs by clusters of two CTAs):
# - the persistent walk, written as the kernel does it (grid, tile_coords, pairs), covers every
#   tile of the graded shapes exactly once, and the waves it takes against the ideal;
# - the consumer's per-stage promotion with the kernel's scale choice (B's lower/upper 128-column
#   scale block by n8 block class 0-7 / 8-15 / 16-23 and tile-column parity, upper clamped to the
#   last block; A rows clamped to M-1), TMA's zero fill and the masked stores reproduce the
#   reference within the bound on small shapes (the wgmma's own rounding not modelled).
import json
import sys

import torch

BK = 128
VARIANTS = {"n192": (128, 192, 1, 16), "m192w3": (192, 128, 1, 16), "n192mc": (128, 192, 2, 8)}
SMS, MAX_CLUSTERS = 132, 66  # MAX_CLUSTERS: an assumption (cudaOccupancyMaxActiveClusters decides)


def tile_coords(t, tiles_m, tiles_n, group_m):
    width = group_m * tiles_n
    first = (t // width) * group_m
    rows = min(tiles_m - first, group_m)
    return first + (t % width) % rows, (t % width) // rows


def walk(M, N, v):
    """Per CTA, the tiles (tm, tn) it computes, in order, as the kernel walks them."""
    bm, bn, cl, gm = VARIANTS[v]
    tiles_m, tiles_n = -(-M // bm), -(-N // bn)
    if cl == 1:
        grid = min(tiles_m * tiles_n, SMS)
        return [[tile_coords(t, tiles_m, tiles_n, gm) for t in range(c, tiles_m * tiles_n, grid)] for c in range(grid)]
    pairs_m = (tiles_m + 1) // 2
    pairs = pairs_m * tiles_n
    nclusters = min(pairs, MAX_CLUSTERS)
    out = []
    for b in range(nclusters * cl):
        cid, rank = b // cl, b % cl
        lst = []
        for t in range(cid, pairs, nclusters):
            pm, tn = tile_coords(t, pairs_m, tiles_n, gm)
            lst.append((2 * pm + rank, tn))
        out.append(lst)
    return out


def coverage(M, N, v):
    bm, bn, _, _ = VARIANTS[v]
    tiles_m, tiles_n = -(-M // bm), -(-N // bn)
    seen = [x for c in walk(M, N, v) for x in c if x[0] < tiles_m]  # tm == tiles_m: wholly past M
    waves = max(len(c) for c in walk(M, N, v))
    ideal = M * N / (128 * 128 * SMS) * (128 * 128) / (bm * bn)
    ok = len(seen) == len(set(seen)) == tiles_m * tiles_n and all(0 <= b < tiles_n for _, b in seen)
    return ok, waves, ideal


def emulate(a, sa, b, sb, v):
    bm, bn, _, _ = VARIANTS[v]
    M, K = a.shape
    N = b.shape[0]
    nkb, nbn = -(-K // BK), -(-N // 128)
    tiles_m, tiles_n = -(-M // bm), -(-N // bn)
    ap = torch.zeros((tiles_m + 1) * bm, nkb * BK)
    ap[:M, :K] = a  # TMA's zero fill (one more tile row: the pair's wholly-out tile)
    bp = torch.zeros(tiles_n * bn, nkb * BK)
    bp[:N, :K] = b
    out = torch.full((M, N), float("nan"))
    # The kernel's B scale block per tile column j (fragment n8 block i = j // 8, class i // 8).
    for cta in walk(M, N, v):
        for tm, tn in cta:
            rows = torch.arange(tm * bm, tm * bm + bm)
            if bn == 192:
                blo = (tn * bn) // 128
                bhi = min(blo + 1, nbn - 1)
                cls = torch.arange(bn) // 64
                mid = bhi if tn & 1 else blo
                cblk = torch.where(cls == 0, torch.tensor(blo), torch.where(cls == 2, torch.tensor(bhi), torch.tensor(mid)))
            else:
                cblk = torch.full((bn,), tn)
            acc = torch.zeros(bm, bn)
            for kb in range(nkb):
                s = sa[rows.clamp(max=M - 1), kb][:, None] * sb[cblk, kb][None, :]
                k0 = kb * BK
                acc += (ap[tm * bm:tm * bm + bm, k0:k0 + BK] @ bp[tn * bn:tn * bn + bn, k0:k0 + BK].t()) * s
            r1, c1 = min(M, tm * bm + bm), min(N, tn * bn + bn)
            if r1 > tm * bm:
                out[tm * bm:r1, tn * bn:c1] = acc[:r1 - tm * bm, :c1 - tn * bn]
    return out.to(torch.bfloat16)


def main():
    task = json.load(open("catalog/tasks/fp8-blockscale-gemm/task.json"))
    ns = {}
    exec(task["definition"]["reference"]["source"], ns)
    ref = ns["fp8_blockscale_gemm"]
    bad = 0
    for v in VARIANTS:
        for M, N, K in task["workloads"]["synthetic"]["graded"]:
            ok, waves, ideal = coverage(M, N, v)
            bad += not ok
            print(v, "coverage", M, N, K, ok, "tiles per CTA (max) %d, ideal %.2f" % (waves, ideal))
    g = torch.Generator().manual_seed(1)
    for M, N, K in [(1, 128, 128), (256, 384, 512), (129, 257, 1008), (64, 128, 4112), (200, 300, 256),
                    (300, 600, 384), (385, 200, 256)]:
        A = torch.randint(0, 256, (M, K), dtype=torch.uint8, generator=g)
        B = torch.randint(0, 256, (N, K), dtype=torch.uint8, generator=g)
        A[(A & 0x7F) == 0x7F] = 0
        B[(B & 0x7F) == 0x7F] = 0
        nkb = -(-K // BK)
        sa = torch.pow(2.0, torch.randint(-8, 0, (M, nkb), generator=g).float())
        sb = torch.pow(2.0, torch.randint(-8, 0, (-(-N // 128), nkb), generator=g).float())
        r = ref(A, sa, B, sb).float()
        a, b = ns["_decode"](A), ns["_decode"](B)
        for v in VARIANTS:
            e = emulate(a, sa, b, sb, v).float()
            err = ((e - r).abs() / (0.3 + 0.01 * r.abs())).max().item()
            ok = bool(torch.isfinite(e).all()) and err <= 1.0
            bad += not ok
            print("shape", M, N, K, v, "max err/bound %.3g" % err, "ok" if ok else "FAIL")
    print("failures", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
