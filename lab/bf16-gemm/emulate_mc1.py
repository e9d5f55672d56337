# CPU emulation of lab/bf16-gemm/mc1's bookkeeping (NOTES.md "Round 3"), run with /usr/bin/python3
# (torch) from the repository root. Written from mc1/bf16_gemm_sm90.cu line for line where it
# matters; imports emulate_cuda1's TMA / SWIZZLE_128B / descriptor / epilogue models (unchanged in
# mc1). What it cannot see: the hardware (wgmma arithmetic, multicast and remote-arrival timing,
# the real memory model). Checks:
#  1. the pair walk (tile_coords over pairs with GROUP_M / 2 pair rows; cluster c takes pairs c,
#     c + nclusters, ...; rank r the tile row 2 pm + r) covers every tile exactly once at every
#     correctness, measure and graded shape for 66, 60, 57 and 3 co-resident clusters; both CTAs of
#     a cluster walk equally long lists with the same tile column; a tile past M only as the odd
#     last pair's second tile; the L2 footprint of the first wave against cuda1's;
#  2. the cluster ring protocol under random interleavings: two CTAs, each with a producer thread
#     and two consumer warpgroups (4 warps, lanes 0 and 1 arriving on CTA 0's and CTA 1's empty
#     barrier as messages that land later), A loads and multicast B halves landing in each
#     destination CTA independently at random times, wgmma groups completing at random times,
#     mbarrier phase / tx semantics (tx may go negative before the expect_tx), boxes past M / N
#     neither loaded nor expected, the two cluster barriers: no deadlock, every complete_tx lands
#     in the phase it belongs to, the bytes of a phase equal its expect_tx, no stage overwritten
#     while a wgmma group of its CTA reads it, every stage read holds the (pair, k block) expected,
#     no arrival or delivery on an exited CTA. Negative controls: the empty barrier counting only
#     local consumers; expecting a box that is not loaded; no cluster barrier before exit;
#  3. the data path at small ragged shapes through the multicast halves (two 128-row boxes at
#     stage offsets 16 KiB and 32 KiB read as one 256-row SW128 operand; unloaded boxes left as
#     garbage in shared memory), TMA-store or register epilogue: relative Frobenius vs reference.
import json
import os
import random
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import emulate_cuda1 as e1  # noqa: E402

ROOT = e1.ROOT
BM, BN, BK, STAGES, GROUP_M = 128, 256, 64, 4, 8
B_HALF = BN // 2
A_BYTES, B_BYTES, B_HALF_BYTES = BM * BK * 2, BN * BK * 2, BN * BK
CONSUMER_WARPS = 8
CLUSTER_COUNTS = (66, 60, 57, 3)


# ---------------------------------------------------------------- 1. the pair walk
def tile_coords(t, units_m, tiles_n, group):
    width = group * tiles_n
    first = (t // width) * group
    rows = min(units_m - first, group)
    return first + (t % width) % rows, (t % width) // rows


def pair_walk(M, N, ncl, cl=2):
    """Per CTA (cluster c, rank r at index 2c + r): its list of (tm, tn), as the .cu walks it."""
    tiles_m, tiles_n = -(-M // BM), -(-N // BN)
    pairs_m = -(-tiles_m // cl)
    pairs = pairs_m * tiles_n
    grid_cl = min(pairs, ncl)  # the host: 2 x min(pairs, max clusters)
    ctas = []
    for c in range(grid_cl):
        for r in range(cl):
            lst = []
            for t in range(c, pairs, grid_cl):
                pm, tn = tile_coords(t, pairs_m, tiles_n, GROUP_M // cl)
                lst.append((cl * pm + r, tn))
            ctas.append(lst)
    return ctas


def check_walks(shapes):
    lines, fails = [], 0
    for (M, N, K) in shapes:
        tiles_m, tiles_n = -(-M // BM), -(-N // BN)
        for ncl in CLUSTER_COUNTS:
            w = pair_walk(M, N, ncl)
            inside = [x for c in w for x in c if x[0] < tiles_m]
            past = [x for c in w for x in c if x[0] >= tiles_m]
            ok = len(inside) == len(set(inside)) == tiles_m * tiles_n
            ok &= all(0 <= tn < tiles_n for _, tn in inside)
            # both CTAs of a cluster: same length, same tile column, rows 2pm and 2pm+1
            for c in range(len(w) // 2):
                a, b = w[2 * c], w[2 * c + 1]
                ok &= len(a) == len(b) and all(x[1] == y[1] and y[0] == x[0] + 1 and x[0] % 2 == 0
                                               for x, y in zip(a, b))
            # a tile past M only as the odd last pair's second tile
            ok &= all(tm == tiles_m and tiles_m % 2 == 1 for tm, _ in past)
            ok &= len(past) == (tiles_n if tiles_m % 2 else 0)
            fails += not ok
            if ncl == 66 or not ok:
                busiest = max(len(c) for c in w)
                lines.append("walk %s clusters=%d: %d tiles (%dx%d), %d pairs, grid %d CTAs, %d pairs on the busiest "
                             "cluster (ideal %.2f), %d tiles past M -> %s"
                             % ((M, N, K), ncl, tiles_m * tiles_n, tiles_m, tiles_n, -(-tiles_m // 2) * tiles_n,
                                len(w), busiest, -(-tiles_m // 2) * tiles_n / ncl, len(past), "ok" if ok else "FAIL"))
        # KZOO_CLUSTER=1 (and the no-cluster fallback): the CL = 1 instance is cuda1's walk
        w1 = pair_walk(M, N, 132, cl=1)
        ok = w1 == e1.walk(M, N, 132)
        fails += not ok
        if not ok:
            lines.append("walk %s CL=1 differs from cuda1's: FAIL" % ((M, N, K),))
    lines.append("walk CL=1 (KZOO_CLUSTER=1 / fallback) equals cuda1's walk at every shape with 132 CTAs: %s"
                 % ("ok" if fails == 0 else "see above"))
    return fails, lines


def footprint(M, N):
    """Distinct A row blocks (128 rows) and B column blocks (256 rows) in the first wave."""
    w = pair_walk(M, N, 66)
    first = [c[0] for c in w if c]
    w1 = e1.walk(M, N, 132)
    first1 = [c[0] for c in w1 if c]
    return (len({x[0] for x in first}), len({x[1] for x in first}),
            len({x[0] for x in first1}), len({x[1] for x in first1}))


# ---------------------------------------------------------------- 2. the cluster ring protocol
class Bar:
    """mbarrier: phase completes when pending arrivals == 0 and tx == 0 (tx may go negative first)."""

    def __init__(self, count):
        self.count, self.pending, self.tx, self.phase = count, count, 0, 0

    def arrive(self, expect_tx=0):
        self.tx += expect_tx
        self.pending -= 1
        self._maybe()

    def complete_tx(self, n):
        self.tx -= n
        self._maybe()

    def _maybe(self):
        if self.pending < 0:
            raise AssertionError("too many arrivals")
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def passes(self, parity):
        return (self.phase & 1) != parity


def protocol_run(pairs, nkb, seed, bug=None):
    """pairs: list of (a_in0, a_in1, hi_in) per pair the cluster walks (rank 0's A is always in)."""
    rng = random.Random(seed)
    mc_count = 8 if bug == "local_empty" else 2 * CONSUMER_WARPS
    full = [[Bar(1) for _ in range(STAGES)] for _ in range(2)]
    empty = [[Bar(mc_count) for _ in range(STAGES)] for _ in range(2)]
    tag = [[{} for _ in range(STAGES)] for _ in range(2)]      # box -> (pair, kb) it holds
    readers = [[0] * STAGES for _ in range(2)]                  # wgmma groups in flight per stage
    landed = [[0] * STAGES for _ in range(2)]                   # bytes landed in the current phase
    expected = [[None] * STAGES for _ in range(2)]
    exited = [False, False]
    errors = []
    agents = []
    cl_bar = {"arrived": 0, "gen": 0}
    N_AGENTS = 6  # 2 producers (their whole warpgroups) + 4 consumer warpgroups

    def check_alive(cta, what):
        if exited[cta]:
            errors.append("%s on exited CTA %d" % (what, cta))
            return False
        return True

    def deliver(dst, s, box, nbytes, rnd, t):
        yield lambda: True  # lands some time later, independently per destination
        if not check_alive(dst, "delivery of %s" % box):
            return
        if readers[dst][s]:
            errors.append("box %s overwrote CTA %d stage %d while %d wgmma groups read it" % (box, dst, s, readers[dst][s]))
        if full[dst][s].phase != rnd:
            errors.append("complete_tx of %s into CTA %d full[%d] phase %d, belongs to %d" % (box, dst, s, full[dst][s].phase, rnd))
        tag[dst][s][box] = t
        landed[dst][s] += nbytes
        full[dst][s].complete_tx(nbytes)

    def arrival(dst, s):
        yield lambda: True  # a remote (or local) arrival lands later
        if check_alive(dst, "empty-barrier arrival"):
            try:
                empty[dst][s].arrive()
            except AssertionError as e:
                errors.append(str(e))

    def cluster_barrier(cta, pend):
        # barrier.cluster.arrive.release: this agent's earlier arrivals are performed first
        yield lambda: all(p[0] for p in pend)
        g = cl_bar["gen"]
        cl_bar["arrived"] += 1
        if cl_bar["arrived"] == N_AGENTS:
            cl_bar["arrived"], cl_bar["gen"] = 0, g + 1
        yield lambda: cl_bar["gen"] > g

    def producer(rank):
        it = 0
        yield from cluster_barrier(rank, [])  # after init
        for p, (a0, a1, hi) in enumerate(pairs):
            a_in = (a0, a1)[rank]
            for kb in range(nkb):
                s, rnd = it % STAGES, it // STAGES
                yield lambda s=s, par=(rnd & 1) ^ 1: empty[rank][s].passes(par)
                if empty[rank][s].phase != rnd:
                    errors.append("producer %d: empty[%d] phase %d, expected %d" % (rank, s, empty[rank][s].phase, rnd))
                hi_exp = hi or bug == "expect_unloaded"
                nbytes = (A_BYTES if a_in else 0) + (B_BYTES if hi_exp else B_HALF_BYTES)
                expected[rank][s] = nbytes
                full[rank][s].arrive(expect_tx=nbytes)
                t = (p, kb)
                if a_in:
                    agents.append(deliver(rank, s, "A", A_BYTES, rnd, t))
                if rank == 0 or hi:
                    for dst in (0, 1):  # .multicast::cluster, mask 0b11
                        agents.append(deliver(dst, s, "B%d" % rank, B_HALF_BYTES, rnd, t))
                it += 1
        if bug != "no_exit_sync":
            yield from cluster_barrier(rank, [])
        yield from exit_when_done(rank)

    done_agents = [0, 0]

    def exit_when_done(rank):
        done_agents[rank] += 1
        if done_agents[rank] == 3:
            exited[rank] = True
        yield lambda: True

    def consumer(rank, cw):
        it = 0
        groups = []
        pend = []  # this warpgroup's arrival messages: [landed]
        yield from cluster_barrier(rank, pend)

        def wgmma_group(g):
            yield lambda: True
            readers[rank][g[0]] -= 1
            g[1] = True

        def release(s):
            for _ in range(4):  # four warps
                for dst in ((rank,) if bug == "local_empty" else (0, 1)):  # lane dst -> CTA dst
                    flag = [False]
                    pend.append(flag)

                    def msg(dst=dst, flag=flag):
                        yield from arrival(dst, s)
                        flag[0] = True
                    agents.append(msg())

        for p, (a0, a1, hi) in enumerate(pairs):
            a_in = (a0, a1)[rank]
            for kb in range(nkb):
                g_ = it + kb
                s = g_ % STAGES
                yield lambda s=s, par=(g_ // STAGES) & 1: full[rank][s].passes(par)
                if full[rank][s].phase != g_ // STAGES + 1:
                    errors.append("consumer %d.%d: full[%d] phase %d, expected %d" % (rank, cw, s, full[rank][s].phase, g_ // STAGES + 1))
                want = (["A"] if a_in else []) + ["B0"] + (["B1"] if hi else [])
                for box in want:
                    if tag[rank][s].get(box) != (p, kb):
                        errors.append("consumer %d.%d read %s of stage %d holding %s, wanted %s"
                                      % (rank, cw, box, s, tag[rank][s].get(box), (p, kb)))
                grp = [s, False]
                readers[rank][s] += 1
                groups.append(grp)
                agents.append(wgmma_group(grp))
                if kb > 0:
                    yield lambda: all(g[1] for g in groups[:-1])  # wait_group 1
                    release(groups[-2][0])
            yield lambda: all(g[1] for g in groups)  # wait_group 0
            release(groups[-1][0])
            groups.clear()
            it += nkb
            for _ in range(rng.randint(0, 3)):  # the epilogue takes a while
                yield lambda: True
        if bug != "no_exit_sync":
            yield from cluster_barrier(rank, pend)
        yield from exit_when_done(rank)

    # the byte check: at each full-phase completion the landed bytes equal the expect_tx
    def watch():
        seen = [[0] * STAGES for _ in range(2)]
        while True:
            for c in range(2):
                for s in range(STAGES):
                    if full[c][s].phase != seen[c][s]:
                        if full[c][s].phase != seen[c][s] + 1:
                            errors.append("full[%d][%d] skipped a phase" % (c, s))
                        if landed[c][s] != expected[c][s]:
                            errors.append("CTA %d stage %d: %d bytes landed, %s expected" % (c, s, landed[c][s], expected[c][s]))
                        landed[c][s] = 0
                        seen[c][s] = full[c][s].phase
            yield None

    agents.extend([producer(0), producer(1), consumer(0, 0), consumer(0, 1), consumer(1, 0), consumer(1, 1)])
    w = watch()
    next(w)
    waits = {}
    steps = 0
    while True:
        ready = []
        for a in list(agents):
            if a not in waits:
                try:
                    waits[a] = next(a)
                except StopIteration:
                    agents.remove(a)
                    continue
            if waits[a]():
                ready.append(a)
        if not agents:
            break
        if not ready:
            return errors + ["deadlock with %d agents waiting" % len(agents)]
        a = rng.choice(ready)
        del waits[a]
        try:
            waits[a] = next(a)
        except StopIteration:
            agents.remove(a)
        next(w)
        steps += 1
        if steps > 200000:
            return errors + ["no progress"]
    return errors


def random_pairs(rng, n):
    """n pairs; the last may be the odd pair (rank 1's tile past M); hi_in random per pair."""
    odd = rng.random() < 0.4
    return [(True, not (odd and i == n - 1), rng.random() < 0.7) for i in range(n)]


# ---------------------------------------------------------------- 3. the data path
GARBAGE = 1.0e4


def emulate_mc_kernel(A, B, ncl=3, bug=None):
    """The cluster kernel (paths 1 and 2) on bf16-valued float tensors, pair by pair."""
    M, K = A.shape
    N = B.shape[0]
    p = e1.path(M, N, K)
    assert p in (1, 2)
    tiles_m = -(-M // BM)
    nkb = -(-K // BK)
    out = torch.full((M, N), float("nan"))
    gen = torch.Generator().manual_seed(1)
    w = pair_walk(M, N, ncl)
    for c in range(len(w) // 2):
        for (tm0, tn), (tm1, _) in zip(w[2 * c], w[2 * c + 1]):
            hi_in = tn * BN + B_HALF < N
            if bug == "hi_only_if_whole":
                hi_in = tn * BN + BN <= N
            accs = {}
            for rank, tm in ((0, tm0), (1, tm1)):
                accs[rank] = [torch.zeros(64, BN), torch.zeros(64, BN)]
            for kb in range(nkb):
                # B's stage image, as both CTAs see it: rank h's half at stage offset A + h*16 KiB
                halves = []
                for h in (0, 1):
                    if h == 0 or hi_in:
                        halves.append(e1.tma_load_sw128(B, tn * BN + h * B_HALF, kb * BK, B_HALF))
                    else:  # not loaded: whatever the stage held before
                        halves.append(torch.rand(B_HALF * 64, generator=gen) * GARBAGE)
                if bug == "half_offset":
                    # the upper half placed 8 KiB too early (inside the lower half's atoms)
                    b_img = torch.cat([halves[0][:4096], halves[1], halves[0][4096:]])
                else:
                    b_img = torch.cat(halves)
                for rank, tm in ((0, tm0), (1, tm1)):
                    if tm < tiles_m:
                        a_img = e1.tma_load_sw128(A, tm * BM, kb * BK, BM)
                    else:
                        a_img = torch.rand(BM * 64, generator=gen) * GARBAGE
                    for cw in range(2):
                        for k in range(BK // 16):
                            a = e1.wgmma_read(a_img, cw * 64 * 128 + 32 * k, 64)
                            b = e1.wgmma_read(b_img, 32 * k, BN)
                            accs[rank][cw] = accs[rank][cw] + a @ b.t()
            for rank, tm in ((0, tm0), (1, tm1)):
                for cw in range(2):
                    y = tm * BM + cw * 64
                    frag = accs[rank][cw]
                    if p == 1:
                        for bx in range(BN // 64):
                            x = tn * BN + 64 * bx
                            box = frag[:, 64 * bx:64 * bx + 64].to(torch.bfloat16).float()
                            if x < N and y < M:
                                out[y:min(y + 64, M), x:min(x + 64, N)] = box[:min(64, M - y), :min(64, N - x)]
                    else:
                        for r in range(64):
                            if y + r >= M:
                                continue
                            cols = [col for col in range(BN) if tn * BN + col < N]
                            if cols:
                                out[y + r, tn * BN:tn * BN + len(cols)] = frag[r, :len(cols)].to(torch.bfloat16).float()
    return out


def main():
    with open(os.path.join(ROOT, "catalog", "tasks", "bf16-gemm", "task.json")) as f:
        task = json.load(f)
    w = task["workloads"]["synthetic"]
    graded = [tuple(s) for s in w["graded"]]
    small = [tuple(s) for s in w["correctness"] + w["measure"]]
    tol = task["grading"]["tolerance"]["value"]
    lines, fails = [], 0

    # 1. walk
    f, wl = check_walks(small + graded)
    lines += wl
    fails += f
    for s in graded:
        a, b, a1, b1 = footprint(s[0], s[1])
        lines.append("first wave %s: %d A row blocks + %d B column blocks (cuda1: %d + %d)" % (s, a, b, a1, b1))

    # 2. protocol
    runs, perr = 0, []
    rng = random.Random(7)
    for npairs in (1, 2, 3, 4):
        for nkb in (1, 2, 3, 5, 9):
            for seed in range(30):
                pairs = random_pairs(rng, npairs)
                e = protocol_run(pairs, nkb, 100000 * npairs + 100 * nkb + seed)
                runs += 1
                if e:
                    perr.append("pairs=%s nkb=%d seed=%d: %s" % (pairs, nkb, seed, e[:2]))
    lines.append("protocol: %d random interleavings (1-4 pairs a cluster, 1-9 k blocks, 4 stages, odd last pairs and "
                 "B upper halves past N mixed in), %d with errors" % (runs, len(perr)))
    lines += ["  " + x for x in perr[:10]]
    fails += len(perr)
    controls = (("local_empty", [(True, True, True)] * 3, 5),
                ("expect_unloaded", [(True, True, False)] * 2, 3),
                ("no_exit_sync", [(True, True, True)] * 2, 3))
    for bug, pairs, nkb in controls:
        bad, kinds = 0, set()
        for seed in range(40):
            e = protocol_run(pairs, nkb, seed, bug)
            if e:
                bad += 1
                kinds.add(e[-1].split(":")[0].split(" ")[0] if "deadlock" in e[-1] else e[0][:40])
        lines.append("protocol negative control %s: %d of 40 interleavings flagged (e.g. %s) -> %s"
                     % (bug, bad, sorted(kinds)[:2], "seen" if bad else "NOT SEEN"))
        fails += bad == 0

    # 3. data path
    torch.manual_seed(0)
    shapes = [s for s in small if e1.path(*s) != 3] + [(1, 8, 8), (200, 264, 72), (130, 520, 136), (257, 300, 200),
                                                        (390, 136, 64), (385, 392, 136), (5, 24, 1032)]
    worst = 0.0
    for s in shapes:
        M, N, K = s
        A = torch.randn(M, K).bfloat16().float()
        B = torch.randn(N, K).bfloat16().float()
        ref = (A @ B.t()).to(torch.bfloat16).float()
        got = emulate_mc_kernel(A, B)
        nan = int(torch.isnan(got).sum())
        m = e1.rel_frob(torch.nan_to_num(got), ref)
        worst = max(worst, m)
        ok = nan == 0 and m <= tol
        fails += not ok
        tiles_m = -(-M // BM)
        lines.append("kernel %s path %d, %d tile rows%s, B upper half %s: rel-frobenius %.2e, unwritten %d -> %s"
                     % (s, e1.path(*s), tiles_m, " (odd: last pair's second tile past M)" if tiles_m % 2 else "",
                        "past N in the last tile column" if ((-(-N // BN)) - 1) * BN + B_HALF >= N else "in",
                        m, nan, "ok" if ok else "FAIL"))
    lines.append("data path worst relative Frobenius %.2e (tolerance %g)" % (worst, tol))
    for bug, s in (("hi_only_if_whole", (130, 200, 136)), ("half_offset", (129, 257, 200))):
        M, N, K = s
        A = torch.randn(M, K).bfloat16().float()
        B = torch.randn(N, K).bfloat16().float()
        m = e1.rel_frob(torch.nan_to_num(emulate_mc_kernel(A, B, bug=bug)), (A @ B.t()).to(torch.bfloat16).float())
        lines.append("kernel %s negative control %s: rel-frobenius %.2e -> %s" % (s, bug, m, "seen" if m > tol else "NOT SEEN"))
        fails += m <= tol
    lines.append("FAILURES: %d" % fails)
    print("\n".join(lines))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
