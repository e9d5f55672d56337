# CPU emulation of round 9's `pp` and `pps` (NOTES.md "Round 9"; pps = pp + a tile's first scales
# loaded a tile ahead: same walk and protocol, plus check 1b), run with /usr/bin/python3 from the
# repository root (no torch needed; under a second). Checks:
# 1. The persistent walk (128x192 tiles, grid = min(tiles, 132), bands of 16 tile rows, the
#    kernel's tile_coords) computes every tile exactly once at every correctness, measure and
#    graded shape of task.json, ragged ones included (K % 16 != 0 shapes take the fallback on the
#    device, but are walked here too).
# 1b. pps's scale prefetch targets exactly the tiles the CTA walks next, in order, each once.
# 2. The barrier protocol, replayed as the kernel's three roles (the producer thread, consumer
#    warpgroups 0 and 1: each as one agent, and again with each of its four warps an agent of its
#    own, the named barriers counting warps and each sub-partition's tensor pipe a FIFO) under random
#    interleavings: the ring's full/empty mbarriers (try_wait.parity semantics: a wait on parity P
#    passes once the barrier's current phase parity differs from P; the full barrier's phase
#    completes when its TMA bytes land, an asynchronous event), the pingpong's named barriers 3
#    and 4 (hardware barrier: 256 threads, bar.arrive adds 128 and goes on, bar.sync adds 128 and
#    waits; the barrier resets when 256 have come), and the tensor pipe as a FIFO of issued chains
#    completing asynchronously (wgmma.wait_group 0 waits for the warpgroup's own chain). Checked:
#    no deadlock; each stage's wgmmas read the K block the producer loaded for that global stage,
#    and the producer never overwrites a stage before both warpgroups' waits on it; the chains
#    enter the tensor pipe strictly WG0(g), WG1(g), WG0(g+1), ...; no warpgroup arrives twice on
#    one barrier phase; no named-barrier arrival is pending when the CTA exits. Four deliberately
#    wrong protocols must be caught: no final token wait (pending arrival), WG0 waiting on its
#    first stage too (deadlock), no tokens at all (the order is broken in some interleaving), the
#    empty arrival before the wgmma wait (a stage refilled under a reading chain).
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BM, BN, BK, SMS, GROUP_M, STAGES = 128, 192, 128, 132, 16, 4


def tile_coords(t, tiles_m, tiles_n):
    width = GROUP_M * tiles_n
    first = (t // width) * GROUP_M
    rows = min(tiles_m - first, GROUP_M)
    return first + (t % width) % rows, (t % width) // rows


def walk(M, N):
    tiles_m, tiles_n = -(-M // BM), -(-N // BN)
    tiles = tiles_m * tiles_n
    grid = min(tiles, SMS)
    return [[tile_coords(t, tiles_m, tiles_n) for t in range(c, tiles, grid)] for c in range(grid)], tiles_m, tiles_n


def coverage(M, N):
    w, tiles_m, tiles_n = walk(M, N)
    seen = [x for c in w for x in c]
    ok = (len(seen) == len(set(seen)) == tiles_m * tiles_n
          and all(0 <= a < tiles_m and 0 <= b < tiles_n for a, b in seen) and all(len(c) > 0 for c in w))
    return ok, len(w), max(len(c) for c in w), min(len(c) for c in w)


class ProtocolError(Exception):
    pass


class MBar:
    def __init__(self, count):
        self.count, self.pending, self.phase = count, count, 0

    def passes(self, parity):
        return (self.phase & 1) != parity

    def arrive(self, n=1):
        self.pending -= n
        if self.pending < 0:
            raise ProtocolError("mbarrier over-arrived")
        if self.pending == 0:
            self.phase += 1
            self.pending = self.count


class NamedBar:
    """Hardware named barrier of 256 threads; each participant (a warpgroup of 128 threads, or a
    warp of 32 when warps are replayed apart) adds its threads by bar.arrive or bar.sync."""

    def __init__(self, name, need):
        self.name, self.need, self.arrived, self.generation = name, need, [], 0

    def arrive(self, who):
        if who in self.arrived:
            raise ProtocolError("%s arrived twice on barrier %s in one phase" % (who, self.name))
        self.arrived.append(who)
        if len(self.arrived) == self.need:
            self.arrived, self.generation = [], self.generation + 1
        return self.generation


def run_cta(ntiles, nkb, seed, mode="pp", wpg=1):
    """Replays one CTA (ntiles tiles of nkb K blocks each); mode pp (the kernel), or a broken one.
    wpg = 1: each consumer warpgroup one agent; wpg = 4: each of its four warps an agent of its own
    (the hardware counts threads, not warpgroups), warp w issuing into sub-partition w's tensor
    pipe, where WG0's and WG1's warp w meet."""
    rng = random.Random(seed)
    per = 4 // wpg                       # warps an agent stands for
    full = [MBar(1) for _ in range(STAGES)]
    empty = [MBar(8) for _ in range(STAGES)]
    content = [None] * STAGES           # global stage index whose K block sits in stage s
    readers_done = [set() for _ in range(STAGES)]  # agents whose wait on the content completed
    bars = {3: NamedBar(3, 2 * wpg), 4: NamedBar(4, 2 * wpg)}
    asyncq = []                          # pending TMA completions (stage, g)
    tensor = [[] for _ in range(wpg)]    # per sub-partition: FIFO of issued chains (wg, g)
    done_chains = set()
    issue_order = [[] for _ in range(wpg)]
    total = ntiles * nkb

    def producer():
        for g in range(total):
            s, rnd = g % STAGES, g // STAGES
            yield lambda: empty[s].passes((rnd & 1) ^ 1)
            if content[s] is not None and len(readers_done[s]) != 2 * wpg:
                raise ProtocolError("stage %d refilled before both warpgroups read global stage %d" % (s, content[s]))
            # arrive.expect_tx + the two loads: the full phase completes when the bytes land
            asyncq.append((s, g))

    def sync(bid, who):
        gen0 = bars[bid].generation
        if bars[bid].arrive(who) == gen0:  # not the last to come: wait for the phase to complete
            yield lambda j=gen0, b=bid: bars[b].generation > j

    def consumer(cw, w):
        who = (cw, w)
        for g in range(total):
            s = g % STAGES
            if mode != "none" and (cw == 1 or g > 0 or mode == "wait_first"):
                yield from sync(4 if cw == 0 else 3, who)
            yield lambda s=s, g=g: full[s].passes((g // STAGES) & 1)
            if content[s] != g:
                raise ProtocolError("WG%d warp %d read stage %d holding %r, expected global stage %d"
                                    % (cw, w, s, content[s], g))
            tensor[w].append((cw, g))
            issue_order[w].append((cw, g))
            if mode != "none":
                bars[3 if cw == 0 else 4].arrive(who)  # bar.arrive: no wait
            if mode == "early_empty":
                empty[s].arrive(per)
            yield lambda c=cw, w=w, g=g: (c, w, g) in done_chains  # wgmma.wait_group 0
            readers_done[s].add(who)
            if mode != "early_empty":
                empty[s].arrive(per)  # lane 0 of each warp
            # promotion, and after a tile's last stage the epilogue: local work, no barrier of
            # the protocol (the epilogue's bar.sync 1/2 are per warpgroup)
        if mode in ("pp", "early_empty") and cw == 0 and total > 0:
            yield from sync(4, who)

    agents = {"P": producer()}
    for cw in (0, 1):
        for w in range(wpg):
            agents["C%d.%d" % (cw, w)] = consumer(cw, w)
    conds = {k: (lambda: True) for k in agents}
    finished = set()
    steps = 0
    while len(finished) < len(agents) or asyncq or any(tensor):
        runnable = [k for k in agents if k not in finished and conds[k]()]
        events = []
        if asyncq:
            events.append("tma")
        events += [("tensor", j) for j in range(wpg) if tensor[j]]
        choices = runnable + events
        if not choices:
            raise ProtocolError("deadlock: %s waiting" % sorted(set(agents) - finished))
        c = rng.choice(choices)
        steps += 1
        if c == "tma":
            i = rng.randrange(len(asyncq))
            s, g = asyncq.pop(i)
            content[s] = g
            readers_done[s] = set()
            full[s].phase += 1
            full[s].pending = full[s].count
        elif isinstance(c, tuple):
            cw, g = tensor[c[1]].pop(0)  # a sub-partition's pipe completes chains in issue order
            done_chains.add((cw, c[1], g))
        else:
            try:
                conds[c] = next(agents[c])
            except StopIteration:
                finished.add(c)
    pending = {b: list(nb.arrived) for b, nb in bars.items() if nb.arrived}
    if pending:
        raise ProtocolError("named-barrier arrivals pending at exit: %s" % pending)
    want = [(cw, g) for g in range(total) for cw in (0, 1)]
    for j in range(wpg):
        if issue_order[j] != want:
            i = next(i for i, (x, y) in enumerate(zip(issue_order[j], want)) if x != y)
            raise ProtocolError("tensor-pipe order broken at %d (sub-partition %d): %s, expected %s"
                                % (i, j, issue_order[j][i], want[i]))
    return steps


def main():
    task = json.load(open(os.path.join(ROOT, "catalog/tasks/fp8-blockscale-gemm/task.json")))
    w = task["workloads"]["synthetic"]
    shapes = [("correctness", s) for s in w["correctness"]] + [("measure", s) for s in w["measure"]] + \
             [("graded", s) for s in w["graded"]]
    bad = 0
    for kind, (M, N, K) in shapes:
        ok, grid, tmax, tmin = coverage(M, N)
        nkb = -(-K // BK)
        bad += not ok
        path = "kernel" if K % 16 == 0 else "fallback on the device"
        print("coverage %-11s %5d %5d %5d: %s (grid %d, tiles per CTA %d..%d, %d K blocks; %s)"
              % (kind, M, N, K, "ok" if ok else "FAIL", grid, tmax, tmin, nkb, path))
    extra = [(200, 584, 384), (385, 200, 256), (1, 8, 16), (4096, 4096, 4096)]
    for M, N, K in extra:
        ok, grid, tmax, tmin = coverage(M, N)
        bad += not ok
        print("coverage extra       %5d %5d %5d: %s (grid %d, tiles per CTA %d..%d)" % (M, N, K, "ok" if ok else "FAIL", grid, tmax, tmin))
    # pps: the first K block's scales of the tile to come are loaded before the loop for the CTA's
    # first tile and at the end of each tile for tile t + gridDim.x when that is < tiles: the
    # tiles prefetched must be exactly the tiles walked, in order, each once.
    for kind, (M, N, K) in shapes:
        tiles_m, tiles_n = -(-M // BM), -(-N // BN)
        tiles = tiles_m * tiles_n
        grid = min(tiles, SMS)
        okp = True
        for c in range(grid):
            walked = list(range(c, tiles, grid))
            pre = ([c] if c < tiles else []) + [t + grid for t in walked if t + grid < tiles]
            okp &= pre == walked
        bad += not okp
        print("pps prefetch %-11s %5d %5d %5d: %s" % (kind, M, N, K, "ok" if okp else "FAIL"))
    # The protocol: per shape, the CTAs with the most and the fewest tiles, several interleavings
    # (graded shapes: their largest CTA's 21 x 64 = 1344 / 42 x 32 stages, 2 seeds each).
    for kind, (M, N, K) in shapes:
        wk, _, _ = walk(M, N)
        nkb = -(-K // BK)
        counts = sorted({len(c) for c in wk})
        seeds = 2 if kind == "graded" else 20
        n = 0
        try:
            for nt in counts:
                for seed in range(seeds):
                    for wpg in (1, 4):
                        run_cta(nt, nkb, seed, wpg=wpg)
                        n += 1
            print("protocol %-11s %5d %5d %5d: ok (%d replays, warpgroups and warps apart, tiles per CTA %s)"
                  % (kind, M, N, K, n, counts))
        except ProtocolError as e:
            bad += 1
            print("protocol %-11s %5d %5d %5d: FAIL %s" % (kind, M, N, K, e))
    for nt, nkb in [(1, 1), (2, 3), (3, 5), (5, 2), (7, 9)]:
        try:
            for seed in range(200):
                run_cta(nt, nkb, 1000 + seed, wpg=1)
                run_cta(nt, nkb, 2000 + seed, wpg=4)
            print("protocol small CTA (%d tiles x %d K blocks): ok (200 + 200 replays)" % (nt, nkb))
        except ProtocolError as e:
            bad += 1
            print("protocol small CTA (%d tiles x %d K blocks): FAIL %s" % (nt, nkb, e))
    # The check must see broken protocols.
    for mode, what in [("no_final", "no final token wait"), ("wait_first", "WG0 waits before its first stage"),
                       ("none", "no tokens (the solution's order)"),
                       ("early_empty", "empty arrival before the wgmma wait")]:
        for wpg in (1, 4):
            caught = None
            for seed in range(200):
                try:
                    run_cta(3, 4, seed, mode=mode, wpg=wpg)
                except ProtocolError as e:
                    caught = str(e)
                    break
            print("broken protocol (%s; %s): %s" % (what, "warpgroups" if wpg == 1 else "warps apart",
                                                    ("caught: " + caught) if caught else "NOT CAUGHT"))
            bad += caught is None
    print("failures", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
