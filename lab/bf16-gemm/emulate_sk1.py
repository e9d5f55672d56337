# CPU emulation of lab/bf16-gemm/sk1's stream-K schedule and fixup (NOTES.md "Round 2"), run with
# /usr/bin/python3 (torch) from the repository root. Extends emulate_cuda1.py (imported, unchanged:
# its TMA / swizzle / descriptor / epilogue models) with what sk1 adds. Written from sk1's .cu,
# line for line where it matters (Walk, sk_dp_tiles, the owner's contributor loop, the slot
# layout). Checks:
#  1. the schedule: at every correctness, measure and graded shape (and extra small ones), with
#     G = 132 and small G (114, 7, 5, 3), KZOO_SK 1 and 2: every (tile, k block) computed exactly
#     once over the data-parallel tiles and the stream-K pieces; at most one non-owner piece a CTA
#     (one workspace slot a CTA), and it is the CTA's first piece; every owner piece is its CTA's
#     last piece or a whole tile; the owner's contributor loop names exactly the CTAs that hold
#     non-owner pieces of its tile; the producer's stage loads and the consumers' stage reads are
#     the same sequence; the grid is never above G; figures of the split at the graded shapes
#     (busiest CTA's k blocks against the data-parallel walk);
#  2. the ring protocol (emulate_cuda1's model) driven by stream-K work lists: pieces of any
#     length, `it += n`, scale-d 0 at each piece's first wgmma;
#  3. the flag / fixup protocol under random interleavings: two warpgroup agents a CTA, all CTAs
#     co-resident, contributors and owners at random speeds, partial stores that become visible
#     to other CTAs at random later times unless a fence waited for them, the release store of
#     the flag, the owner's acquire spin, two consecutive calls on the same slots and flags (the
#     second with the next generation); no deadlock, the owner never reads a chunk its writer has
#     not made visible for this call. Negative controls: the owner not waiting, the generation
#     not bumped, no fence before the release, the owner chosen as the CTA that meets the tile
#     first (structural check + an equal-speed timing model);
#  4. the data path at small ragged shapes with small G (splits, tiles over 3+ CTAs): pieces
#     accumulated through emulate_cuda1's TMA/swizzle/descriptor model, non-owner fragments written
#     to and read back from the slot in the kernel's float4 layout, added by the owner, the
#     epilogue; relative Frobenius against the reference (the comparator's tolerance 1e-2).
import json
import os
import random
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import emulate_cuda1 as e1  # noqa: E402

BM, BN, BK, STAGES = e1.BM, e1.BN, e1.BK, e1.STAGES
SLOT_FLOATS = BM * BN


# ---------------------------------------------------------------- 1. the schedule (from the .cu)
def sk_dp_tiles(tiles, nkb, grid, sk, have_ws=True):
    if sk == 0 or not have_ws or tiles % grid == 0:
        return tiles
    dp = (0 if sk == 2 else tiles) if tiles < grid else (tiles // grid - 1) * grid
    if (tiles - dp) * nkb * grid >= 2 ** 31:  # the device Walk's 32-bit arithmetic
        return tiles
    return dp


def launch(M, N, K, G, sk):
    """The host's grid and dp_tiles for a TMA-path shape."""
    tiles = -(-M // BM) * -(-N // BN)
    dp = sk_dp_tiles(tiles, -(-K // BK), G, sk)
    grid = G if dp < tiles else min(tiles, G)
    return tiles, -(-K // BK), dp, grid


class Walk:
    def __init__(self, tiles, nkb, dp, grid, cta):
        self.nkb, self.dp, self.grid, self.t = nkb, dp, grid, cta
        self.sk_iters = (tiles - dp) * nkb
        self.k, self.k_end = self.begin(cta), self.begin(cta + 1)

    def begin(self, c):
        return self.sk_iters * c // self.grid

    def pieces(self, sk=1):
        out = []
        while self.t < self.dp:
            out.append((self.t, 0, self.nkb))
            self.t += self.grid
        while sk and self.k < self.k_end:
            q = self.k // self.nkb
            kb0 = self.k - q * self.nkb
            kb1 = min(self.nkb, kb0 + (self.k_end - self.k))
            out.append((self.dp + q, kb0, kb1))
            self.k += kb1 - kb0
        return out


def owner_contributors(w, t, cta):
    """The owner's loop in the .cu: later CTAs whose range starts inside tile t, empty ones skipped."""
    tile_end = (t - w.dp + 1) * w.nkb
    out = []
    for c in range(cta + 1, w.grid):
        b = w.begin(c)
        if b >= tile_end:
            break
        if w.begin(c + 1) == b:
            continue
        out.append(c)
    return out


def worklists(M, N, K, G, sk):
    tiles, nkb, dp, grid = launch(M, N, K, G, sk)
    return tiles, nkb, dp, grid, [Walk(tiles, nkb, dp, grid, c).pieces(sk) for c in range(grid)]


def producer_loads(pieces, tiles_m, tiles_n):
    """The producer loop: (stage, round, A coords, B coords) for every load, in order."""
    out, it = [], 0
    for t, kb0, kb1 in pieces:
        tm, tn = e1.tile_coords(t, tiles_m, tiles_n)
        for kb in range(kb0, kb1):
            out.append((it % STAGES, it // STAGES, (kb * BK, tm * BM), (kb * BK, tn * BN)))
            it += 1
    return out


def consumer_reads(pieces, tiles_m, tiles_n):
    """The consumer loop: (stage, parity round, the coords it expects the stage to hold)."""
    out, it = [], 0
    for t, kb0, kb1 in pieces:
        tm, tn = e1.tile_coords(t, tiles_m, tiles_n)
        n = kb1 - kb0
        for j in range(n):
            g = it + j
            kb = kb0 + j
            out.append((g % STAGES, g // STAGES, (kb * BK, tm * BM), (kb * BK, tn * BN)))
        it += n
    return out


def check_schedule(M, N, K, G, sk):
    """Returns (errors, stats)."""
    errs = []
    tiles_m, tiles_n = -(-M // BM), -(-N // BN)
    tiles, nkb, dp, grid, wl = worklists(M, N, K, G, sk)
    if grid > G:
        errs.append("grid %d > G %d" % (grid, G))
    seen = {}
    holders = {}  # tile -> {cta: (kb0, kb1, is_first_piece, is_last_piece)}
    for c, pieces in enumerate(wl):
        nonowner = 0
        first_sk = sum(1 for p in pieces if p[0] < dp)  # the data-parallel tiles come first
        for pi, (t, kb0, kb1) in enumerate(pieces):
            if (t < dp) != (pi < first_sk) or (t < dp and (kb0, kb1) != (0, nkb)):
                errs.append("cta %d: data-parallel tiles not first or not whole" % c)
            if not (0 <= t < tiles and 0 <= kb0 < kb1 <= nkb):
                errs.append("cta %d bad piece %s" % (c, (t, kb0, kb1)))
                continue
            for kb in range(kb0, kb1):
                seen[(t, kb)] = seen.get((t, kb), 0) + 1
            holders.setdefault(t, {})[c] = (kb0, kb1, pi == first_sk, pi == len(pieces) - 1)
            if kb0 > 0:
                nonowner += 1
                if pi != first_sk:
                    errs.append("cta %d: a non-owner piece that is not its first" % c)
            elif kb1 < nkb and pi != len(pieces) - 1:
                errs.append("cta %d: a split owner piece that is not its last" % c)
        if nonowner > 1:
            errs.append("cta %d: %d non-owner pieces (one slot a CTA)" % (c, nonowner))
        if producer_loads(pieces, tiles_m, tiles_n) != consumer_reads(pieces, tiles_m, tiles_n):
            errs.append("cta %d: producer and consumer lists differ" % c)
    if len(seen) != tiles * nkb or any(v != 1 for v in seen.values()):
        errs.append("coverage: %d of %d (tile, k block) pairs, max count %d"
                    % (len(seen), tiles * nkb, max(seen.values()) if seen else 0))
    max_span = 0
    for t, h in holders.items():
        max_span = max(max_span, len(h))
        owners = [c for c, v in h.items() if v[0] == 0]
        if len(owners) != 1:
            errs.append("tile %d: %d owners" % (t, len(owners)))
            continue
        o = owners[0]
        want = sorted(c for c in h if c != o)
        w = Walk(tiles, nkb, dp, grid, o)
        got = owner_contributors(w, t, o) if h[o][1] < nkb else []
        if got != want:
            errs.append("tile %d: owner %d's loop names %s, holders %s" % (t, o, got, want))
        if any(not h[c][2] for c in want):
            errs.append("tile %d: a contributor piece is not its CTA's first" % t)
    busiest = max(sum(kb1 - kb0 for _, kb0, kb1 in p) for p in wl)
    return errs, dict(tiles=tiles, nkb=nkb, dp=dp, grid=grid, busiest=busiest, max_span=max_span,
                      split_tiles=sum(1 for h in holders.values() if len(h) > 1),
                      slots=sum(1 for p in wl if any(kb0 > 0 for _, kb0, _ in p)))


# ---------------------------------------------------------------- 2. the ring with pieces
class Bar(e1.Bar):
    pass


def ring_run(pieces, seed, bug=None):
    """emulate_cuda1.protocol_run's model, the work list a CTA's stream-K pieces. Each stage is
    tagged (piece index, kb); the consumer checks it reads the tag it expects and that a piece's
    first wgmma starts from zero (scale-d 0)."""
    rng = random.Random(seed)
    full = [Bar(1) for _ in range(STAGES)]
    empty = [Bar(8) for _ in range(STAGES)]
    stage_tag = [None] * STAGES
    readers = [0] * STAGES
    errors, agents = [], []
    SB = 48 * 1024

    def tma(s, tag):
        yield lambda: True
        if readers[s]:
            errors.append("TMA overwrote stage %d under a wgmma" % s)
        stage_tag[s] = tag
        full[s].complete_tx(SB)

    def producer():
        it = 0
        for pi, (t, kb0, kb1) in enumerate(pieces):
            for kb in range(kb0, kb1):
                s, rnd = it % STAGES, it // STAGES
                yield lambda s=s, par=(rnd & 1) ^ 1: empty[s].passes(par)
                if empty[s].phase != rnd:
                    errors.append("producer: empty parity aliasing")
                full[s].arrive(expect_tx=SB)
                agents.append(tma(s, (pi, kb)))
                it += 1

    def consumer(cw):
        it, groups = 0, []

        def wg(g):
            yield lambda: True
            readers[g[0]] -= 1
            g[1] = True

        for pi, (t, kb0, kb1) in enumerate(pieces):
            n = kb1 - kb0
            acc_fresh = None
            for j in range(n):
                g_ = it + j
                s = g_ % STAGES
                yield lambda s=s, par=(g_ // STAGES) & 1: full[s].passes(par)
                if full[s].phase != g_ // STAGES + 1:
                    errors.append("consumer: full parity aliasing")
                if stage_tag[s] != (pi, kb0 + j):
                    errors.append("consumer %d read %s, wanted %s" % (cw, stage_tag[s], (pi, kb0 + j)))
                scale_d0 = (kb0 + j) == 0 if bug == "scale_by_kb" else j == 0
                if j == 0:
                    acc_fresh = scale_d0
                grp = [s, False]
                readers[s] += 1
                groups.append(grp)
                agents.append(wg(grp))
                if j > 0:
                    yield lambda: all(x[1] for x in groups[:-1])
                    for _ in range(4):
                        empty[groups[-2][0]].arrive()
            yield lambda: all(x[1] for x in groups)
            for _ in range(4):
                empty[groups[-1][0]].arrive()
            groups.clear()
            if not acc_fresh:
                errors.append("piece %d (kb0 %d) did not start from zero" % (pi, kb0))
            it += pieces_len_bug(n, bug)

    agents.extend([producer(), consumer(0), consumer(1)])
    waits = {}
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
            return errors + ["deadlock"]
        a = rng.choice(ready)
        del waits[a]
        try:
            waits[a] = next(a)
        except StopIteration:
            agents.remove(a)
    return errors


def pieces_len_bug(n, bug):
    return 1 if bug == "it_plus_one" else n


# ---------------------------------------------------------------- 3. the flag / fixup protocol
def fixup_run(wls, seed, bug=None, resident=None):
    """wls: one (tiles, nkb, dp, grid, worklists) per call, run back to back on the same slots and
    flags (a kernel boundary between them: every write visible). Two warpgroup agents a CTA.
    resident: if set, at most that many CTAs hold an SM at once, dispatched in blockIdx order as
    earlier ones exit (the kernel needs all resident; this shows what happens if they are not)."""
    rng = random.Random(seed)
    slot = {}      # (cta, cw, chunk) -> value visible to other CTAs
    flags = {}     # (cta, cw) -> visible generation
    errors = []
    gen = 0
    for call, (tiles, nkb, dp, grid, wl) in enumerate(wls):
        if not (bug == "no_gen_bump" and call > 0):
            gen += 1
        pending = []   # writes not yet visible to other CTAs: [key, value], made visible in any order
        agents = []

        def agent(c, cw, pieces, w):
            for pi, (t, kb0, kb1) in enumerate(pieces):
                for _ in range(rng.randint(1, 3) * (kb1 - kb0)):  # random speed
                    yield lambda: True
                if kb0 > 0:
                    mine = []
                    for j in range(4):  # 4 chunks stand for the 32 float4 stores
                        ent = [(c, cw, j), (call, t)]
                        pending.append(ent)
                        mine.append(ent)
                        yield lambda: True
                    if bug != "no_fence":
                        yield lambda mine=mine: all(e not in pending for e in mine)  # membar.gl
                    yield lambda: True  # the warpgroup barrier
                    ent = [("flag", c, cw), gen]
                    pending.append(ent)  # st.release: visible later, after the slot (fence)
                    continue
                if kb1 < nkb:
                    for cc in owner_contributors(w, t, c):
                        if bug != "no_wait":
                            yield lambda cc=cc: flags.get((cc, cw)) == gen
                        yield lambda: True  # warpgroup barrier
                        for j in range(4):
                            v = slot.get((cc, cw, j))
                            if v != (call, t):
                                errors.append("call %d: owner %d/%d read chunk %d of CTA %d's slot holding %s, "
                                              "wanted %s" % (call, c, cw, j, cc, v, (call, t)))
                            yield lambda: True
                for _ in range(rng.randint(0, 2)):  # the epilogue
                    yield lambda: True

        cta_of = {}
        for c in range(grid):
            w = Walk(tiles, nkb, dp, grid, c)
            for cw in range(2):
                a = agent(c, cw, wl[c], w)
                agents.append(a)
                cta_of[a] = c
        waits = {}
        while True:
            ready = []
            live = sorted({cta_of[a] for a in agents})
            on_sm = set(live[:resident]) if resident else None
            for a in list(agents):
                if on_sm is not None and cta_of[a] not in on_sm:
                    continue
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
            if pending and (not ready or rng.random() < 0.3):
                ent = pending.pop(rng.randrange(len(pending)))
                if ent[0][0] == "flag":
                    flags[ent[0][1:]] = ent[1]
                else:
                    slot[ent[0]] = ent[1]
                continue
            if not ready:
                errors.append("call %d: deadlock, %d agents waiting" % (call, len(agents)))
                return errors
            a = rng.choice(ready)
            del waits[a]
            try:
                waits[a] = next(a)
            except StopIteration:
                agents.remove(a)
        for ent in pending:  # the kernel boundary
            if ent[0][0] == "flag":
                flags[ent[0][1:]] = ent[1]
            else:
                slot[ent[0]] = ent[1]
    return errors


def owner_first_structure(wl, nkb):
    """The negative control 'owner = the CTA that meets the tile first' (the piece at the start of
    its range, i.e. the tile's tail piece): the owner would wait at the start of its range for
    pieces other CTAs reach at the end of theirs. Counted: owners whose wait precedes their own
    range's end while a contributor's piece sits at the end of its range."""
    bad = 0
    holders = {}
    for c, pieces in enumerate(wl):
        for pi, (t, kb0, kb1) in enumerate(pieces):
            if kb0 > 0 or kb1 < nkb:
                holders.setdefault(t, []).append((c, pi, len(pieces), kb0, kb1))
    for t, h in holders.items():
        if len(h) < 2:
            continue
        o = [x for x in h if x[4] == nkb][0]          # the tail piece's CTA
        others = [x for x in h if x is not o]
        if o[1] != o[2] - 1 and any(x[1] == x[2] - 1 for x in others):
            bad += 1
    return bad


def timing_model(wl, nkb, dp, grid, tiles, owner_rule="k0", write_cost=1.5, read_cost=1.5):
    """Equal-speed CTAs (a k block = 1 unit; a partial write or read = 1.5 units: 128 KiB at L2
    speed against a k block's 0.33-0.67 us). Returns (makespan, total owner wait)."""
    # piece start/end times per CTA, ignoring waits first, then waits propagated in CTA order
    # (contributors never wait, so one pass per dependency depth suffices; iterate to a fixpoint)
    holders = {}
    for c, pieces in enumerate(wl):
        for pi, (t, kb0, kb1) in enumerate(pieces):
            holders.setdefault(t, []).append((c, pi, kb0, kb1))
    owner_of = {}
    for t, h in holders.items():
        if owner_rule == "k0":
            owner_of[t] = [x[0] for x in h if x[2] == 0][0]
        else:  # the CTA that meets the tile first: the tail piece's (at the start of its range)
            owner_of[t] = [x[0] for x in h if x[3] == nkb][0]
    done = {}  # (t, c) -> time the partial is published
    finish = [0.0] * len(wl)
    total_wait = 0.0
    for _ in range(len(wl) + 2):
        total_wait = 0.0
        for c, pieces in enumerate(wl):
            now = 0.0
            for t, kb0, kb1 in pieces:
                now += kb1 - kb0
                h = holders[t]
                if len(h) == 1:
                    now += 0.3  # epilogue
                    continue
                if owner_of[t] != c:
                    now += write_cost
                    done[(t, c)] = now
                else:
                    for (cc, _, _, _) in h:
                        if cc != c:
                            # not published yet in this pass: counted on the next pass
                            ready = done.get((t, cc), now)
                            if ready > now:
                                total_wait += ready - now
                                now = ready
                            now += read_cost
                    now += 0.3
            finish[c] = now
    return max(finish), total_wait


# ---------------------------------------------------------------- 4. the data path
def fragment_regs(D):
    """D [64 x 256] -> regs[128 threads][128]: thread (warp, lane) acc[4j + 2h + e] =
    D[warp*16 + lane/4 + 8h, 8j + 2(lane%4) + e] (the wgmma m64nNk16 fragment)."""
    regs = torch.zeros(128, 128)
    idx_r = torch.zeros(128, 128, dtype=torch.long)
    idx_c = torch.zeros(128, 128, dtype=torch.long)
    for wt in range(128):
        warp, lane = wt // 32, wt % 32
        for j in range(32):
            for h in range(2):
                for e in range(2):
                    idx_r[wt, 4 * j + 2 * h + e] = warp * 16 + lane // 4 + 8 * h
                    idx_c[wt, 4 * j + 2 * h + e] = 8 * j + 2 * (lane % 4) + e
    regs = D[idx_r, idx_c]
    return regs, idx_r, idx_c


_FRAG = None


def frag_index():
    global _FRAG
    if _FRAG is None:
        _, r, c = fragment_regs(torch.zeros(64, 256))
        _FRAG = (r, c)
    return _FRAG


def slot_offset(cw, wtid, j, q):
    """ws + cta*SLOT_FLOATS + cw*(SLOT_FLOATS/2) + 4*wtid + j*512 + q (st_f4 / ld_cg_f4)."""
    return cw * (SLOT_FLOATS // 2) + 4 * wtid + j * 512 + q


def check_slot_layout():
    ok = True
    offs = set()
    for cw in range(2):
        for wt in range(128):
            for j in range(32):
                for q in range(4):
                    offs.add(slot_offset(cw, wt, j, q))
    ok &= offs == set(range(SLOT_FLOATS))
    # coalescing: one st.v4 instruction (fixed j) of a warp covers 512 consecutive bytes
    for cw in range(2):
        for warp in range(4):
            for j in range(32):
                base = [slot_offset(cw, warp * 32 + l, j, 0) for l in range(32)]
                ok &= base == list(range(base[0], base[0] + 128, 4))
    r, c = frag_index()
    ok &= len(set(zip(r.flatten().tolist(), c.flatten().tolist()))) == 64 * 256
    return ok


def emulate_sk(A, B, G, sk, bug=None):
    M, K = A.shape
    N = B.shape[0]
    p = e1.path(M, N, K)
    assert p in (1, 2)
    tiles_m, tiles_n = -(-M // BM), -(-N // BN)
    tiles, nkb, dp, grid, wl = worklists(M, N, K, G, sk)
    fr, fc = frag_index()
    ws = torch.full((grid, SLOT_FLOATS), float("nan"))
    out = torch.full((M, N), float("nan"))
    # the partials' stores flat-indexed: per cw, offset for regs[wt, 4j+q]
    offs = torch.zeros(2, 128, 128, dtype=torch.long)
    for cw in range(2):
        for wt in range(128):
            for j in range(32):
                for q in range(4):
                    offs[cw, wt, 4 * j + q] = slot_offset(cw, wt, j, q)

    def mainloop(t, kb0, kb1):
        tm, tn = e1.tile_coords(t, tiles_m, tiles_n)
        acc = [None, None]
        for j, kb in enumerate(range(kb0, kb1)):
            a_img = e1.tma_load_sw128(A, tm * BM, kb * BK, BM)
            b_img = e1.tma_load_sw128(B, tn * BN, kb * BK, BN)
            for cw in range(2):
                for k in range(BK // 16):
                    a = e1.wgmma_read(a_img, cw * 64 * 128 + 32 * k, 64)
                    b = e1.wgmma_read(b_img, 32 * k, BN)
                    scale_d = 1 if (j > 0 or k > 0) else 0
                    if bug == "scale_by_kb":
                        scale_d = 1 if (kb > 0 or k > 0) else 0
                    prev = acc[cw] if acc[cw] is not None else torch.full((64, BN), 7.0)  # stale registers
                    acc[cw] = (prev if scale_d else 0) + a @ b.t()
        return tm, tn, [fragment_regs(x)[0] for x in acc]

    # contributors first (the protocol makes the owner wait for them), then everything else
    for c, pieces in enumerate(wl):
        for t, kb0, kb1 in pieces:
            if kb0 > 0:
                _, _, regs = mainloop(t, kb0, kb1)
                for cw in range(2):
                    ws[c, offs[cw].flatten()] = regs[cw].flatten()
    for c, pieces in enumerate(wl):
        w = Walk(tiles, nkb, dp, grid, c)
        for t, kb0, kb1 in pieces:
            if kb0 > 0:
                continue
            tm, tn, regs = mainloop(t, kb0, kb1)
            if kb1 < nkb and bug != "no_fixup":
                for cc in owner_contributors(w, t, c):
                    src = cc - 1 if bug == "wrong_slot" else cc
                    for cw in range(2):
                        regs[cw] = regs[cw] + ws[src, offs[cw].flatten()].view(128, 128)
            for cw in range(2):
                frag = torch.zeros(64, BN)
                frag[fr, fc] = regs[cw]
                y = tm * BM + cw * 64
                if p == 1:
                    for b in range(BN // 64):
                        x = tn * BN + 64 * b
                        box = frag[:, 64 * b:64 * b + 64].to(torch.bfloat16).float()
                        if x < N and y < M:
                            out[y:min(y + 64, M), x:min(x + 64, N)] = box[:min(64, M - y), :min(64, N - x)]
                else:
                    rr, cc_ = min(64, M - y), min(BN, N - tn * BN)
                    if rr > 0 and cc_ > 0:
                        out[y:y + rr, tn * BN:tn * BN + cc_] = frag[:rr, :cc_].to(torch.bfloat16).float()
    return out, dict(tiles=tiles, nkb=nkb, dp=dp, grid=grid,
                     split=sum(1 for pcs in wl for (_, a, b) in pcs if a > 0 or b < nkb),
                     span=max(1 + len(owner_contributors(Walk(tiles, nkb, dp, grid, c), t, c))
                              for c, pcs in enumerate(wl) for (t, a, b) in pcs if a == 0))


def main():
    with open(os.path.join(ROOT, "catalog", "tasks", "bf16-gemm", "task.json")) as f:
        task = json.load(f)
    w = task["workloads"]["synthetic"]
    graded = [tuple(s) for s in w["graded"]]
    small = [tuple(s) for s in w["correctness"] + w["measure"]]
    extra = [(1, 8, 8), (200, 264, 72), (130, 520, 136), (1, 520, 1000), (300, 1100, 520), (1000, 1000, 2048),
             (2048, 2048, 8192), (5, 24, 1032), (640, 1280, 64), (3000, 5000, 640), (16384, 16384, 128)]
    tol = task["grading"]["tolerance"]["value"]
    lines, fails = [], 0

    # 1. schedule
    nchk, max_span, errs_all = 0, 0, []
    for s in small + extra + graded:
        for G in (132, 114, 7, 5, 3):
            for sk in (0, 1, 2):
                errs, st = check_schedule(*s, G, sk)
                nchk += 1
                max_span = max(max_span, st["max_span"])
                if errs:
                    errs_all.append("%s G=%d SK=%d: %s" % (s, G, sk, errs[:3]))
                if G == 132 and sk == 1 and s in graded:
                    T, KI = st["tiles"], st["nkb"]
                    dp_busy = -(-T // G) * KI
                    lines.append("schedule %s G=132 SK=1: %d tiles, KI %d, %d data-parallel (%d a CTA), %d stream-K "
                                 "(%.3f tiles a CTA), %d split tiles, %d slots used, <= %d CTAs a tile; busiest CTA "
                                 "%d k blocks against %d data-parallel: %.2f%% less"
                                 % (s, T, KI, st["dp"], st["dp"] // G, T - st["dp"], (T - st["dp"]) / G,
                                    st["split_tiles"], st["slots"], st["max_span"], st["busiest"], dp_busy,
                                    100 * (1 - st["busiest"] / dp_busy)))
    lines.append("schedule: %d (shape, G, SK) cases (G 132/114/7/5/3, SK 0/1/2): every (tile, k block) once, <= 1 "
                 "non-owner piece a CTA (its first), owner pieces last or whole, the owner's loop = the holders, "
                 "producer list = consumer list, grid <= G: %d with errors; most CTAs on one tile %d"
                 % (nchk, len(errs_all), max_span))
    lines += ["  " + x for x in errs_all[:10]]
    fails += len(errs_all)
    # SK 0 is cuda1's walk
    same = True
    for s in small + extra + graded:
        for G in (132, 7):
            tiles, nkb, _, grid, wl = worklists(*s, G, 0)
            same &= wl == [[(t, 0, nkb) for t in range(c, tiles, grid)] for c in range(grid)]
            same &= grid == min(tiles, G)
    lines.append("SK=0 work lists = cuda1's walk (t = cta + i * grid, whole tiles): %s" % same)
    fails += not same

    # 2. ring with pieces
    runs, rerr = 0, []
    cases = []
    for s, G in [((256, 384, 512), 3), ((5, 24, 1032), 7), ((300, 1100, 520), 5), ((1000, 1000, 2048), 7)]:
        for sk in (1, 2):
            _, _, _, grid, wl = worklists(*s, G, sk)
            for c in range(grid):
                if any(a > 0 or b < -(-s[2] // BK) for _, a, b in wl[c]):
                    cases.append((s, G, sk, c, wl[c]))
    for i, (s, G, sk, c, pieces) in enumerate(cases):
        for seed in range(4):
            e = ring_run(pieces, 100 * i + seed)
            runs += 1
            if e:
                rerr.append("%s G=%d SK=%d cta %d: %s" % (s, G, sk, c, e[:2]))
    lines.append("ring with stream-K pieces: %d random interleavings over %d CTA work lists with split pieces "
                 "(1-6 pieces, 2-32 k blocks each): %d with errors" % (runs, len(cases), len(rerr)))
    lines += ["  " + x for x in rerr[:5]]
    fails += len(rerr)
    for bug in ("scale_by_kb", "it_plus_one"):
        bad = sum(1 for i, (s, G, sk, c, pieces) in enumerate(cases[:20]) if ring_run(pieces, i, bug))
        lines.append("ring negative control %s: %d of %d flagged -> %s" % (bug, bad, min(20, len(cases)),
                                                                          "seen" if bad else "NOT SEEN"))
        fails += bad == 0

    # 3. fixup protocol
    prot_cases = [((256, 384, 512), 3, 1), ((256, 384, 512), 5, 2), ((5, 24, 1032), 7, 2), ((300, 1100, 520), 5, 1),
                  ((1000, 1000, 2048), 7, 1), ((1000, 1000, 2048), 7, 2), ((640, 1280, 64), 7, 2),
                  ((1, 520, 1000), 5, 2)]
    runs, perr = 0, []
    for i, (s, G, sk) in enumerate(prot_cases):
        calls = [worklists(*s, G, sk), worklists(*s, G, sk)]
        for seed in range(12):
            e = fixup_run(calls, 1000 * i + seed)
            runs += 1
            if e:
                perr.append("%s G=%d SK=%d: %s" % (s, G, sk, e[:2]))
    # two different shapes back to back too (stale flags of another layout)
    for seed in range(12):
        e = fixup_run([worklists(256, 384, 512, 5, 2), worklists(5, 24, 1032, 5, 2)], 77 + seed)
        runs += 1
        if e:
            perr.append("mixed: %s" % e[:2])
    lines.append("fixup protocol: %d random interleavings (8 shape/G cases, two calls each, 6-14 warpgroup agents, random "
                 "speeds and store visibility): %d with errors (deadlock or an early read)" % (runs, len(perr)))
    lines += ["  " + x for x in perr[:5]]
    fails += len(perr)
    # residency: the dependency edges go only to higher blockIdx and a CTA publishes its partial
    # (its first piece) before it waits (its last piece), so with blockIdx-order dispatch a
    # deadlock needs every resident CTA waiting on a non-resident one; with one SM it happens
    for R in (2, 3, 1):
        dl = 0
        for i, (s, G, sk) in enumerate(prot_cases):
            calls = [worklists(*s, G, sk), worklists(*s, G, sk)]
            dl += sum(1 for seed in range(3) if any("deadlock" in x for x in fixup_run(calls, 9000 + seed, None, R)))
        lines.append("fixup with only %d CTA(s) resident at a time (blockIdx-order dispatch): %d of %d runs deadlock%s"
                     % (R, dl, 3 * len(prot_cases), " (expected: the control)" if R == 1 else ""))
        fails += (dl != 0) if R > 1 else (dl == 0)
    for bug in ("no_wait", "no_gen_bump", "no_fence"):
        bad = 0
        for i, (s, G, sk) in enumerate(prot_cases):
            calls = [worklists(*s, G, sk), worklists(*s, G, sk)]
            bad += sum(1 for seed in range(5) if fixup_run(calls, 5000 + 10 * i + seed, bug))
        lines.append("fixup negative control %s: %d of %d interleavings flagged -> %s"
                     % (bug, bad, 5 * len(prot_cases), "seen" if bad else "NOT SEEN"))
        fails += bad == 0
    # owner chosen as the CTA that meets the tile first
    nb, tot = 0, 0
    tm_lines = []
    for s, G, sk in prot_cases + [(g, 132, 1) for g in graded]:
        tiles, nkb, dp, grid, wl = worklists(*s, G, sk)
        nb += owner_first_structure(wl, nkb) > 0
        tot += 1
        ms_ok, wait_ok = timing_model(wl, nkb, dp, grid, tiles, "k0")
        ms_bad, wait_bad = timing_model(wl, nkb, dp, grid, tiles, "first")
        if s in graded:
            tm_lines.append("  timing model %s: makespan %.1f k blocks (owner = k 0: owner waits %.1f) against %.1f "
                            "(owner = first to meet the tile: waits %.1f); data-parallel %d"
                            % (s, ms_ok, wait_ok, ms_bad, wait_bad, -(-tiles // G) * nkb))
    lines.append("fixup negative control owner_first (the tail piece's CTA owns the tile): in %d of %d cases an "
                 "owner would wait at the start of its range on a piece another CTA reaches at the end of its own -> %s"
                 % (nb, tot, "seen" if nb else "NOT SEEN"))
    fails += nb == 0
    lines += tm_lines
    for s in graded:
        tiles, nkb, dp, grid, wl = worklists(*s, 132, 1)
        ms_ok, w_ok = timing_model(wl, nkb, dp, grid, tiles, "k0")
        ms_bad, w_bad = timing_model(wl, nkb, dp, grid, tiles, "first")
        if not (w_ok <= 2 * 1.5 and ms_bad > ms_ok):
            fails += 1
            lines.append("  FAIL timing model at %s" % (s,))

    # 4. data path
    ok = check_slot_layout()
    lines.append("slot layout: bijection onto 128 KiB a CTA, a warp's st.v4 = 512 consecutive bytes, the fragment a "
                 "bijection onto 64x256: %s" % ("ok" if ok else "FAIL"))
    fails += not ok
    torch.manual_seed(0)
    dshapes = [((256, 384, 512), 3, 1), ((256, 384, 512), 5, 2), ((129, 257, 1000), 3, 2), ((1, 8, 8), 3, 2),
               ((1, 520, 1000), 5, 2), ((200, 264, 72), 3, 1), ((130, 520, 136), 7, 2), ((257, 300, 200), 5, 1),
               ((5, 24, 1032), 7, 2), ((300, 1100, 520), 7, 1), ((64, 128, 256), 3, 2)]
    worst = 0.0
    for (M, N, K), G, sk in dshapes:
        A = torch.randn(M, K).bfloat16().float()
        B = torch.randn(N, K).bfloat16().float()
        ref = (A @ B.t()).to(torch.bfloat16).float()
        got, st = emulate_sk(A, B, G, sk)
        nan = int(torch.isnan(got).sum())
        m = e1.rel_frob(torch.nan_to_num(got), ref)
        worst = max(worst, m)
        ok = nan == 0 and m <= tol
        fails += not ok
        lines.append("data %s path %d G=%d SK=%d: %d tiles, KI %d, dp %d, %d split pieces, <= %d CTAs a tile: "
                     "rel-frobenius %.2e, unwritten %d -> %s"
                     % ((M, N, K), e1.path(M, N, K), G, sk, st["tiles"], st["nkb"], st["dp"], st["split"],
                        st["span"], m, nan, "ok" if ok else "FAIL"))
    lines.append("data path worst rel-frobenius %.2e (tolerance %.0e)" % (worst, tol))
    M, N, K = 129, 257, 1000
    A = torch.randn(M, K).bfloat16().float()
    B = torch.randn(N, K).bfloat16().float()
    ref = (A @ B.t()).to(torch.bfloat16).float()
    for bug in ("no_fixup", "scale_by_kb", "wrong_slot"):
        got, _ = emulate_sk(A, B, 3, 2, bug)
        m = e1.rel_frob(torch.nan_to_num(got, nan=1e3), ref)
        lines.append("data negative control %s at %s G=3 SK=2: rel-frobenius %.2e -> %s"
                     % (bug, (M, N, K), m, "seen" if m > tol else "NOT SEEN"))
        fails += m <= tol
    lines.append("FAILURES: %d" % fails)
    print("\n".join(lines))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
