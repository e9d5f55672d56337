# CPU emulation of cuda1's bookkeeping (fp8_gemm_sm90.cu), run with /usr/bin/python3 (torch):
# the persistent walk covers every tile once (graded shapes, 132 CTAs); the consumer's
# per-stage promotion with its scale indexing (rows clamped to M-1, B's block = the tile
# column), TMA's zero fill past M, N, K, and the masked stores reproduce the reference on
# small shapes with K % 16 == 0 (the kernel's domain). The wgmma's own rounding is not modelled.
import json
import sys

import torch

BM = BN = BK = 128
GROUP_M = 16


def tile_coords(t, tiles_m, tiles_n):
    width = GROUP_M * tiles_n
    first = (t // width) * GROUP_M
    rows = min(tiles_m - first, GROUP_M)
    return first + (t % width) % rows, (t % width) // rows


def coverage(M, N, sms=132):
    tm_, tn_ = -(-M // BM), -(-N // BN)
    seen = set()
    for cta in range(min(sms, tm_ * tn_)):
        for t in range(cta, tm_ * tn_, sms):
            seen.add(tile_coords(t, tm_, tn_))
    return len(seen) == tm_ * tn_ and all(0 <= a < tm_ and 0 <= b < tn_ for a, b in seen)


def emulate(a, sa, b, sb, promote=32):
    M, K = a.shape
    N = b.shape[0]
    nkb = -(-K // BK)
    ap = torch.zeros(-(-M // BM) * BM, nkb * BK)
    ap[:M, :K] = a  # TMA's zero fill
    bp = torch.zeros(-(-N // BN) * BN, nkb * BK)
    bp[:N, :K] = b
    out = torch.full((M, N), float("nan"))
    tiles_m, tiles_n = -(-M // BM), -(-N // BN)
    for t in range(tiles_m * tiles_n):
        tm, tn = tile_coords(t, tiles_m, tiles_n)
        rows = torch.arange(tm * BM, tm * BM + BM)
        acc = torch.zeros(BM, BN)
        for kb in range(nkb):
            s = sa[rows.clamp(max=M - 1), kb][:, None] * sb[tn, kb]
            for j in range(BK // promote):
                k0 = kb * BK + j * promote
                part = ap[tm * BM:tm * BM + BM, k0:k0 + promote] @ bp[tn * BN:tn * BN + BN, k0:k0 + promote].t()
                acc += part * s
        r1, c1 = min(M, tm * BM + BM), min(N, tn * BN + BN)
        out[tm * BM:r1, tn * BN:c1] = acc[:r1 - tm * BM, :c1 - tn * BN]
    return out.to(torch.bfloat16)


def main():
    task = json.load(open("catalog/tasks/fp8-blockscale-gemm/task.json"))
    ns = {}
    exec(task["definition"]["reference"]["source"], ns)
    ref = ns["fp8_blockscale_gemm"]
    w = task["workloads"]["synthetic"]
    for M, N, K in w["graded"]:
        print("coverage", M, N, K, coverage(M, N))
    g = torch.Generator().manual_seed(1)
    bad = 0
    for M, N, K in [(1, 128, 128), (256, 384, 512), (129, 257, 1008), (64, 128, 4112), (200, 300, 256)]:
        A = torch.randint(0, 256, (M, K), dtype=torch.uint8, generator=g)
        B = torch.randint(0, 256, (N, K), dtype=torch.uint8, generator=g)
        A[(A & 0x7F) == 0x7F] = 0
        B[(B & 0x7F) == 0x7F] = 0
        nkb = -(-K // BK)
        sa = torch.pow(2.0, torch.randint(-8, 0, (M, nkb), generator=g).float())
        sb = torch.pow(2.0, torch.randint(-8, 0, (-(-N // BN), nkb), generator=g).float())
        r = ref(A, sa, B, sb).float()
        a, b = ns["_decode"](A), ns["_decode"](B)
        for p in (32, 64, 128):
            e = emulate(a, sa, b, sb, p).float()
            err = ((e - r).abs() / (0.3 + 0.01 * r.abs())).max().item()
            ok = bool(torch.isfinite(e).all()) and err <= 1.0
            bad += not ok
            print("shape", M, N, K, "promote", p, "max err/bound %.3g" % err, "ok" if ok else "FAIL")
    print("failures", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
