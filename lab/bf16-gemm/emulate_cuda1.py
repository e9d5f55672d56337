# CPU emulation of lab/bf16-gemm/cuda1's bookkeeping (NOTES.md "Round 1"), run with /usr/bin/python3
# (torch) from the repository root; ~1 min on 2 cores. Written from the .cu, line for line where it
# matters; what it cannot see is the hardware (the wgmma's arithmetic, TMA timing, the real memory
# model). Checks:
#  1. the persistent grouped walk (tile_coords, t = blockIdx.x; t += gridDim.x) covers every output
#     tile exactly once at every correctness and graded shape (132 SMs, and 114 / 78 / 7 as
#     stand-ins for other parts), producer and consumers walking the same list;
#  2. the path each shape takes (the host's tests): the graded shapes the TMA kernel with the TMA
#     store, the rest as the .cu decides;
#  3. the mbarrier ring protocol under random interleavings: a producer thread, two consumer
#     warpgroups (4 warp arrivals each on the empty barrier), TMA copies and wgmma groups that
#     complete at random later times, and the epilogue's bulk store groups (wait_group.read 1 before
#     a slot is rewritten): no deadlock, no parity aliasing (a wait passes only on the phase it
#     means), every stage a consumer reads holds the (tile, k block) it expects and is not
#     overwritten while a wgmma group that reads it is in flight, no epilogue slot is rewritten
#     while a store still reads it;
#  4. the data path at small and ragged shapes, in exact float32 from bf16 inputs: TMA boxes
#     [box_rows x 64] at (kb*64, tile row) written into shared memory as SWIZZLE_128B (zeros past
#     the tensor's rows and K), read back through the wgmma descriptors (start + 32 B per k16,
#     SBO 1024, the address-bit swizzle), accumulated over all k blocks, the fragment written to the
#     epilogue boxes at the kernel's swizzled addresses (a bijection, 32 distinct banks a warp
#     store), stored by TMA (skipped past M / N, clipped) or by the masked register epilogue, and
#     the fallback kernel's tiling; each compared with the reference (A.float() @ B.float().t())
#     rounded to bf16: must be bit-identical up to the fp32 summation order (checked against the
#     task's tolerance, and a deliberately wrong swizzle must fail).
import json
import os
import random
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BM, BN, BK, STAGES, GROUP_M = 128, 256, 64, 4, 8
EPI_SLOTS = 2


def tile_coords(t, tiles_m, tiles_n, group_m=GROUP_M):
    width = group_m * tiles_n
    first = (t // width) * group_m
    rows = min(tiles_m - first, group_m)
    return first + (t % width) % rows, (t % width) // rows


def walk(M, N, sms):
    tiles_m, tiles_n = -(-M // BM), -(-N // BN)
    tiles = tiles_m * tiles_n
    grid = min(tiles, sms)
    return [[tile_coords(t, tiles_m, tiles_n) for t in range(c, tiles, grid)] for c in range(grid)]


def path(M, N, K, a_align=0, b_align=0, out_align=0):
    """kzoo_bf16_gemm's choice: 1 TMA + TMA store, 2 TMA + register epilogue, 3 fallback."""
    if K % 8 or a_align % 16 or b_align % 16:
        return 3
    return 1 if (N % 8 == 0 and out_align % 16 == 0) else 2


def check_walks(shapes):
    lines, ok_all = [], True
    for (M, N, K) in shapes:
        for sms in (132, 114, 78, 7):
            tiles_m, tiles_n = -(-M // BM), -(-N // BN)
            w = walk(M, N, sms)
            seen = [x for c in w for x in c]
            ok = (len(seen) == len(set(seen)) == tiles_m * tiles_n
                  and all(0 <= a < tiles_m and 0 <= b < tiles_n for a, b in seen))
            ok_all &= ok
            if sms == 132:
                waves = max(len(c) for c in w)
                lines.append("walk %s: %d tiles (%dx%d), %d CTAs, %d tiles on the busiest (ideal %.2f) -> %s"
                             % ((M, N, K), tiles_m * tiles_n, tiles_m, tiles_n, len(w), waves,
                                tiles_m * tiles_n / 132, "ok" if ok else "FAIL"))
            elif not ok:
                lines.append("walk %s sms=%d FAIL" % ((M, N, K), sms))
    return ok_all, lines


# ---------------------------------------------------------------- 3. the ring protocol
class Bar:
    """An mbarrier: `count` arrivals (+ tx bytes) complete a phase; try_wait.parity(P) passes
    iff the current phase's parity differs from P (P = the phase being waited for has completed)."""

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
        assert self.pending >= 0, "too many arrivals"
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count

    def passes(self, parity):
        return (self.phase & 1) != parity


def protocol_run(tiles_per_cta, nkb, seed, bug=None):
    rng = random.Random(seed)
    full = [Bar(1) for _ in range(STAGES)]
    empty = [Bar(8) for _ in range(STAGES)]
    stage_tag = [None] * STAGES          # what the stage holds (tile, kb), set when TMA lands
    readers = [0] * STAGES               # wgmma groups in flight reading the stage
    errors = []
    agents = []                          # generators yielding a wait predicate
    STAGE_BYTES = 48 * 1024

    def tma(s, tag):
        yield lambda: True  # lands some time later
        if readers[s]:
            errors.append("TMA overwrote stage %d while %d wgmma groups read it" % (s, readers[s]))
        stage_tag[s] = tag
        full[s].complete_tx(STAGE_BYTES)

    def producer():
        it = 0
        for t in range(tiles_per_cta):
            for kb in range(nkb):
                s, rnd = it % STAGES, it // STAGES
                par = (rnd & 1) ^ 1
                yield lambda s=s, par=par: empty[s].passes(par)
                # no aliasing: the empty barrier must have completed exactly rnd phases
                if empty[s].phase != rnd:
                    errors.append("producer: empty[%d] phase %d, expected %d" % (s, empty[s].phase, rnd))
                full[s].arrive(expect_tx=STAGE_BYTES)
                agents.append(tma(s, (t, kb)))
                it += 1

    def consumer(cw):
        it = 0
        groups = []          # in-flight wgmma groups: [stage, done flag]
        epi_pending = []     # this warpgroup's bulk store groups: [slot, done]
        slot_busy = [0] * EPI_SLOTS

        def wgmma_group(g):
            yield lambda: True
            readers[g[0]] -= 1
            g[1] = True

        def bulk_store(st):
            yield lambda: True
            slot_busy[st[0]] -= 1
            st[1] = True

        for t in range(tiles_per_cta):
            for kb in range(nkb):
                g_ = it + kb
                s = g_ % STAGES
                par = (g_ // STAGES) & 1
                yield lambda s=s, par=par: full[s].passes(par)
                if full[s].phase != g_ // STAGES + 1:
                    errors.append("consumer %d: full[%d] phase %d, expected %d" % (cw, s, full[s].phase, g_ // STAGES + 1))
                if stage_tag[s] != (t, kb):
                    errors.append("consumer %d read stage %d holding %s, wanted %s" % (cw, s, stage_tag[s], (t, kb)))
                grp = [s, False]
                readers[s] += 1
                groups.append(grp)
                agents.append(wgmma_group(grp))
                if kb > 0:
                    # wait_group 1: all but the newest group complete
                    yield lambda: all(g[1] for g in groups[:-1])
                    prev = groups[-1] if bug == "release_newest" else groups[-2]
                    for _ in range(4):
                        empty[prev[0]].arrive()
            yield lambda: all(g[1] for g in groups)
            if bug != "release_newest" or nkb == 1:
                for _ in range(4):
                    empty[groups[-1][0]].arrive()
            groups.clear()
            it += nkb
            for b in range(4):  # the epilogue's four boxes
                slot = b % EPI_SLOTS
                # wait_group.read 1 (PTX): all but the most recent group complete (their reads);
                # the stores themselves finish in any order
                yield lambda: bug == "no_epi_wait" or all(e[1] for e in epi_pending[:-1])
                if slot_busy[slot]:
                    errors.append("consumer %d rewrote epilogue slot %d while a store reads it" % (cw, slot))
                st = [slot, False]
                slot_busy[slot] += 1
                epi_pending.append(st)
                agents.append(bulk_store(st))
        yield lambda: all(e[1] for e in epi_pending)  # bulk wait_group 0 before exit

    agents.extend([producer(), consumer(0), consumer(1)])
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
            return ["deadlock with %d agents waiting" % len(agents)]
        a = rng.choice(ready)
        del waits[a]
        try:
            waits[a] = next(a)
        except StopIteration:
            agents.remove(a)
        steps += 1
    return errors


# ---------------------------------------------------------------- 4. the data path
def tma_load_sw128(src, r0, c0, box_rows):
    """TMA 2D box [box_rows x 64 bf16] at (c0 = K column, r0 = row) into a byte-addressed shared
    image (here: an element array of box_rows*64 slots): element (r, c) of the box goes to byte
    r*128 + ((2c // 16) ^ (r % 8)) * 16 + (2c % 16); zeros past the tensor."""
    rows, cols = src.shape
    box = torch.zeros(box_rows, BK)
    rr = slice(r0, min(r0 + box_rows, rows))
    cc = slice(c0, min(c0 + BK, cols))
    if r0 < rows and c0 < cols:
        box[:rr.stop - r0, :cc.stop - c0] = src[rr, cc]
    img = torch.zeros(box_rows * 64)
    r = torch.arange(box_rows).view(-1, 1).expand(box_rows, BK)
    c = torch.arange(BK).view(1, -1).expand(box_rows, BK)
    byte = r * 128 + (((2 * c) // 16) ^ (r % 8)) * 16 + (2 * c) % 16
    img[byte.reshape(-1) // 2] = box.reshape(-1)
    return img


def wgmma_read(img, start_byte, rows, swizzle=True):
    """The K-major SW128 operand a descriptor with start address start_byte (from a 1024-aligned
    stage base), SBO 1024, describes: row r, k16 element kk at address start + (r // 8) * 1024 +
    (r % 8) * 128 + 2 kk, then address bits 4-6 XOR bits 7-9."""
    r = torch.arange(rows).view(-1, 1).expand(rows, 16)
    kk = torch.arange(16).view(1, -1).expand(rows, 16)
    addr = start_byte + (r // 8) * 1024 + (r % 8) * 128 + 2 * kk
    if swizzle:
        addr = addr ^ (((addr >> 7) & 7) << 4)
    return img[addr // 2]


def epi_box_addr(lane, warp, h, i):
    """st_shared_b32's byte offset in the slot: row r = warp*16 + lane/4 + 8h, chunk i ^ (r % 8)."""
    r = warp * 16 + lane // 4 + 8 * h
    return r * 128 + ((i ^ (r & 7)) << 4) + 4 * (lane % 4)


def check_epi_layout():
    addrs = {}
    ok = True
    for warp in range(4):
        for lane in range(32):
            for h in range(2):
                for i in range(8):
                    a = epi_box_addr(lane, warp, h, i)
                    addrs[a] = (warp, lane, h, i)
    ok &= sorted(addrs) == list(range(0, 8192, 4))
    # bank conflicts: one store instruction = fixed (h, i), the warp's 32 lanes
    for warp in range(4):
        for h in range(2):
            for i in range(8):
                banks = {(epi_box_addr(l, warp, h, i) // 4) % 32 for l in range(32)}
                ok &= len(banks) == 32
    # read back as SWIZZLE_128B: element (r, c) of the box at r*128 + ((2c//16) ^ (r%8))*16 + 2c%16
    for warp in range(4):
        for lane in range(32):
            for h in range(2):
                for i in range(8):
                    r = warp * 16 + lane // 4 + 8 * h
                    c = 8 * i + 2 * (lane % 4)  # the pair's first column within the box
                    want = r * 128 + (((2 * c) // 16) ^ (r % 8)) * 16 + (2 * c) % 16
                    ok &= epi_box_addr(lane, warp, h, i) == want
    return ok


def emulate_kernel(A, B, bad_desc=False):
    """The TMA kernel (paths 1 and 2) on bf16-valued float tensors, CTA by CTA."""
    M, K = A.shape
    N = B.shape[0]
    p = path(M, N, K)
    assert p in (1, 2)
    nkb = -(-K // BK)
    out = torch.full((M, N), float("nan"))
    for cta in walk(M, N, 132):
        for tm, tn in cta:
            acc = [torch.zeros(64, BN), torch.zeros(64, BN)]
            for kb in range(nkb):
                a_img = tma_load_sw128(A, tm * BM, kb * BK, BM)
                b_img = tma_load_sw128(B, tn * BN, kb * BK, BN)
                for cw in range(2):
                    for k in range(BK // 16):
                        step = 32 * k + (16 if bad_desc and k == 1 else 0)
                        a = wgmma_read(a_img, cw * 64 * 128 + step, 64)
                        b = wgmma_read(b_img, step, BN)
                        acc[cw] = acc[cw] + a @ b.t()
            for cw in range(2):
                y = tm * BM + cw * 64
                frag = acc[cw]
                if p == 1:
                    for b in range(BN // 64):
                        x = tn * BN + 64 * b
                        # the box the fragment writes (addresses checked by check_epi_layout),
                        # rounded to bf16 as __floats2bfloat162_rn does
                        box = frag[:, 64 * b:64 * b + 64].to(torch.bfloat16).float()
                        if x < N and y < M:  # TMA clips at M and N
                            out[y:min(y + 64, M), x:min(x + 64, N)] = box[:min(64, M - y), :min(64, N - x)]
                else:
                    for r in range(64):
                        if y + r >= M:
                            continue
                        for col in range(BN):
                            if tn * BN + col < N:
                                out[y + r, tn * BN + col] = frag[r, col].to(torch.bfloat16).float()
    return out


def emulate_fallback(A, B):
    M, K = A.shape
    N = B.shape[0]
    T, FK = 64, 32
    out = torch.full((M, N), float("nan"))
    for by in range(-(-M // T)):
        for bx in range(-(-N // T)):
            m0, n0 = by * T, bx * T
            c = torch.zeros(T, T)
            for k0 in range(0, K, FK):
                As = torch.zeros(T, FK)
                Bs = torch.zeros(T, FK)
                ra, ka = min(T, M - m0), min(FK, K - k0)
                rb = min(T, N - n0)
                As[:ra, :ka] = A[m0:m0 + ra, k0:k0 + ka]
                Bs[:rb, :ka] = B[n0:n0 + rb, k0:k0 + ka]
                c += As @ Bs.t()
            # thread (tx, ty) owns rows ty + 16 i, columns tx + 16 j: every (r, col) of the tile once
            own = torch.zeros(T, T, dtype=torch.int32)
            for ty in range(16):
                for tx in range(16):
                    for i in range(4):
                        for j in range(4):
                            own[ty + 16 * i, tx + 16 * j] += 1
            assert bool((own == 1).all())
            rr, cc = min(T, M - m0), min(T, N - n0)
            out[m0:m0 + rr, n0:n0 + cc] = c[:rr, :cc].to(torch.bfloat16).float()
    return out


def rel_frob(got, ref):
    return float(torch.linalg.norm(got - ref) / max(float(torch.linalg.norm(ref)), 1e-30))


def main():
    with open(os.path.join(ROOT, "catalog", "tasks", "bf16-gemm", "task.json")) as f:
        task = json.load(f)
    w = task["workloads"]["synthetic"]
    graded = [tuple(s) for s in w["graded"]]
    small = [tuple(s) for s in w["correctness"] + w["measure"]]
    tol = task["grading"]["tolerance"]["value"]
    lines, fails = [], 0

    ok, wl = check_walks(small + graded)
    lines += wl
    fails += not ok

    for s in small + graded:
        p = path(*s)
        lines.append("path %s: %d (%s)" % (s, p, {1: "TMA + TMA store", 2: "TMA + register store", 3: "fallback kernel"}[p]))
        if s in graded and p != 1:
            fails += 1
            lines.append("  FAIL: a graded shape off the fast path")
    lines.append("path with a misaligned A base (graded shape 0): %d" % path(*graded[0], a_align=2))

    # box coordinates at the graded shapes: every load's coordinates in range, the box counts
    for (M, N, K) in graded:
        nkb = -(-K // BK)
        tiles_m, tiles_n = -(-M // BM), -(-N // BN)
        loads = sum(len(c) for c in walk(M, N, 132)) * nkb
        inb = all(tm * BM < M and tn * BN < N for c in walk(M, N, 132) for tm, tn in c)
        lines.append("graded %s: %d k blocks a tile, %d stage loads of 48 KiB, boxes start in bounds: %s, K %% 64 == 0: %s"
                     % ((M, N, K), nkb, loads, inb, K % BK == 0))
        fails += not inb

    # 3. protocol
    runs, perr = 0, []
    for tiles in (1, 2, 3, 5):
        for nkb in (1, 2, 3, 4, 5, 9):
            for seed in range(12):
                e = protocol_run(tiles, nkb, 1000 * tiles + 10 * nkb + seed)
                runs += 1
                if e:
                    perr.append("tiles=%d nkb=%d seed=%d: %s" % (tiles, nkb, seed, e[:2]))
    lines.append("protocol: %d random interleavings (1-5 tiles a CTA, 1-9 k blocks, 4 stages), %d with errors"
                 % (runs, len(perr)))
    lines += ["  " + x for x in perr[:10]]
    fails += len(perr)
    for bug in ("release_newest", "no_epi_wait"):  # negative controls: the check must see them
        bad = sum(1 for seed in range(40) if protocol_run(3, 5, seed, bug))
        lines.append("protocol negative control %s: %d of 40 interleavings flagged -> %s" % (bug, bad, "seen" if bad else "NOT SEEN"))
        fails += bad == 0

    # 4. data path
    ok = check_epi_layout()
    lines.append("epilogue box layout: bijection onto 8 KiB, 32 banks a warp store, SWIZZLE_128B read-back: %s"
                 % ("ok" if ok else "FAIL"))
    fails += not ok
    torch.manual_seed(0)
    shapes = [s for s in small if path(*s) != 3] + [(1, 8, 8), (200, 264, 72), (130, 520, 136), (64, 256, 64),
                                                     (257, 300, 200), (5, 24, 1032)]
    for s in shapes:
        M, N, K = s
        A = torch.randn(M, K).bfloat16().float()
        B = torch.randn(N, K).bfloat16().float()
        ref = (A @ B.t()).to(torch.bfloat16).float()
        got = emulate_kernel(A, B)
        nan = int(torch.isnan(got).sum())
        m = rel_frob(torch.nan_to_num(got), ref)
        ok = nan == 0 and m <= tol
        fails += not ok
        lines.append("kernel %s path %d: rel-frobenius %.2e, unwritten %d -> %s" % (s, path(*s), m, nan, "ok" if ok else "FAIL"))
    M, N, K = 129, 257, 1000
    A = torch.randn(M, K).bfloat16().float()
    B = torch.randn(N, K).bfloat16().float()
    m = rel_frob(torch.nan_to_num(emulate_kernel(A, B, bad_desc=True)), (A @ B.t()).to(torch.bfloat16).float())
    lines.append("kernel %s with a wrong k16 descriptor step (negative control): rel-frobenius %.2e -> %s"
                 % ((M, N, K), m, "seen" if m > tol else "NOT SEEN"))
    fails += m <= tol
    for s in [s for s in small if path(*s) == 3] + [(70, 130, 33)]:
        M, N, K = s
        A = torch.randn(M, K).bfloat16().float()
        B = torch.randn(N, K).bfloat16().float()
        ref = (A @ B.t()).to(torch.bfloat16).float()
        got = emulate_fallback(A, B)
        nan = int(torch.isnan(got).sum())
        m = rel_frob(torch.nan_to_num(got), ref)
        ok = nan == 0 and m <= tol
        fails += not ok
        lines.append("fallback %s: rel-frobenius %.2e, unwritten %d -> %s" % (s, m, nan, "ok" if ok else "FAIL"))
    lines.append("FAILURES: %d" % fails)
    print("\n".join(lines))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
