#!/usr/bin/env python3
"""CPU checks of rs3/fp8_gemm_sm90.cu's new parts (lab NOTES, round 13); no GPU needed.

1. The A fragment from ldmatrix: a swizzled 128-byte-row tile as TMA writes it (16-byte chunk c
   of row r at (c ^ (r % 8)) * 16), ldmatrix.x4 as the PTX ISA defines it (lanes 8q..8q+7 give
   matrix q's row addresses; lane t receives bytes 4 (t % 4)..+3 of row t / 4 of each matrix),
   with the kernel's lane addressing; every register byte is compared with CUTLASS's
   ALayout_64x32 (m = 16 w + t/4 + 8 v1, k = 4 (t % 4) + v0 + 16 v2, register v1 + 2 v2).
2. The group schedule (and round 12's dp128's, one group a k-block): the consumer's control flow transcribed step by step (issue, wait,
   promote, release, load_a, scales, full) for 1..13 k-blocks, run against a model of wgmma
   groups (committed in order; wait_group n leaves the n newest pending): every (k-block, group)
   issued and promoted once, from a complete partial, with its own k-block's scales and A; no A
   buffer or scale set overwritten while something still needs it; every stage released once,
   in order, after its three groups completed; nothing pending at the end. A wrong schedule is
   caught (negative controls).
3. The B scale block of each 64-column group (b_of) against the columns it covers.

  python3 lab/fp8-blockscale-gemm/emulate_rs3.py   (prints FAILURES: 0 when all hold)
"""
import random
import sys

FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)


# ---- 1. ldmatrix into the wgmma A fragment ----
def swizzled(tile):
    """tile[r][b] (rows of 128 bytes) -> the flat shared-memory image TMA's SWIZZLE_128B writes."""
    img = bytearray(len(tile) * 128)
    for r, row in enumerate(tile):
        for c in range(8):
            dst = r * 128 + ((c ^ (r % 8)) << 4)
            img[dst:dst + 16] = bytes(row[16 * c:16 * c + 16])
    return img


def ldmatrix_addr(warp_rows, j, lane):  # the kernel's ldmatrix_a()
    return warp_rows + ((lane % 8) + 8 * ((lane // 8) % 2)) * 128 + (((2 * j + lane // 16) ^ (lane % 8)) << 4)


def ldmatrix_x4(img, addrs):
    """addrs[lane] -> regs[lane][q] as 4 bytes (PTX ISA: ldmatrix .m8n8 .x4 .b16, untransposed)."""
    regs = [[None] * 4 for _ in range(32)]
    for q in range(4):
        rows = [addrs[8 * q + i] for i in range(8)]
        for t in range(32):
            a = rows[t // 4] + 4 * (t % 4)
            regs[t][q] = bytes(img[a:a + 4])
    return regs


def fragment_check(rng):
    tile = [[rng.randrange(256) for _ in range(128)] for _ in range(128)]  # a stage's A: 128 rows x 128 k
    img = swizzled(tile)
    for cw in range(2):
        for w in range(4):
            warp_rows = (cw * 64 + w * 16) * 128
            for j in range(4):
                regs = ldmatrix_x4(img, [ldmatrix_addr(warp_rows, j, lane) for lane in range(32)])
                for t in range(32):
                    for v1 in range(2):
                        for v2 in range(2):
                            r = v1 + 2 * v2
                            m = cw * 64 + 16 * w + t // 4 + 8 * v1
                            k = 32 * j + 4 * (t % 4) + 16 * v2
                            check(list(regs[t][r]) == tile[m][k:k + 4],
                                  "fragment: cw %d warp %d step %d lane %d reg %d" % (cw, w, j, t, r))
    # negative control: without the swizzle term the fragment is wrong
    bad = 0
    regs = ldmatrix_x4(img, [(lane % 8 + 8 * ((lane // 8) % 2)) * 128 + ((lane // 16) << 4) for lane in range(32)])
    for t in range(32):
        if list(regs[t][0]) != tile[t // 4][4 * (t % 4):4 * (t % 4) + 4]:
            bad += 1
    check(bad > 0, "fragment: an unswizzled address went unnoticed")


# ---- 2. the group schedule ----
class Model:
    def __init__(self, nkb, groups=3):
        self.nkb = nkb
        self.groups = groups  # groups a k-block: rs3's three 64-wide ones, dp128's one
        self.pending = []  # (kb, g, partial, abuf) in commit order
        self.partial = {}  # name -> [kb, g, promoted]
        self.abuf = {}     # name -> kb loaded
        self.sset = {}     # name -> kb loaded
        self.filled = set()
        self.promoted = set()
        self.issued = set()
        self.released = []
        self.errors = []

    def err(self, what):
        self.errors.append(what)

    def full(self, kb):
        self.filled.add(kb)

    def load_a(self, kb, a):
        if kb not in self.filled:
            self.err("load_a(%d) before its full barrier" % kb)
        if any(p[3] == a for p in self.pending):
            self.err("load_a(%d) into %s while a pending group reads it" % (kb, a))
        self.abuf[a] = kb

    def scales(self, kb, s):
        old = self.sset.get(s)
        if old is not None and any((old, g) not in self.promoted for g in range(self.groups)):
            self.err("scales(%d) into %s while k-block %d still needs them" % (kb, s, old))
        self.sset[s] = kb

    def issue(self, p, a, kb, g):
        if kb not in self.filled:
            self.err("issue(%d, %d) before its full barrier" % (kb, g))
        if self.abuf.get(a) != kb:
            self.err("issue(%d, %d) reads %s holding k-block %s" % (kb, g, a, self.abuf.get(a)))
        cur = self.partial.get(p)
        if cur is not None and not cur[2]:
            self.err("issue(%d, %d) into %s before its group (%d, %d) was promoted" % (kb, g, p, cur[0], cur[1]))
        self.partial[p] = [kb, g, False]
        self.pending.append((kb, g, p, a))
        self.issued.add((kb, g))

    def wait(self, n):
        self.pending = self.pending[len(self.pending) - n:] if n else []

    def promote(self, G, p, s):
        kb, g, done = self.partial.get(p, [None, None, True])
        if kb is None or done:
            self.err("promote<%d>(%s): nothing to promote" % (G, p))
            return
        if any(x[2] == p for x in self.pending):
            self.err("promote<%d>(%s) of (%d, %d) while it is pending" % (G, p, kb, g))
        if g != G:
            self.err("promote<%d>(%s) holds group %d" % (G, p, g))
        if self.sset.get(s) != kb:
            self.err("promote (%d, %d) with %s holding k-block %s" % (kb, g, s, self.sset.get(s)))
        if (kb, g) in self.promoted:
            self.err("(%d, %d) promoted twice" % (kb, g))
        self.promoted.add((kb, g))
        self.partial[p][2] = True

    def release(self, kb):
        if any(x[0] == kb for x in self.pending):
            self.err("release(%d) with a group of it pending" % kb)
        if any((kb, g) not in self.issued for g in range(self.groups)):
            self.err("release(%d) before all of its groups were issued" % kb)
        if self.released and self.released[-1] != kb - 1 or (not self.released and kb != 0):
            self.err("release(%d) out of order after %s" % (kb, self.released[-1:] or "none"))
        if kb in self.released:
            self.err("release(%d) twice" % kb)
        self.released.append(kb)

    def finish(self):
        if self.pending:
            self.err("pending at the end: %s" % self.pending)
        for kb in range(self.nkb):
            for g in range(self.groups):
                if (kb, g) not in self.promoted:
                    self.err("(%d, %d) never promoted" % (kb, g))
        if self.released != list(range(self.nkb)):
            self.err("released %s" % self.released)
        return self.errors


def consumer(m, nkb, top_wait=0):
    """rs3's consumer loop for one tile, step for step (top_wait: the loop's first wait)."""
    m.full(0); m.load_a(0, "a0"); m.scales(0, "sk"); m.issue("p0", "a0", 0, 0)
    k = 0
    while k + 2 < nkb:
        if top_wait == 0:
            m.wait(0); m.issue("p1", "a0", k, 1)
        else:  # the form ptxas serialised (C7514): issue, then wait_group 1
            m.issue("p1", "a0", k, 1); m.wait(1)
        m.promote(0, "p0", "sk")
        m.issue("p0", "a0", k, 2); m.wait(1); m.promote(1, "p1", "sk")
        m.full(k + 1); m.load_a(k + 1, "a1"); m.scales(k + 1, "sn"); m.issue("p1", "a1", k + 1, 0); m.wait(1)
        m.release(k); m.promote(2, "p0", "sk")
        m.issue("p0", "a1", k + 1, 1); m.wait(1); m.promote(0, "p1", "sn")
        m.issue("p1", "a1", k + 1, 2); m.wait(1); m.promote(1, "p0", "sn")
        m.full(k + 2); m.load_a(k + 2, "a0"); m.scales(k + 2, "sk"); m.issue("p0", "a0", k + 2, 0); m.wait(1)
        m.release(k + 1); m.promote(2, "p1", "sn")
        k += 2
    m.issue("p1", "a0", k, 1); m.wait(1); m.promote(0, "p0", "sk")
    m.issue("p0", "a0", k, 2); m.wait(1); m.promote(1, "p1", "sk")
    if k + 1 < nkb:
        m.full(k + 1); m.load_a(k + 1, "a1"); m.scales(k + 1, "sn"); m.issue("p1", "a1", k + 1, 0); m.wait(1)
        m.release(k); m.promote(2, "p0", "sk")
        m.issue("p0", "a1", k + 1, 1); m.wait(1); m.promote(0, "p1", "sn")
        m.issue("p1", "a1", k + 1, 2); m.wait(1); m.promote(1, "p0", "sn")
        m.wait(0); m.release(k + 1); m.promote(2, "p1", "sn")
    else:
        m.wait(0); m.release(k); m.promote(2, "p0", "sk")


def broken_early_load(m, nkb):
    """Negative control: k+1's A loaded into a0 (the buffer g2(k) still reads)."""
    m.full(0); m.load_a(0, "a0"); m.scales(0, "sk"); m.issue("p0", "a0", 0, 0)
    m.issue("p1", "a0", 0, 1); m.wait(1); m.promote(0, "p0", "sk")
    m.issue("p0", "a0", 0, 2); m.wait(1); m.promote(1, "p1", "sk")
    m.full(1); m.load_a(1, "a0")


def broken_wait(m, nkb):
    """Negative control: promoting after wait_group 2 (the group may still be in flight)."""
    m.full(0); m.load_a(0, "a0"); m.scales(0, "sk"); m.issue("p0", "a0", 0, 0)
    m.issue("p1", "a0", 0, 1); m.wait(2); m.promote(0, "p0", "sk")


def dp128_consumer(m, nkb):
    """dp128's consumer loop (round 12), step for step: one group a k-block, partials pa / pb, A read
    by the wgmmas from the stage itself (the "A buffer" is the stage: loaded at its full barrier)."""
    def open_kb(kb, sset):
        m.full(kb); m.load_a(kb, "stage%d" % kb); m.scales(kb, sset)
    open_kb(0, "x"); m.issue("pa", "stage0", 0, 0)
    kb = 0
    while kb + 2 < nkb:
        open_kb(kb + 1, "y"); m.issue("pb", "stage%d" % (kb + 1), kb + 1, 0); m.wait(1)
        m.release(kb); m.promote(0, "pa", "x")
        open_kb(kb + 2, "x"); m.issue("pa", "stage%d" % (kb + 2), kb + 2, 0); m.wait(1)
        m.release(kb + 1); m.promote(0, "pb", "y")
        kb += 2
    if kb + 1 < nkb:
        open_kb(kb + 1, "y"); m.issue("pb", "stage%d" % (kb + 1), kb + 1, 0); m.wait(1)
        m.release(kb); m.promote(0, "pa", "x")
        m.wait(0); m.release(kb + 1); m.promote(0, "pb", "y")
    else:
        m.wait(0); m.release(kb); m.promote(0, "pa", "x")


def schedule_check():
    for nkb in range(1, 14):
        m = Model(nkb, groups=1)
        dp128_consumer(m, nkb)
        for e in m.finish():
            check(False, "dp128 schedule nkb %d: %s" % (nkb, e))
    for nkb in range(1, 14):
        m = Model(nkb)
        consumer(m, nkb)
        for e in m.finish():
            check(False, "schedule nkb %d: %s" % (nkb, e))
        m = Model(nkb)
        consumer(m, nkb, top_wait=1)
        for e in m.finish():
            check(False, "schedule (wait_group 1 at the top) nkb %d: %s" % (nkb, e))
    m = Model(2)
    broken_early_load(m, 2)
    check(any("load_a" in e for e in m.errors), "schedule: the early A load went unnoticed")
    m = Model(1)
    broken_wait(m, 1)
    check(any("pending" in e for e in m.errors), "schedule: the short wait went unnoticed")


# ---- 3. each group's B scale block ----
def b_of(g, odd):  # the kernel's b_of: 0 = lo, 1 = hi
    return 0 if g == 0 else 1 if g == 2 else (1 if odd else 0)


def scale_block_check():
    for tn in range(0, 400):
        lo = (tn * 192) // 128
        for g in range(3):
            cols = range(192 * tn + 64 * g, 192 * tn + 64 * g + 64)
            blocks = {c // 128 for c in cols}
            check(len(blocks) == 1, "tile column %d group %d spans blocks %s" % (tn, g, blocks))
            check(lo + b_of(g, tn % 2 == 1) == min(blocks), "tile column %d group %d: b_of says block %d, columns are in %s"
                  % (tn, g, lo + b_of(g, tn % 2 == 1), blocks))


def main():
    rng = random.Random(13)
    fragment_check(rng)
    schedule_check()
    scale_block_check()
    for f in FAILURES[:40]:
        print("FAIL", f)
    print("FAILURES: %d" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
