# CPU model of fa3v3 (fa3v3/fa3_sm90.cu), run with /usr/bin/python3 (CPU torch 1.13) from this
# folder: /usr/bin/python3 emulate_fa3v3.py > emulate_fa3v3.txt
#
# fa3v3 is fa3v1 with FlashAttention-3's head dim 64 tile: at D = 64 a 192-row query block
# (BM = 192) on three consumer warpgroups of 64 rows (NC = 3, 512 threads), keys in blocks of
# BN = 128; at D = 128 fa3v1's kernel (BM = 128, NC = 2). What this models, as the kernel does it:
#  - the grid: one CTA per (BM-query block mb, batch x head), heaviest query block first; key
#    blocks 0 .. num_kb(mb, T) - 1 with num_kb = min(ceil((mb+1) BM / 128), ceil(T / 128)) (the
#    producer and the consumers share the formula), TMA's zero fill past T (3D map), rows >= T
#    not stored;
#  - every consumer warpgroup visits all nkb blocks; the mask decision per warp
#    (crosses(j, r) = (j+1) 128 - 1 > r, r the warp's first row): with BM = 192 a warpgroup can
#    meet a block wholly past its rows (masked wholly: max kept, factor 1, exps 0); the mask
#    itself col > row from the register indices (keys >= T of valid rows included);
#  - the register fragments: S (m64n128, 64 fp32 a thread) and O (m64nD) in the wgmma
#    accumulator layout, row max and final row sum reduced over the 4 lanes of a quad, P through
#    to_p()'s packing and back through the wgmma A-fragment layout, O += P V over 128 keys;
#  - a warpgroup whose 64 rows all lie at or past T skipped (no GEMM, no store: the kernel keeps
#    only its barrier hand-offs, in the full path's order, so the ring and ping-pong models below,
#    which do not tell the two apart, cover it); the same run with it computing is bit-identical;
#  - the online softmax in the kernel's order (S_j's max and exp2 before O, holding
#    P_{j-1} V_{j-1}, is rescaled);
#  - coverage: for every valid row, each key <= row is unmasked in exactly one visited block and
#    every key > row (those >= T included) is masked or never visited;
#  - the mbarrier ring with 4 NC consumer warps (the Q / K / V "empty" barriers' arrival count
#    12 at D = 64), random interleavings of producer, TMA landings and the 12 warps, across tiles
#    (the persistent walk), plus the wrong count 8 (fa3v1's) caught;
#  - the ping-pong generalised to NC warpgroups (round robin of named barriers 1 .. NC, 256
#    threads each), complete per tile, issue order 0, 1, 2, 0, ...
# Not modelled: wgmma's accumulation order, ex2.approx's error, the swizzle and descriptors, the
# byte counts of expect_tx (checked only on the device), the 192-row TMA box.
import math
import random
import sys

import torch

from emulate_fa3v1 import Bar

BN = 128
LOG2E = 1.4426950408889634


def cfg(D):
    nc = 3 if D == 64 else 2
    return nc, 64 * nc  # consumer warpgroups, BM


def reference(q, k, v):  # catalog/tasks/flash-attention-prefill/task.json's maths, on the CPU
    T, D = q.shape[-2], q.shape[-1]
    s = torch.matmul(q.float(), k.float().transpose(-1, -2)) * (1.0 / math.sqrt(D))
    s = s.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
    return torch.matmul(torch.softmax(s, dim=-1), v.float()).to(torch.bfloat16)


def num_kb(mb, T, BM):
    return min(-(-((mb + 1) * BM) // BN), -(-T // BN))


def crosses(j, r):
    return (j + 1) * BN - 1 > r


def frag_index(n):
    """[128 threads, n/2 regs] -> (row in the 64-row tile, column) of the m64nN accumulator."""
    tid = torch.arange(128)[:, None]
    r = torch.arange(n // 2)[None, :]
    warp, lane = tid // 32, tid % 32
    i, h, c = r // 4, (r % 4) // 2, r % 2
    return warp * 16 + lane // 4 + 8 * h, 8 * i + 2 * (lane % 4) + c


def quad_reduce(x, op):
    """x [128 threads] -> each thread gets op over its quad (lanes sharing lane/4)."""
    return op(x.view(4, 8, 4))[..., None].expand(4, 8, 4).reshape(128)


def to_p(s):
    """to_p(): s [128, 64] fp32 -> p [128, 32, 2] (lo, hi) bf16 pairs."""
    p = torch.empty(128, BN // 4, 2)
    for t in range(BN // 16):
        for e in range(4):
            p[:, 4 * t + e, 0] = s[:, 8 * t + 2 * e]
            p[:, 4 * t + e, 1] = s[:, 8 * t + 2 * e + 1]
    return p.to(torch.bfloat16).float()


def _afrag_tables():
    rows, cols, regs, halves, tids = [], [], [], [], []
    for tid in range(128):
        warp, lane = tid // 32, tid % 32
        row = warp * 16 + lane // 4
        for t in range(BN // 16):
            for e, (dr, dk) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
                k = 16 * t + dk + 2 * (lane % 4)
                for hi in range(2):
                    rows.append(row + dr); cols.append(k + hi)
                    tids.append(tid); regs.append(4 * t + e); halves.append(hi)
    return tuple(torch.tensor(x) for x in (rows, cols, tids, regs, halves))


_AFRAG = _afrag_tables()


def a_frag_to_matrix(p):
    """The wgmma A fragment (m64k16 per k-step t: a0 (row, k 2(l%4)+{0,1}), a1 (row+8, k),
    a2 (row, k+8), a3 (row+8, k+8)) -> P [64, 128]."""
    rows, cols, tids, regs, halves = _AFRAG
    P = torch.full((64, BN), float("nan"))
    P[rows, cols] = p[tids, regs, halves]
    return P


def softmax_block(s, mx, l, diag_t, row0, col0, sl2, mask_fn):
    # s [128, 64]; diag_t [128] bool: the thread's warp masks this block; row0/col0 [128, 64].
    s = torch.where(diag_t[:, None] & mask_fn(col0, row0), torch.full_like(s, float("-inf")), s)
    fac = torch.empty(128, 2)
    for h in range(2):
        regs = [4 * i + 2 * h + c for i in range(BN // 8) for c in range(2)]
        m = torch.maximum(mx[:, h], s[:, regs].max(dim=1).values)
        m = quad_reduce(m, lambda q: q.max(dim=-1).values)
        ms = torch.where(m == float("-inf"), torch.zeros_like(m), m * sl2)
        fac[:, h] = torch.exp2(mx[:, h] * sl2 - ms)
        mx[:, h] = m
        e = torch.exp2(s[:, regs] * sl2 - ms[:, None])
        s[:, regs] = e
        l[:, h] = l[:, h] * fac[:, h] + e.sum(dim=1)
    return s, fac


def emulate(q, k, v, BM=None, mask_fn=lambda col, row: col > row, nkb_fn=num_kb, diag_fn=crosses, cover=None,
            stats=None, skip_dead=True):
    """cover: a dict filled with bh -> [T, Tk] int tensor counting each (row, key) unmasked.
    stats: a dict counting S elements computed and blocks wholly masked for a warpgroup."""
    B, H, T, D = q.shape
    NC, BMd = cfg(D)
    BM = BM or BMd
    NC = BM // 64
    nmb = -(-T // BM)
    Tk = (max(nmb * BM, -(-T // BN) * BN) // BN + 2) * BN  # room for any block a variant visits
    out = torch.full((B, H, T, D), float("nan"))
    sl2 = LOG2E / math.sqrt(D)
    srow, scol = frag_index(BN)
    orow, ocol = frag_index(D)
    warp_of = torch.arange(128) // 32
    for bh in range(B * H):
        b, h = divmod(bh, H)
        Q = torch.zeros(nmb * BM, D); Q[:T] = q[b, h].float()  # TMA's zero fill past T
        K = torch.zeros(Tk, D); K[:T] = k[b, h].float()
        V = torch.zeros(Tk, D); V[:T] = v[b, h].float()
        cov = torch.zeros(nmb * BM, Tk, dtype=torch.int32) if cover is not None else None
        for x in range(nmb):
            mb = nmb - 1 - x
            nkb = nkb_fn(mb, T, BM)
            for cw in range(NC):
                r0 = mb * BM + cw * 64
                if skip_dead and r0 >= T:  # the kernel's idle warpgroup: hand-offs only, no GEMM
                    continue
                Qw = Q[r0:r0 + 64]
                o = torch.zeros(128, D // 2)
                mx = torch.full((128, 2), float("-inf"))
                l = torch.zeros(128, 2)
                arow = srow + r0
                wr0 = r0 + 16 * warp_of  # each thread's warp's first row
                p = None
                for j in range(nkb):
                    Sfull = Qw @ K[j * BN:(j + 1) * BN].t()  # [64, 128] fp32
                    s = Sfull[srow, scol].clone()
                    diag_t = torch.tensor([bool(diag_fn(j, int(r))) for r in wr0])
                    live = ~(diag_t[:, None] & mask_fn(scol + j * BN, arow))
                    if stats is not None:
                        stats["S"] = stats.get("S", 0) + 64 * BN
                        stats["dead_blocks"] = stats.get("dead_blocks", 0) + int(not bool(live.any()))
                        stats["blocks"] = stats.get("blocks", 0) + 1
                    s, fac = softmax_block(s, mx, l, diag_t, arow, scol + j * BN, sl2, mask_fn)
                    if cov is not None:
                        cov.index_put_((arow[live], (scol + j * BN)[live]), torch.ones(int(live.sum()), dtype=torch.int32),
                                       accumulate=True)
                    if p is not None:  # O (P_{j-1} V_{j-1} included) rescaled after the softmax
                        o = o + (a_frag_to_matrix(p) @ V[(j - 1) * BN:j * BN])[orow, ocol]
                        o[:, 0::4] *= fac[:, 0:1]; o[:, 1::4] *= fac[:, 0:1]
                        o[:, 2::4] *= fac[:, 1:2]; o[:, 3::4] *= fac[:, 1:2]
                    p = to_p(s)
                o = o + (a_frag_to_matrix(p) @ V[(nkb - 1) * BN:nkb * BN])[orow, ocol]
                lt = torch.stack([quad_reduce(l[:, hh], lambda qq: qq.sum(dim=-1)) for hh in range(2)], dim=1)
                res = torch.empty(64, D)
                res[orow, ocol] = o / lt[:, (torch.arange(D // 2) % 4) // 2]
                n = max(0, min(64, T - r0))
                out[b, h, r0:r0 + n] = res[:n]
        if cover is not None:
            cover[bh] = cov[:T]
    return out.to(torch.bfloat16)


def coverage_ok(cover, T):
    want = torch.ones(T, T, dtype=torch.int32).tril()
    for cov in cover.values():
        if not (torch.equal(cov[:, :T], want) and int(cov[:, T:].abs().sum()) == 0):
            return False
    return True


def relfro(a, b):
    a, b = a.float(), b.float()
    return ((a - b).norm() / b.norm()).item()


# ---- the mbarrier ring with NC consumer warpgroups (emulate_fa3v1's model, warps generalised) ----
def ring_protocol(nkbs, S, seed, nwarps=12, empty_count=12):
    """One CTA walking tiles with nkbs[i] key blocks each (the persistent walk; one tile = the
    default grid): a producer thread, TMA landings in random order, nwarps consumer warps each
    arriving once on the Q / K / V empty barriers (initialised to empty_count). Stage uses
    counted across tiles (u = it + j), Q full / Q empty flipping once per tile. True when every
    warp finishes; asserts that each read sees the expected tile (a slot overwritten early)."""
    if isinstance(nkbs, int):
        nkbs = [nkbs]
    rng = random.Random(seed)
    full_k = [Bar(1) for _ in range(S)]
    full_v = [Bar(1) for _ in range(S)]
    empty_k = [Bar(empty_count) for _ in range(S)]
    empty_v = [Bar(empty_count) for _ in range(S)]
    full_q, empty_q = Bar(1), Bar(empty_count)
    content = [dict() for _ in range(S)]
    qcontent = {}
    inflight = []
    prod = {"tile": 0, "j": -1, "it": 0, "kv": "K"}
    warps = [{"tile": 0, "j": 0, "state": "q", "it": 0} for _ in range(nwarps)]

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
            if not empty_k[s].done(((u // S) & 1) ^ 1):
                return False
            full_k[s].expect_tx(1)
            inflight.append((s, ("K", (tc, j)), full_k[s]))
            prod["kv"] = "V"
            return True
        if not empty_v[s].done(((u // S) & 1) ^ 1):
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
        if st["state"] == "s0":
            s0 = it % S
            if not full_k[s0].done((it // S) & 1):
                return False
            assert content[s0]["K"] == (tc, 0) and qcontent["Q"] == tc
            empty_k[s0].arrive()
            if nkb == 1:
                empty_q.arrive()
            st["state"], st["j"] = ("loop", 1) if nkb > 1 else ("last", nkb)
            return True
        if st["state"] == "loop":
            u = it + j
            s, sp = u % S, (u - 1) % S
            if not (full_k[s].done((u // S) & 1) and full_v[sp].done(((u - 1) // S) & 1)):
                return False
            assert content[s]["K"] == (tc, j) and content[sp]["V"] == (tc, j - 1)
            assert qcontent["Q"] == tc
            empty_k[s].arrive()
            if j == nkb - 1:
                empty_q.arrive()
            assert content[sp]["V"] == (tc, j - 1)
            empty_v[sp].arrive()
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

    actors = [producer_step, land] + [lambda w=w: warp_step(w) for w in range(nwarps)]
    for _ in range(400000):
        if all(w["tile"] == len(nkbs) for w in warps):
            return True
        order = list(range(len(actors)))
        rng.shuffle(order)
        if not any(actors[a]() for a in order):
            return False  # deadlock
    return False


# ---- the ping-pong over NC warpgroups: named barriers 1 .. NC (bar.sync / bar.arrive, 256) ----
def pingpong_protocol(nkbs, seed, NC=3, init=True, skip_last=True, nxt=None):
    """The kernel's rule: warpgroup c syncs on 1 + c before each loop step's GEMMs, arrives on
    1 + (c+1) % NC after them (the last warpgroup not after its last step); the last warpgroup
    arrives on 1 once at the tile's start (nkb > 1). True when all tiles finish, every barrier
    ends with no pending arrival and the issue order is 0, 1, .., NC-1, 0, ... within each tile."""
    if isinstance(nkbs, int):
        nkbs = [nkbs]
    nxt = nxt or (lambda c: (c + 1) % NC)
    rng = random.Random(seed)
    arrived = {b: 0 for b in range(1, NC + 1)}
    waiting = {b: False for b in range(1, NC + 1)}
    issues = []
    tile = [0] * NC
    pc = [0] * NC
    state = ["init"] * NC

    def bar_arrive(b):
        arrived[b] += 128
        assert arrived[b] <= 256, "a second arrival in one phase"

    def step(cw):
        if tile[cw] >= len(nkbs):
            return False
        nkb = nkbs[tile[cw]]
        own = 1 + cw
        if state[cw] == "init":
            if cw == NC - 1 and nkb > 1 and init:
                bar_arrive(1)
            state[cw] = "loop" if nkb > 1 else "next"
            return True
        if state[cw] == "loop":
            if not waiting[own]:
                arrived[own] += 128
                waiting[own] = True
                assert arrived[own] <= 256
            if arrived[own] < 256:
                return False
            arrived[own] -= 256
            waiting[own] = False
            issues.append((tile[cw], cw))
            j = pc[cw] + 1
            if cw < NC - 1 or j < nkb - 1 or not skip_last:
                bar_arrive(1 + nxt(cw))
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

    try:
        for _ in range(200000):
            if tile == [len(nkbs)] * NC:
                per_tile = {}
                for t, c in issues:
                    per_tile.setdefault(t, []).append(c)
                order_ok = all(v == [i % NC for i in range(len(v))] for v in per_tile.values())
                return order_ok and all(a == 0 for a in arrived.values())
            order = list(range(NC))
            rng.shuffle(order)
            if not any(step(c) for c in order):
                return False  # deadlock
    except AssertionError:
        return False
    return False


def main():
    torch.manual_seed(0)
    fails = 0

    def report(line, ok):
        nonlocal fails
        fails += not ok
        print(line + (" ok" if ok else " FAIL"), flush=True)

    import json
    import os
    task = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "catalog", "tasks",
                        "flash-attention-prefill", "task.json")
    wl = json.load(open(task))["workloads"]["synthetic"]
    ragged = [3, 17, 64, 65, 127, 128, 191, 192, 193, 383, 384, 385, 1000]
    runs = [("correctness", tuple(s)) for s in wl["correctness"]]
    runs += [("measure", tuple(s)) for s in wl["measure"]]
    runs += [("ragged", (1, 2, T, 64)) for T in ragged]
    runs += [("ragged", (1, 1, T, 128)) for T in (3, 129, 191, 193, 383)]
    for kind, shp in runs:
        q, k, v = (torch.randn(*shp).to(torch.bfloat16) for _ in range(3))
        ref = reference(q, k, v)
        cover = {}
        out = emulate(q, k, v, cover=cover)
        e = relfro(out, ref)
        finite = bool(torch.isfinite(out.float()).all())
        cov = coverage_ok(cover, shp[2])
        NC, BM = cfg(shp[3])
        report("%s shape %s BM %d consumers %d relfro %.2e finite %s coverage %s" % (kind, shp, BM, NC, e, finite, cov),
               e < 0.02 and finite and cov)

    # The geometry at T = 4096, D = 64: blocks per query block, S elements against the causal
    # minimum (BM 192 masks whole blocks for some warpgroups rather than skipping them).
    T = 4096
    for BM in (128, 192):
        nmb = -(-T // BM)
        nk = [num_kb(mb, T, BM) for mb in range(nmb)]
        S_el = sum(nk[mb] * BN * BM for mb in range(nmb))
        live_wg = sum(nk[mb] * BN * 64 for mb in range(nmb) for cw in range(BM // 64) if mb * BM + cw * 64 < T)
        dead = sum(1 for mb in range(nmb) for cw in range(BM // 64) for j in range(nk[mb])
                   if j * BN > mb * BM + cw * 64 + 63)
        wgblocks = sum(nk[mb] * (BM // 64) for mb in range(nmb))
        cmin = T * (T + 1) / 2
        print("T 4096 BM %d: %d query blocks, key blocks per query block %s ... %s; S elements per head %.4g "
              "if every warpgroup computes (causal minimum %.4g: %.1f%% extra), %.4g with the warpgroups past T "
              "idle (%.1f%% extra); warpgroup-blocks wholly masked (computed) %d of %d (%.1f%%)"
              % (BM, nmb, nk[:6], nk[-3:], S_el, cmin, 100 * (S_el / cmin - 1), live_wg, 100 * (live_wg / cmin - 1),
                 dead, wgblocks, 100 * dead / wgblocks), flush=True)
    # The graded D = 64 shape: CTAs per wave (132 SMs, one CTA an SM at 152 KiB / 512 threads).
    for BM in (128, 192):
        ctas = -(-T // BM) * 8 * 32
        print("graded (8, 32, 4096, 64) BM %d: %d CTAs, %.2f waves of 132" % (BM, ctas, ctas / 132), flush=True)

    # Deliberately wrong variants at BM = 192 must be caught (relfro, NaN or coverage).
    q, k, v = (torch.randn(1, 2, 400, 64).to(torch.bfloat16) for _ in range(3))
    ref = reference(q, k, v)
    wrong = (("key blocks mb + 1 (fa3v1's count)", dict(nkb_fn=lambda mb, T, BM: min(mb + 1, -(-T // BN)))),
             ("key blocks floor((mb+1) 192 / 128)", dict(nkb_fn=lambda mb, T, BM: max(1, ((mb + 1) * BM) // BN))),
             ("mask only the last block", dict(diag_fn=lambda j, r: j == num_kb(r // 192, 400, 192) - 1)),
             ("mask col >= row", dict(mask_fn=lambda c, r: c >= r)),
             ("mask col > row + 1", dict(mask_fn=lambda c, r: c > r + 1)),
             ("mask decided by the CTA's last row", dict(diag_fn=lambda j, r: (j + 1) * BN - 1 > r - r % 192 + 191)),
             ("mask decided by the CTA's first row + 64", dict(diag_fn=lambda j, r: (j + 1) * BN - 1 > r - r % 192 + 64)))
    for name, kw in wrong:
        try:
            cover = {}
            out = emulate(q, k, v, cover=cover, **kw)
            e = relfro(out, ref)
            cov = coverage_ok(cover, 400)
        except Exception:  # noqa: BLE001
            e, cov = float("nan"), False
        caught = not (e < 0.02) or not cov
        report("wrong variant '%s': relfro %.2e coverage %s caught" % (name, e, cov), caught)

    # Equivalent variants (bit for bit): no T clamp (blocks wholly past T zero-filled and masked),
    # the mask decided per warpgroup (block edges, multiples of 128, never split a 64-row group).
    q, k, v = (torch.randn(1, 2, 385, 64).to(torch.bfloat16) for _ in range(3))
    base = emulate(q, k, v)
    for name, kw in (("warpgroups past T computing too", dict(skip_dead=False)),
                     ("no T clamp", dict(nkb_fn=lambda mb, T, BM: -(-((mb + 1) * BM) // BN))),
                     ("mask decided per warpgroup", dict(diag_fn=lambda j, r: (j + 1) * BN - 1 > r - r % 64))):
        same = torch.equal(emulate(q, k, v, **kw), base)
        report("equivalent variant '%s': bit-identical %s" % (name, same), same)

    # The ring (full/empty K and V, Q full/empty) with 12 consumer warps and count 12, BM 192's
    # key-block counts, 4 stages (the default), 2 and 6 (the most that fits).
    walk = [num_kb(mb, 4096, 192) for mb in reversed(range(22))]
    t1000 = [num_kb(mb, 1000, 192) for mb in reversed(range(6))]
    for S in (2, 4, 6):
        for nkbs in (1, 2, 3, 32, t1000, walk[:6] + walk[-4:]):
            ok = all(ring_protocol(nkbs, S, seed) for seed in range(10))
            report("ring 12 warps count 12 stages %d key blocks %s: 10 interleavings" % (S, nkbs), ok)
    # D = 128 (8 warps, count 8) unchanged from fa3v1.
    ok = all(ring_protocol([16, 9, 2, 1], 2, seed, nwarps=8, empty_count=8) for seed in range(10))
    report("ring 8 warps count 8 (D = 128) stages 2 key blocks [16, 9, 2, 1]: 10 interleavings", ok)
    # fa3v1's count (8) with 12 warps: a slot or Q is overwritten before every warp read it (or a
    # phase runs ahead and the walk deadlocks): must be caught.
    bad = 0
    for seed in range(10):
        try:
            bad += not ring_protocol([4, 3, 2], 2, seed, nwarps=12, empty_count=8)
        except AssertionError:
            bad += 1
    report("ring 12 warps with fa3v1's count 8: caught in %d of 10 interleavings" % bad, bad > 0)

    # The ping-pong, 3 warpgroups round robin (D = 64) and 2 (D = 128, fa3v1's rule).
    for NC in (3, 2):
        for nkbs in (1, 2, 3, 32, t1000, walk):
            ok = all(pingpong_protocol(nkbs, seed, NC=NC) for seed in range(20))
            report("ping-pong %d warpgroups key blocks %s: 20 interleavings, complete, order round robin"
                   % (NC, nkbs if isinstance(nkbs, int) or len(nkbs) < 10 else "T=4096 walk"), ok)
    # Wrong ping-pong rules must fail: no initial signal (deadlock), the last warpgroup arriving
    # after its last step too (a phase left open / a double arrival), fa3v1's 2-way rule (2 - c).
    for name, kw in (("no initial arrival", dict(init=False)),
                     ("arrive after the last step too", dict(skip_last=False)),
                     ("2-way partner 2 - c with 3 warpgroups", dict(nxt=lambda c: 1 - c if c < 2 else 0))):
        bad = sum(not pingpong_protocol([5, 3, 2], seed, NC=3, **kw) for seed in range(10))
        report("wrong ping-pong '%s': caught in %d of 10" % (name, bad), bad > 0)
    print("failures: %d" % fails)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
