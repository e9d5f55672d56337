# CPU model of fa3v1 (fa3v1/fa3_sm90.cu), run with /usr/bin/python3 (CPU torch 1.13): /usr/bin/python3 emulate_fa3v1.py
#
# What it models, as the kernel does it:
#  - the grid: one CTA per (128-query block mb, batch x head), query blocks issued heaviest first;
#    key blocks 0 .. mb only (causal skipping), TMA's zero fill past T (3D map: no crossing into
#    the next head), the diagonal block (the last) masked col > row, rows >= T not stored;
#  - the register fragments: each consumer warpgroup's 128 threads hold S (m64n128) and O
#    (m64nD) in the wgmma accumulator layout (thread l of warp w: rows w*16 + l/4 (+8), n8 block
#    i: columns 8i + 2(l%4) + {0,1}); the mask is computed from the same indices as the kernel;
#    row max and the final row sum are reduced over the 4 lanes of a quad (shfl xor 1, 2);
#  - the online softmax in the kernel's order: S_j's max and exp2 (x*sl2 - m*sl2) happen before
#    O (holding P_{j-1} V_{j-1}) is rescaled; l = l*fac + partial sum; P rounded to bf16 through
#    to_p()'s packing, unpacked by the wgmma A-fragment layout (independent code), O += P V in fp32;
#  - the ping-pong named barriers (counts, initial arrive, no open phase at exit, alternation);
#  - the TMA ring's mbarrier protocol (full K, full V, empty K, empty V; Q full / Q empty per tile) for 2, 3
#    and 4 stages, one tile and the persistent walk's tile sequences, under random
#    interleavings of the producer thread and the 8 consumer warps: no deadlock, and each
#    consumer read sees the tile of the block it expects.
# Not modelled: wgmma's internal accumulation order and rounding, ex2.approx's error, the
# shared-memory swizzle and descriptors (checked only on the device).
import math
import random
import sys

import torch

BM = BN = 128
LOG2E = 1.4426950408889634


def reference(q, k, v):
    T, D = q.shape[-2], q.shape[-1]
    s = torch.matmul(q.float(), k.float().transpose(-1, -2)) * (1.0 / math.sqrt(D))
    s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v.float()).to(torch.bfloat16)


def frag_index(n):
    """[128 threads, n/2 regs] -> (row in the 64-row tile, column) of the m64nN accumulator."""
    tid = torch.arange(128)[:, None]
    r = torch.arange(n // 2)[None, :]
    warp, lane = tid // 32, tid % 32
    i, h, c = r // 4, (r % 4) // 2, r % 2
    return warp * 16 + lane // 4 + 8 * h, 8 * i + 2 * (lane % 4) + c


def quad_reduce(x, op):
    """x [128 threads] -> each thread gets op over its quad (lanes sharing lane/4)."""
    q = x.view(4, 8, 4)
    red = op(q)
    return red[..., None].expand(4, 8, 4).reshape(128)


def to_p(s):
    """to_p(): s [128, 64] fp32 -> p [128, 32, 2] (lo, hi) bf16 pairs."""
    p = torch.empty(128, 32, 2)
    for t in range(8):
        for e in range(4):
            p[:, 4 * t + e, 0] = s[:, 8 * t + 2 * e]
            p[:, 4 * t + e, 1] = s[:, 8 * t + 2 * e + 1]
    return p.to(torch.bfloat16).float()


def a_frag_to_matrix(p):
    """The wgmma A fragment layout (m64k16, per k-step t: a0 (row, k 2(l%4)+{0,1}), a1 (row+8),
    a2 (row, k+8), a3 (row+8, k+8)) -> P [64, 128]."""
    P = torch.full((64, 128), float("nan"))
    for tid in range(128):
        warp, lane = tid // 32, tid % 32
        row = warp * 16 + lane // 4
        for t in range(8):
            for e, (dr, dk) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
                k = 16 * t + dk + 2 * (lane % 4)
                P[row + dr, k] = p[tid, 4 * t + e, 0]
                P[row + dr, k + 1] = p[tid, 4 * t + e, 1]
    return P


def softmax_block(s, mx, l, diag, row0, col0, sl2, mask_fn):
    # s: [128, 64] registers; row0 [128, 64] absolute rows, col0 [128, 64] absolute columns.
    if diag:
        s = s.masked_fill(mask_fn(col0, row0), float("-inf"))
    fac = torch.empty(128, 2)
    for h in range(2):
        regs = [4 * i + 2 * h + c for i in range(16) for c in range(2)]
        m = torch.maximum(mx[:, h], s[:, regs].max(dim=1).values)
        m = quad_reduce(m, lambda q: q.max(dim=-1).values)
        ms = torch.where(m == float("-inf"), torch.zeros_like(m), m * sl2)
        fac[:, h] = torch.exp2(mx[:, h] * sl2 - ms)
        mx[:, h] = m
        e = torch.exp2(s[:, regs] * sl2 - ms[:, None])
        s[:, regs] = e
        l[:, h] = l[:, h] * fac[:, h] + e.sum(dim=1)
    return s, fac


def emulate(q, k, v, mask_fn=lambda col, row: col > row, skip=True):
    B, H, T, D = q.shape
    nmb = -(-T // BM)
    Tp = nmb * BM
    out = torch.full((B, H, T, D), float("nan"))
    sl2 = LOG2E / math.sqrt(D)
    srow, scol = frag_index(128)
    orow, ocol = frag_index(D)
    for bh in range(B * H):
        b, h = divmod(bh, H)
        # TMA's zero fill past T (3D map [B*H, T, D]).
        Q = torch.zeros(Tp, D); Q[:T] = q[b, h].float()
        K = torch.zeros(Tp, D); K[:T] = k[b, h].float()
        V = torch.zeros(Tp, D); V[:T] = v[b, h].float()
        for x in range(nmb):
            mb = nmb - 1 - x
            nkb = mb + 1 if skip else nmb
            for cw in range(2):
                r0 = mb * BM + cw * 64
                Qw = Q[r0:r0 + 64]
                o = torch.zeros(128, D // 2)
                mx = torch.full((128, 2), float("-inf"))
                l = torch.zeros(128, 2)
                arow = srow + r0
                p = None
                for j in range(nkb):
                    Sfull = Qw @ K[j * BN:(j + 1) * BN].t()  # [64, 128] fp32
                    s = Sfull[srow, scol].clone()
                    s, fac = softmax_block(s, mx, l, j == nkb - 1, arow, scol + j * BN, sl2, mask_fn)
                    if p is not None:  # O (P_{j-1} V_{j-1} included) rescaled after the softmax
                        P = a_frag_to_matrix(p)
                        Ofull = P @ V[(j - 1) * BN:j * BN]
                        o = o + Ofull[orow, ocol]
                        o[:, 0::4] *= fac[:, 0:1]; o[:, 1::4] *= fac[:, 0:1]
                        o[:, 2::4] *= fac[:, 1:2]; o[:, 3::4] *= fac[:, 1:2]
                    p = to_p(s)
                P = a_frag_to_matrix(p)
                o = o + (P @ V[(nkb - 1) * BN:nkb * BN])[orow, ocol]
                lt = torch.empty(128, 2)
                for hh in range(2):
                    lt[:, hh] = quad_reduce(l[:, hh], lambda qq: qq.sum(dim=-1))
                res = torch.empty(64, D)
                hsel = (torch.arange(D // 2) % 4) // 2
                res[orow, ocol] = o / lt[:, hsel]
                for rr in range(64):
                    if r0 + rr < T:
                        out[b, h, r0 + rr] = res[rr]
    return out.to(torch.bfloat16)


def relfro(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm()).item()


# ---- the ring's mbarrier protocol under random interleavings ----
class Bar:
    def __init__(self, count):
        self.count, self.pending, self.phase, self.tx = count, count, 0, 0

    def arrive(self):
        self.pending -= 1
        self._maybe_flip()

    def expect_tx(self, n):
        self.tx += n
        self.arrive_noflip = True
        self.pending -= 1
        self._maybe_flip()

    def complete_tx(self, n):
        self.tx -= n
        self._maybe_flip()

    def _maybe_flip(self):
        if self.pending == 0 and self.tx == 0:
            self.phase ^= 1
            self.pending = self.count

    def done(self, parity):  # try_wait.parity: the phase with that parity has completed
        return self.phase != parity


def ring_protocol(nkbs, S, seed, flip=1, empty_count=8, q_release=True):
    """One CTA walking tiles with nkbs[i] key blocks each (the persistent walk; one tile = the
    default grid). Stage uses counted across tiles (u = it + j), Q full / Q empty flipping once
    per tile. True when every warp finishes; asserts that each read sees the expected tile."""
    if isinstance(nkbs, int):
        nkbs = [nkbs]
    rng = random.Random(seed)
    full_k = [Bar(1) for _ in range(S)]
    full_v = [Bar(1) for _ in range(S)]
    empty_k = [Bar(empty_count) for _ in range(S)]
    empty_v = [Bar(empty_count) for _ in range(S)]
    full_q, empty_q = Bar(1), Bar(8)
    content = [dict() for _ in range(S)]  # tags (tile, block) written by TMA
    qcontent = {}
    inflight = []
    prod = {"tile": 0, "j": -1, "it": 0, "kv": "K"}  # j == -1: Q next; kv: K or V of block j next
    warps = [{"tile": 0, "j": 0, "state": "q", "it": 0} for _ in range(8)]

    def producer_step():
        tc = prod["tile"]
        if tc >= len(nkbs):
            return False
        if prod["j"] == -1:
            if not empty_q.done((tc & 1) ^ 1):
                return False
            full_q.expect_tx(1)
            inflight.append((None, ("Q", tc), full_q))
            prod["j"] = 0
            return True
        j, u = prod["j"], prod["it"] + prod["j"]
        s = u % S
        if prod["kv"] == "K":
            if not empty_k[s].done(((u // S) & 1) ^ flip):
                return False
            full_k[s].expect_tx(1)
            inflight.append((s, ("K", (tc, j)), full_k[s]))
            prod["kv"] = "V"
            return True
        if not empty_v[s].done(((u // S) & 1) ^ flip):
            return False
        full_v[s].expect_tx(1)
        inflight.append((s, ("V", (tc, j)), full_v[s]))
        prod["kv"] = "K"
        prod["j"] += 1
        if prod["j"] == nkbs[tc]:
            prod["it"] += nkbs[tc]
            prod["tile"] += 1
            prod["j"] = -1
        return True

    def land():
        if not inflight:
            return False
        s, tag, bar = inflight.pop(rng.randrange(len(inflight)))
        if s is None:
            qcontent["Q"] = tag[1]
        else:
            content[s][tag[0]] = tag[1]
        bar.complete_tx(1)
        return True

    def warp_step(w):
        st = warps[w]
        tc = st["tile"]
        if tc >= len(nkbs):
            return False
        nkb, it, j = nkbs[tc], st["it"], st["j"]
        if st["state"] == "q":
            if not full_q.done(tc & 1):
                return False
            assert qcontent["Q"] == tc
            st["state"] = "s0"
            return True
        if st["state"] == "s0":  # prologue: wait K_0, read it and Q
            s0 = it % S
            if not full_k[s0].done((it // S) & 1):
                return False
            assert content[s0]["K"] == (tc, 0) and qcontent["Q"] == tc
            empty_k[s0].arrive()  # S_0 complete: K_0's slot free
            if nkb == 1 and q_release:
                empty_q.arrive()
            st["state"], st["j"] = ("loop", 1) if nkb > 1 else ("last", nkb)
            return True
        if st["state"] == "loop":
            u = it + j
            s, sp = u % S, (u - 1) % S
            if not (full_k[s].done((u // S) & 1) and full_v[sp].done(((u - 1) // S) & 1)):
                return False
            assert content[s]["K"] == (tc, j) and content[sp]["V"] == (tc, j - 1), (content, j)
            assert qcontent["Q"] == tc  # S_j reads Q
            empty_k[s].arrive()  # after wait<1>: S_j complete
            if j == nkb - 1 and q_release:
                empty_q.arrive()
            assert content[sp]["V"] == (tc, j - 1), (content, j)  # not overwritten before release
            empty_v[sp].arrive()  # after wait<0>
            st["j"] += 1
            if st["j"] == nkb:
                st["state"] = "last"
            return True
        if st["state"] == "last":
            sp = (it + nkb - 1) % S
            if not full_v[sp].done(((it + nkb - 1) // S) & 1):
                return False
            assert content[sp]["V"] == (tc, nkb - 1)
            empty_v[sp].arrive()
            st["it"] += nkb
            st["tile"] += 1
            st["state"], st["j"] = "q", 0
            return True
        return False

    actors = [producer_step, land] + [lambda w=w: warp_step(w) for w in range(8)]
    for _ in range(200000):
        if all(w["tile"] == len(nkbs) for w in warps):
            return True
        order = list(range(len(actors)))
        rng.shuffle(order)
        if not any(actors[a]() for a in order):
            return False  # deadlock
    return False


# ---- the ping-pong's named barriers (bar.sync / bar.arrive, 256 threads: 128 + 128) ----
def pingpong_protocol(nkbs, seed, init=True, skip_last=True):
    """Both warpgroups walk the tiles nkbs (an int: one tile)."""
    if isinstance(nkbs, int):
        nkbs = [nkbs]
    rng = random.Random(seed)
    arrived = {1: 0, 2: 0}
    waiting = {1: False, 2: False}
    issues = []
    tile = [0, 0]
    pc = [0, 0]
    state = ["init", "init"]

    def bar_arrive(b):
        arrived[b] += 128
        assert arrived[b] <= 256, "a second arrival in one phase"

    def step(cw):
        if tile[cw] >= len(nkbs):
            return False
        nkb = nkbs[tile[cw]]
        own, other = 1 + cw, 2 - cw
        if state[cw] == "init":
            if cw == 1 and nkb > 1 and init:
                bar_arrive(1)
            state[cw] = "loop" if nkb > 1 else "next"
            return True
        if state[cw] == "loop":
            if not waiting[own]:
                arrived[own] += 128
                waiting[own] = True
            if arrived[own] < 256:
                return False
            arrived[own] -= 256
            waiting[own] = False
            issues.append(cw)
            j = pc[cw] + 1
            if cw == 0 or j < nkb - 1 or not skip_last:
                bar_arrive(other)
            pc[cw] += 1
            if pc[cw] == nkb - 1:
                state[cw] = "next"
            return True
        if state[cw] == "next":
            tile[cw] += 1
            pc[cw] = 0
            state[cw] = "init"
            return True
        return False

    for _ in range(100000):
        if tile == [len(nkbs), len(nkbs)]:
            return issues == [i % 2 for i in range(len(issues))] and arrived == {1: 0, 2: 0}
        order = [0, 1]
        rng.shuffle(order)
        if not any(step(c) for c in order):
            return False
    return False


def main():
    torch.manual_seed(0)
    fails = 0
    lines = []
    # Every correctness shape's structure (T: 3, 17, 100, 257, 1000, 2048 with D 64 / 128; B, H
    # reduced where the full shape would only repeat heads), plus block-boundary cases.
    shapes = [(1, 1, 3, 64), (1, 2, 17, 64), (2, 3, 100, 128), (1, 4, 257, 128), (1, 2, 1000, 64),
              (1, 1, 2048, 128), (1, 1, 128, 64), (1, 1, 129, 128), (1, 1, 255, 64), (1, 1, 384, 128)]
    for shp in shapes:
        q, k, v = (torch.randn(*shp).to(torch.bfloat16) for _ in range(3))
        ref = reference(q, k, v)
        e = relfro(emulate(q, k, v), ref)
        ok = e < 0.02 and not torch.isnan(emulate(q, k, v).float()).any() if shp[2] <= 257 else e < 0.02
        fails += not ok
        lines.append("shape %s relfro %.2e %s" % (shp, e, "ok" if ok else "FAIL"))
        print(lines[-1], flush=True)
    # Deliberately wrong variants must be caught.
    q, k, v = (torch.randn(1, 2, 257, 64).to(torch.bfloat16) for _ in range(3))
    ref = reference(q, k, v)
    for name, kw in (("mask col >= row (diagonal dropped)", dict(mask_fn=lambda c, r: c >= r)),
                     ("mask col > row + 1 (one future key)", dict(mask_fn=lambda c, r: c > r + 1)),
                     ("no mask", dict(mask_fn=lambda c, r: torch.zeros_like(c, dtype=torch.bool))),
                     ("no causal skipping, diagonal-only mask", dict(skip=False))):
        try:
            e = relfro(emulate(q, k, v, **kw), ref)
        except Exception as ex:  # noqa: BLE001
            e = float("nan")
        caught = not (e < 0.02)
        fails += not caught
        lines.append("wrong variant '%s': relfro %.2e %s" % (name, e, "caught" if caught else "NOT CAUGHT"))
        print(lines[-1], flush=True)
    # The ring protocol.
    for S in (2, 3, 4):
        for nkb in (1, 2, 3, 5, 9, 32):
            ok = all(ring_protocol(nkb, S, seed) for seed in range(20))
            fails += not ok
            lines.append("ring stages %d key blocks %d: 20 interleavings %s" % (S, nkb, "ok" if ok else "FAIL"))
            print(lines[-1], flush=True)
    # The persistent walk: one CTA's tiles (heaviest first inside a head, heads one after another).
    walks = [[4, 3, 2, 1], [1, 1, 1, 5, 2], [9, 1, 7, 2, 3, 1, 1, 4]]
    for S in (2, 3, 4):
        for walk in walks:
            ok = all(ring_protocol(walk, S, seed) for seed in range(20))
            fails += not ok
            print("persistent ring stages %d tiles %s: 20 interleavings %s" % (S, walk, "ok" if ok else "FAIL"), flush=True)
    bad = 0
    for seed in range(20):
        try:
            bad += not ring_protocol([3, 2, 4], 2, seed, q_release=False)
        except AssertionError:
            bad += 1
    fails += bad == 0
    print("wrong protocol 'Q never released (persistent)': %d/20 interleavings fail %s" % (bad, "caught" if bad else "NOT CAUGHT"), flush=True)
    for name, kw in (("producer parity without ^1", dict(flip=0)), ("empty count 4 (one warpgroup)", dict(empty_count=4))):
        caught = 0
        for seed in range(20):
            try:
                caught += not ring_protocol(9, 2, seed, **kw)
            except AssertionError:
                caught += 1
        fails += caught == 0
        print("wrong protocol '%s': %d/20 interleavings fail %s" % (name, caught, "caught" if caught else "NOT CAUGHT"), flush=True)
    for nkb in (1, 2, 3, 8, 33, [4, 3, 2, 1], [1, 1, 5, 2, 1, 3]):
        ok = all(pingpong_protocol(nkb, seed) for seed in range(20))
        fails += not ok
        print("ping-pong key blocks %s: 20 interleavings %s" % (nkb, "ok" if ok else "FAIL"), flush=True)
    for name, kw in (("no initial arrive", dict(init=False)), ("warpgroup 1 arrives after its last step", dict(skip_last=False))):
        bad = 0
        for seed in range(20):
            try:
                bad += not pingpong_protocol([5, 3], seed, **kw)
            except AssertionError:
                bad += 1
        fails += bad == 0
        print("wrong ping-pong '%s': %d/20 interleavings fail %s" % (name, bad, "caught" if bad else "NOT CAUGHT"), flush=True)
    print("failures: %d" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
