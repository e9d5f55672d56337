# CPU checks of lab round 10's `c128` (NOTES.md "Round 10"), run with /usr/bin/python3 (torch)
# from the repository root; output emulate_c128.txt. Written from c128/fp8_gemm_sm90.cu, not
# read from it: a change there needs the same change here.
# (1) The walk over tile pairs (walk_coords, tm = 2 pm + rank, grid = min(pairs, clusters)) covers
#     every tile exactly once, both CTAs of a cluster run the same number of stages; at every
#     correctness, measure and graded shape plus odd tile-row shapes, for 66, 60, 3 and 1
#     clusters, and the control's plain walk (KZOO_MC=0) for 132, 120, 6 and 1 CTAs.
# (2) The cluster ring protocol under random interleavings: two producers, 8 consumer warps a CTA
#     (lane 0's local and lane 1's remote arrival as separate steps), each TMA box landing at a
#     random later time (a multicast box lands in each CTA separately), mbarriers with phase,
#     pending-arrival and tx counts, try_wait by parity (aliasing checked), 6 stages, the cluster
#     barrier before exit. Checked: no deadlock; a stage's data all landed and from the right
#     fill when a warp starts reading it; no box lands in a stage while a warp of that CTA reads
#     it; every phase's expect_tx equals the bytes delivered to it; no arrival or delivery on an
#     exited CTA. Negative controls (must be caught): the empty barrier counting local consumers
#     only, a box expected but not loaded, a box loaded but not expected, no cluster barrier at exit.
# (3) The data path: per cluster and rank, the stage buffers as the kernel fills them (A box, B's
#     two 64-row halves from the two ranks' multicasts, TMA zero fill; boxes wholly outside the
#     tensor not loaded and left holding NaN, standing for stale shared memory), the promotion
#     per 128-deep block with A's row scale (rows clamped to M-1) x the tile column's B block
#     scale, bf16 stores clipped at M and N; against the task's reference within the bound
#     (0.3 + 0.01 |ref|) and the comparator (relative Frobenius 0.01), at small ragged shapes.
#     The wgmma's own rounding is not modelled (float32 products of exact fp8 values).
import json
import random
import sys

import torch

BM = BN = BK = 128
STAGES = 6
GROUP_ROWS_MC, GROUP_ROWS_1 = 8, 16  # walk rows per band: 8 pairs = 16 tile rows, as the control
A_BYTES, B_HALF_BYTES = BM * BK, (BN // 2) * BK
LOG = []


def say(*a):
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.append(s)


# ---------------------------------------------------------------- (1) the walk
def walk_coords(t, rows_total, tiles_n, group):
    width = group * tiles_n
    first = (t // width) * group
    rows = min(rows_total - first, group)
    return first + (t % width) % rows, (t % width) // rows


def cluster_walk(M, N, nclusters, cluster):
    """Per CTA (cluster id, rank): the list of (tm, tn) it computes, as the kernel walks."""
    tiles_m, tiles_n = -(-M // BM), -(-N // BN)
    rows_walk = -(-tiles_m // cluster)
    walk_len = rows_walk * tiles_n
    grid = min(walk_len, nclusters)
    group = GROUP_ROWS_MC if cluster == 2 else GROUP_ROWS_1
    ctas = {}
    for cid in range(grid):
        for rank in range(cluster):
            lst = []
            for t in range(cid, walk_len, grid):
                pm, tn = walk_coords(t, rows_walk, tiles_n, group)
                lst.append((pm * cluster + rank, tn))
            ctas[(cid, rank)] = lst
    return ctas, tiles_m, tiles_n


def check_walk(M, N, nclusters, cluster):
    ctas, tiles_m, tiles_n = cluster_walk(M, N, nclusters, cluster)
    seen = {}
    for lst in ctas.values():
        for tm, tn in lst:
            if tm < tiles_m:
                seen[(tm, tn)] = seen.get((tm, tn), 0) + 1
            elif tm != tiles_m or cluster == 1:
                return False, "tile row %d out of range" % tm
    ok = len(seen) == tiles_m * tiles_n and all(v == 1 for v in seen.values())
    if cluster == 2:  # both CTAs of a cluster run the same stages (same pairs)
        ok = ok and all(len(ctas[(c, 0)]) == len(ctas[(c, 1)]) for c, r in ctas if r == 0)
    most = max(len(v) for v in ctas.values())
    return ok, "tiles per CTA (max) %d, ideal %.2f" % (most, tiles_m * tiles_n / (len(ctas)))


# ---------------------------------------------------------------- (2) the ring protocol
class Deadlock(Exception):
    pass


class Violation(Exception):
    pass


class MBar:
    def __init__(self, count):
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0
        self.expected, self.delivered = 0, 0  # bytes, this phase

    def _check(self):
        if self.pending == 0 and self.tx == 0:
            if self.expected != self.delivered:
                raise Violation("phase %d: expect_tx %d != delivered %d" % (self.phase, self.expected, self.delivered))
            self.phase += 1
            self.pending, self.expected, self.delivered = self.count, 0, 0
        elif self.pending < 0:
            raise Violation("more arrivals than the count")

    def arrive(self, tx=0):
        self.tx += tx
        self.expected += tx
        self.pending -= 1
        self._check()

    def complete_tx(self, b):
        self.tx -= b
        self.delivered += b
        self._check()

    def passes(self, parity, need):
        """try_wait.parity: passes once the phase of that parity has completed; need = the
        completed-phase count the waiter really needs (aliasing check)."""
        ok = (self.phase & 1) != parity
        if ok and not (need <= self.phase <= need + 1):
            raise Violation("parity alias: need %d phases, have %d" % (need, self.phase))
        return ok


def run_protocol(fills, hi_in, a_in, seed, bug=None, stages=STAGES):
    """fills: stages per CTA (same for both); a_in[c][i]: CTA c loads its A at fill i; hi_in[i]:
    B's upper half is inside N at fill i. Returns the number of scheduler steps."""
    rng = random.Random(seed)
    nw = 8
    local_only = bug == "local-only"
    full = [[MBar(1) for _ in range(stages)] for _ in range(2)]
    empty = [[MBar(nw if local_only else 2 * nw) for _ in range(stages)] for _ in range(2)]
    # stage contents: region -> fill index that wrote it (A, B0, B1)
    buf = [[{"A": None, "B0": None, "B1": None} for _ in range(stages)] for _ in range(2)]
    readers = [[0] * stages for _ in range(2)]
    flight = []  # (target cta, stage, region, fill, bytes)
    prod = [0, 0]  # next fill
    # consumer warp state: (fill index, step) step 0 wait full, 1/2 arrivals pending (a set)
    warps = [[[0, None] for _ in range(nw)] for _ in range(2)]
    reading = [[False] * nw for _ in range(2)]
    at_exit = [0, 0]  # threads (actors) at the cluster barrier
    exited = [False, False]
    speed = [rng.uniform(0.2, 5.0) for _ in range(2 + 2 * nw)] + [rng.uniform(0.2, 5.0)]
    steps = 0

    def mine(c, i):
        return c == 0 or hi_in[i]

    def tx_of(c, i):
        t = (A_BYTES if a_in[c][i] else 0) + (2 if hi_in[i] else 1) * B_HALF_BYTES
        if bug == "expect-unloaded":  # expects both halves always
            t = (A_BYTES if a_in[c][i] else 0) + 2 * B_HALF_BYTES
        if bug == "unexpected-load":  # does not count the partner's half
            t = (A_BYTES if a_in[c][i] else 0) + B_HALF_BYTES
        return t

    def deliver(c, s, region, i, nbytes):
        if exited[c]:
            raise Violation("TMA delivery into exited CTA %d" % c)
        if readers[c][s]:
            raise Violation("CTA %d stage %d overwritten (fill %d, %s) while %d warps read it" % (c, s, i, region, readers[c][s]))
        buf[c][s][region] = i
        full[c][s].complete_tx(nbytes)

    while True:
        acts = []
        for c in range(2):
            if prod[c] < fills:
                i = prod[c]
                s, rnd = i % stages, i // stages
                if empty[c][s].passes((rnd & 1) ^ 1, rnd):
                    acts.append(("prod", c))
            elif prod[c] == fills:
                acts.append(("prod_exit", c))
            for w in range(nw):
                i, pend = warps[c][w]
                if i < fills and pend is None:
                    s, rnd = i % stages, i // stages
                    if full[c][s].passes(rnd & 1, rnd + 1):
                        acts.append(("wfull", c, w))
                elif i < fills:
                    for a in pend:
                        acts.append(("warr", c, w, a))
                elif i == fills:
                    acts.append(("wexit", c, w))
        for k in range(len(flight)):
            acts.append(("land", k))
        if not acts:
            if at_exit == [1 + nw, 1 + nw]:
                return steps
            raise Deadlock("deadlock at step %d: prod %s, warps %s, in flight %d" % (
                steps, prod, [[x[0] for x in ws] for ws in warps], len(flight)))
        # weighted choice: per-actor speeds make one CTA run ahead of the other
        wts = []
        for a in acts:
            if a[0] in ("prod", "prod_exit"):
                wts.append(speed[a[1]])
            elif a[0] in ("wfull", "warr", "wexit"):
                wts.append(speed[2 + a[1] * nw + a[2]])
            else:
                wts.append(speed[-1])
        a = rng.choices(acts, wts)[0]
        steps += 1
        if a[0] == "prod":
            c = a[1]
            i = prod[c]
            s = i % stages
            full[c][s].arrive(tx_of(c, i))
            if a_in[c][i]:
                flight.append((c, s, "A", i, A_BYTES))
            if mine(c, i):
                for t in range(2):  # the multicast lands in each CTA on its own time
                    flight.append((t, s, "B%d" % c, i, B_HALF_BYTES))
            prod[c] += 1
        elif a[0] == "prod_exit":
            c = a[1]
            prod[c] += 1
            at_exit[c] += 1
        elif a[0] == "land":
            t, s, region, i, nb = flight.pop(a[1])
            deliver(t, s, region, i, nb)
        elif a[0] == "wfull":
            _, c, w = a
            i = warps[c][w][0]
            s = i % stages
            b = buf[c][s]
            need = (["A"] if a_in[c][i] else []) + ["B0"] + (["B1"] if hi_in[i] else [])
            for r in need:
                if b[r] != i:
                    raise Violation("CTA %d warp %d reads fill %d: %s holds fill %s" % (c, w, i, r, b[r]))
            readers[c][s] += 1
            reading[c][w] = True
            warps[c][w][1] = {"local"} if local_only else {"local", "remote"}
        elif a[0] == "warr":
            _, c, w, kind = a
            i = warps[c][w][0]
            s = i % stages
            pend = warps[c][w][1]
            if reading[c][w]:  # both lanes arrive after the warp's wgmma wait: its reads are done
                readers[c][s] -= 1
                reading[c][w] = False
            pend.discard(kind)
            if kind == "local":
                empty[c][s].arrive()
            else:
                if exited[1 - c]:
                    raise Violation("remote arrival on exited CTA %d" % (1 - c))
                empty[1 - c][s].arrive()
            if not pend:
                warps[c][w] = [i + 1, None]
        elif a[0] == "wexit":
            _, c, w = a
            warps[c][w][0] += 1
            at_exit[c] += 1
        if bug == "no-exit-barrier":
            for c in range(2):
                if at_exit[c] == 1 + nw and not exited[c]:
                    exited[c] = True  # exits at once, the partner may still arrive
        elif at_exit == [1 + nw, 1 + nw]:
            exited = [True, True]
            # the barrier: nothing may remain in flight or owed
            if flight:
                raise Violation("boxes in flight at exit")
            for c in range(2):
                for s in range(stages):
                    if full[c][s].pending != 1 or full[c][s].tx or empty[c][s].tx:
                        raise Violation("barrier mid-phase at exit")
            return steps


def protocol_cases():
    """(name, fills, hi_in per fill, a_in per CTA per fill) from real walks: a cluster's pairs."""
    cases = []
    for M, N, K, nclusters in [(384, 150, 512, 1), (256, 384, 640, 2), (640, 200, 384, 1), (1, 100, 300, 1),
                               (384, 300, 1024, 1)]:
        ctas, tiles_m, tiles_n = cluster_walk(M, N, nclusters, 2)
        nkb = -(-K // BK)
        lst0, lst1 = ctas[(0, 0)], ctas[(0, 1)]
        hi, a0, a1 = [], [], []
        for (tm0, tn), (tm1, _) in zip(lst0, lst1):
            for _ in range(nkb):
                hi.append(tn * BN + BN // 2 < N)
                a0.append(tm0 < tiles_m)
                a1.append(tm1 < tiles_m)
        cases.append(("M%d N%d K%d cluster 0 of %d" % (M, N, K, nclusters), len(hi), hi, [a0, a1]))
    return cases


# ---------------------------------------------------------------- (3) the data path
def emulate(a, sa, b, sb, nclusters, bug=None):
    M, K = a.shape
    N = b.shape[0]
    nkb = -(-K // BK)
    ctas, tiles_m, tiles_n = cluster_walk(M, N, nclusters, 2)
    ap = torch.zeros((tiles_m + 1) * BM, nkb * BK)
    ap[:M, :K] = a  # TMA's zero fill past M and K
    bp = torch.zeros(tiles_n * BN, nkb * BK)
    bp[:N, :K] = b
    out = torch.full((M, N), float("nan"))
    nan = float("nan")
    for (cid, rank), lst in ctas.items():
        partner = ctas[(cid, 1 - rank)]
        for (tm, tn), (tmp, _) in zip(lst, partner):
            acc = torch.zeros(BM, BN)
            for kb in range(nkb):
                k0 = kb * BK
                # this CTA's stage: its own A box; B's half 0 from rank 0's multicast, half 1 from
                # rank 1's unless wholly past N (not loaded: stale, NaN here)
                A_box = ap[tm * BM:tm * BM + BM, k0:k0 + BK] if tm < tiles_m else torch.full((BM, BK), nan)
                hi_in = tn * BN + BN // 2 < N
                B_box = torch.full((BN, BK), nan)
                B_box[:BN // 2] = bp[tn * BN:tn * BN + BN // 2, k0:k0 + BK]  # rank 0's box
                if hi_in:
                    B_box[BN // 2:] = bp[tn * BN + BN // 2:tn * BN + BN, k0:k0 + BK]  # rank 1's box
                rows = torch.arange(tm * BM, tm * BM + BM).clamp(max=M - 1)
                bblk = min(tn + 1, sb.shape[0] - 1) if bug == "b-scale-next" else tn
                s = sa[rows, kb][:, None] * sb[bblk, kb]
                # the two consumer warpgroups: rows 0-63 and 64-127, each its own partial
                for cw in range(2):
                    r = slice(64 * cw, 64 * cw + 64)
                    p = A_box[r] @ B_box.t()
                    acc[r] = torch.addcmul(acc[r], p, s[r].expand(64, BN))
            r1, c1 = min(M, tm * BM + BM), min(N, tn * BN + BN)
            if r1 > tm * BM:  # TMA store clips at M and N (the register epilogue masks alike)
                out[tm * BM:r1, tn * BN:c1] = acc[:r1 - tm * BM, :c1 - tn * BN]
    return out.to(torch.bfloat16)


def main():
    task = json.load(open("catalog/tasks/fp8-blockscale-gemm/task.json"))
    ns = {}
    exec(task["definition"]["reference"]["source"], ns)
    ref = ns["fp8_blockscale_gemm"]
    wl = task["workloads"]["synthetic"]
    bad = 0

    say("== (1) walk coverage")
    shapes = wl["correctness"] + wl["measure"] + wl["graded"] + [
        [384, 384, 128], [2176, 640, 256], [33 * 128 + 5, 1000, 128], [127 * 128, 8192, 128]]
    for M, N, K in shapes:
        tm = -(-M // BM)
        for ncl in (66, 60, 3, 1):
            ok, info = check_walk(M, N, ncl, 2)
            bad += not ok
            if [M, N, K] in wl["graded"] or not ok or ncl == 66:
                say("mc  M %d N %d (tile rows %d%s) clusters %d:" % (M, N, tm, ", odd" if tm % 2 else "", ncl),
                    "ok" if ok else "FAIL", info)
        for nct in (132, 120, 6, 1):
            ok, info = check_walk(M, N, nct, 1)
            bad += not ok
            if not ok or ([M, N, K] in wl["graded"] and nct == 132):
                say("mc0 M %d N %d CTAs %d:" % (M, N, nct), "ok" if ok else "FAIL", info)
    say("walk: %d shapes x 4 cluster counts (+ the control's 4 grid sizes) checked" % len(shapes))

    say("== (2) cluster ring protocol, %d stages" % STAGES)
    trials = 150
    for name, fills, hi, ain in protocol_cases():
        steps, fails = 0, 0
        for seed in range(trials):
            try:
                steps += run_protocol(fills, hi, ain, seed)
            except (Deadlock, Violation) as e:
                fails += 1
                if fails == 1:
                    say("  first failure:", e)
        bad += fails > 0
        say("%s: %d fills/CTA (upper half out %d, A out %d/%d), %d interleavings, %d failures, mean %d steps" % (
            name, fills, hi.count(False), ain[0].count(False), ain[1].count(False), trials, fails, steps // trials))
    # also the ring at other depths
    name, fills, hi, ain = protocol_cases()[1]
    for st in (1, 2, 4):
        fails = 0
        for seed in range(60):
            try:
                run_protocol(fills, hi, ain, seed, stages=st)
            except (Deadlock, Violation):
                fails += 1
        bad += fails > 0
        say("%s at %d stages: 60 interleavings, %d failures" % (name, st, fails))

    say("-- negative controls (each must be caught)")
    for bug, case_idx in [("local-only", 1), ("expect-unloaded", 0), ("unexpected-load", 1), ("no-exit-barrier", 1)]:
        name, fills, hi, ain = protocol_cases()[case_idx]
        caught, first = 0, None
        for seed in range(trials):
            try:
                run_protocol(fills, hi, ain, seed, bug=bug)
            except (Deadlock, Violation) as e:
                caught += 1
                first = first or str(e)
        ok = caught > 0
        bad += not ok
        say("control %s on %s: caught in %d of %d interleavings %s (%s)" % (bug, name, caught, trials,
                                                                          "ok" if ok else "FAIL", first))

    say("== (3) data path through the multicast halves")
    g = torch.Generator().manual_seed(1)
    for M, N, K, ncl in [(1, 1, 1, 66), (1, 128, 128, 66), (3, 200, 300, 66), (129, 257, 1000, 3), (64, 128, 4097, 66),
                         (256, 384, 512, 1), (385, 150, 256, 2), (300, 600, 384, 3), (640, 64, 160, 1),
                         (200, 300, 256, 60)]:
        A = torch.randint(0, 256, (M, K), dtype=torch.uint8, generator=g)
        B = torch.randint(0, 256, (N, K), dtype=torch.uint8, generator=g)
        A[(A & 0x7F) == 0x7F] = 0
        B[(B & 0x7F) == 0x7F] = 0
        nkb = -(-K // BK)
        sa = torch.pow(2.0, torch.randint(-8, 0, (M, nkb), generator=g).float())
        sb = torch.pow(2.0, torch.randint(-8, 0, (-(-N // 128), nkb), generator=g).float())
        r = ref(A, sa, B, sb).float()
        e = emulate(ns["_decode"](A), sa, ns["_decode"](B), sb, ncl).float()
        ratio = ((e - r).abs() / (0.3 + 0.01 * r.abs())).max().item()
        rel = ((e - r).norm() / r.norm().clamp(min=1e-30)).item()
        ok = bool(torch.isfinite(e).all()) and ratio <= 1.0 and rel <= 0.01
        bad += not ok
        say("shape M %d N %d K %d clusters %d: bound ratio %.3f, relative Frobenius %.2e %s" % (
            M, N, K, ncl, ratio, rel, "ok" if ok else "FAIL"))
    # negative control: the next tile column's B scale block must fail the bound
    M, N, K = 256, 384, 512
    A = torch.randint(0, 256, (M, K), dtype=torch.uint8, generator=g)
    B = torch.randint(0, 256, (N, K), dtype=torch.uint8, generator=g)
    A[(A & 0x7F) == 0x7F] = 0
    B[(B & 0x7F) == 0x7F] = 0
    sa = torch.pow(2.0, torch.randint(-8, 0, (M, 4), generator=g).float())
    sb = torch.pow(2.0, torch.randint(-8, 0, (3, 4), generator=g).float())
    r = ref(A, sa, B, sb).float()
    e = emulate(ns["_decode"](A), sa, ns["_decode"](B), sb, 66, bug="b-scale-next").float()
    ratio = ((e - r).abs() / (0.3 + 0.01 * r.abs())).max().item()
    bad += ratio <= 1.0
    say("control b-scale-next at M %d N %d K %d: bound ratio %.1f %s" % (M, N, K, ratio, "caught ok" if ratio > 1 else "FAIL: not caught"))
    say("FAILURES: %d" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    rc = main()
    sys.exit(rc)
