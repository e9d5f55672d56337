"""CPU model of round 7's `cufd` (pd_sm90.cu + paged_attention_decode.py): no GPU, no nvcc run.

1. fragments(D, G16): replays the kernel's per-lane index arithmetic (cp.async placement with the
   XOR swizzles, the K reads and their k-step/byte -> mma slot assignment, Q's fragment d order, the
   S accumulator -> P fragment hand-over, the V word reads + prmt pairing, the output store's d) for
   all 32 lanes, builds each mma's A/B/C element -> (token, d) maps from the PTX m16n8k16 fragment
   layouts, and checks that every product pairs the same (token, d) on both sides, that each
   contraction covers every d (Q K^T) / every token of the page (P V) once, that the mask's token
   formula matches, and that the output d's cover [0, D) once. Also counts shared-memory bank
   conflicts of the K (lds.128: 4 phases of 8 lanes) and V (lds.32) reads and of the cp.async writes.
2. tiling: the split choice (splits_for) and the kernel's page walk at every correctness, measure and
   graded shape, full size, for resident-CTA counts 132 x {1..4}, forced chunks {1, 7, 32, 128},
   n in {L, L-1, 1}: every page of [0, cdiv(n, 16)) in exactly one (split, warp, step), a warp's
   steps <= 32 (page ids in one register a lane, each step's id among those loaded), no block-table
   index >= NBLK (the ids' load is bounded by the table, not by seq_lens), valid >= 1 in every
   processed page, chunk <= 128, grid dims in range.
3. numerics: the kernel's maths (q -> fp16, K/V exact, fp32 S through the derived maps, base-2
   online softmax a warp, p -> fp16, fp32 P V, the 4 warps' merge, the split merge, bf16 out) against
   the task's reference (relative-Frobenius, tolerance 0.01; the board's bound atol = rtol = 0.01),
   every correctness and measure shape, edges, and a 2-sequence slice of each graded shape with the
   graded B's splits.
4. execution: pd_sm90.cu's own kernels compiled for the CPU (g++ -DKZOO_PD_HOST_EMU with
   cufd/pd_host_emu.{h,cpp}: every CUDA thread a fiber, warp collectives and mma.sync m16n8k16 by
   the PTX fragment layouts, cp.async immediate, shared memory pre-filled with 0xff = fp8 NaN) and
   run through the python entry's split choice, against the reference at every correctness and
   measure shape, the edge shapes, varied lengths, forced split sizes and the graded slices.
usage: /usr/bin/python3 lab/paged-attention-decode/emulate_r7.py  (log: emulate_r7.txt)
"""
import ctypes
import math
import os
import subprocess
import sys
import tempfile
import time
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "judge"))
from kzoo_judge import compare, inputs, reference  # noqa: E402
from kzoo_judge import task as task_mod  # noqa: E402

PAGE, NWARP = 16, 4
# cufd is the catalog's solution since session 23: its sources live there alone; cufd/ keeps the
# CPU harness (pd_host_emu.{h,cpp}) that compiles them for the CPU.
SOL = os.path.join(HERE, "..", "..", "catalog", "solutions", "gpu", "h200", "attention", "paged_decode", "fp8",
                   "paged_attention_decode_eager", "src")


def load_cufd():
    """The candidate's python with its library load replaced (nothing is built or loaded here)."""
    path = os.path.join(SOL, "paged_attention_decode.py")
    src = open(path).read().replace("_build = _load_build()\n_lib = _build.load(STAGES)\n", "_build = None\n_lib = None\n")
    assert "_lib = None" in src
    mod = types.ModuleType("cufd_emul")
    mod.__file__ = path
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


# ---- 1. fragments -------------------------------------------------------------------------------
def kpos(D, x, row):
    return x ^ ((row & 1) << 2) if D == 128 else x


def vpos(D, x, row):
    return x ^ ((((row >> 1) & 3) << 1) & (D // 16 - 1))


def prmt(a, b, sel):
    """prmt.b32 default mode: byte i of the result = byte (sel >> 4i) & 7 of {b:a} (a = bytes 0-3)."""
    src = [(a >> (8 * i)) & 0xFF for i in range(4)] + [(b >> (8 * i)) & 0xFF for i in range(4)]
    return sum(src[(sel >> (4 * i)) & 7] << (8 * i) for i in range(4))


def fragments(D, vread=None, kread=None):
    vread = vread or vpos
    kread = kread or kpos
    NCH = D // 16
    PB = PAGE * D
    bad = []
    # cp.async placement: shared byte -> (token row, d), per buffer
    kinv, vinv = {}, {}
    for idx in range(PAGE * NCH):
        row, x = idx // NCH, idx % NCH
        for e in range(16):
            ka, va = row * D + kpos(D, x, row) * 16 + e, row * D + vpos(D, x, row) * 16 + e
            if ka in kinv or va in vinv:
                bad.append(("write collision", row, x))
            kinv[ka], vinv[va] = (row, 16 * x + e), (row, 16 * x + e)
    if len(kinv) != PB or len(vinv) != PB:
        bad.append(("write map not onto the page", len(kinv), len(vinv)))
    # Q K^T: A = Q (rows g, g+8), B = K^T; k-step j, k slot -> d from K's side and from Q's side
    KS = D // 16
    dK = {}   # (j, k) -> d (from K)
    tokS = {}  # (t, n) -> token
    dQ = {}   # (j, k) -> d (from Q)
    bank_k = 0
    for t in range(2):
        for i in range(NCH // 4):
            addrs = []
            for lane in range(32):
                g, c = lane >> 2, lane & 3
                row = 8 * t + g
                base = row * D + kread(D, c + 4 * i, row) * 16
                addrs.append(base)
                for wd in range(4):
                    j = 4 * i + wd
                    for e in range(4):
                        tok, d = kinv[base + 4 * wd + e]
                        k = 2 * c + (e & 1) + (8 if e >= 2 else 0)  # b0 = bytes 0,1; b1 = bytes 2,3
                        for key, val, m in (((j, k), d, dK), ((t, g), tok, tokS)):
                            if m.setdefault(key, val) != val:
                                bad.append(("K map inconsistent", key, val, m[key]))
            for ph in range(4):  # lds.128: 8 lanes a phase
                banks = [((a // 4) + w) % 32 for a in addrs[8 * ph:8 * ph + 8] for w in range(4)]
                bank_k += len(banks) - len(set(banks))
    for lane in range(32):
        g, c = lane >> 2, lane & 3
        for j in range(KS):
            d0 = 16 * (c + 4 * (j >> 2)) + 4 * (j & 3)
            for e in range(2):
                dQ[(j, 2 * c + e)] = d0 + e          # R0 (and R1 for row g + 8)
                dQ[(j, 2 * c + 8 + e)] = d0 + 2 + e  # R2 (R3)
    if dQ != dK:
        bad.append(("Q and K d orders differ", sum(dQ[x] != dK.get(x) for x in dQ)))
    for j in range(KS):
        if sorted(dK[(j, k)] for k in range(16)) != sorted(set(dK[(j, k)] for k in range(16))):
            bad.append(("k-step repeats a d", j))
    if sorted(dK.values()) != list(range(D)):
        bad.append(("Q K^T does not cover d once",))
    for (t, n), tok in tokS.items():
        if tok != 8 * t + n:  # the mask's formula: tok = 8 t + 2 c + (e & 1) for C column n = 2 c + e
            bad.append(("mask token formula", t, n, tok))
    # P V: A = P, k slot -> token (S tile 0 cols for k < 8, tile 1 for k >= 8)
    tokP = {k: tokS[(0, k)] if k < 8 else tokS[(1, k - 8)] for k in range(16)}
    tokV, dV = {}, {}  # from V's side: k -> token; (T, n) -> d
    bank_v = 0
    for jj in range(D // 32):
        words = {}
        for lane in range(32):
            g, c = lane >> 2, lane & 3
            x, wo = 2 * jj + (g >> 2), 4 * (g & 3)
            rows = (2 * c, 2 * c + 1, 2 * c + 8, 2 * c + 9)
            regs = []
            for r in rows:
                a = r * D + vread(D, x, r) * 16 + wo
                words.setdefault(r, []).append(a)
                # encode each byte as its (token, d) id so the prmt pairing is traced
                regs.append([vinv[a + e] for e in range(4)])
            ids = {}
            def enc(r4):
                v = 0
                for e in range(4):
                    key = len(ids)
                    ids[key] = r4[e]
                    v |= key << (8 * e)
                return v
            A = [enc(r4) for r4 in regs]
            lb = [prmt(A[0], A[1], 0x5140), prmt(A[0], A[1], 0x7362)]
            hb = [prmt(A[2], A[3], 0x5140), prmt(A[2], A[3], 0x7362)]
            for i in range(4):
                T = 4 * jj + i
                # cvt4(w): lo = bytes 0,1 -> regs [i=0 (w of 0x5140) / i=2]; hi = bytes 2,3 -> i=1 / i=3
                wl, wh = lb[i // 2], hb[i // 2]
                sh = 16 * (i % 2)
                for e in range(2):
                    for k, w in ((2 * c + e, wl), (2 * c + 8 + e, wh)):
                        tok, d = ids[(w >> (sh + 8 * e)) & 0xFF]
                        if tokV.setdefault(k, tok) != tok:
                            bad.append(("V token of k inconsistent", k, tok))
                        if dV.setdefault((T, g), d) != d:
                            bad.append(("V d of column inconsistent", T, g, d))
        for r in range(1):  # lds.32: the 4 reads (rows 2c, 2c+1, 2c+8, 2c+9) are 4 instructions
            pass
        # bank conflicts: instruction q reads row rows[q] for every lane
        for q in range(4):
            banks = []
            for lane in range(32):
                g, c = lane >> 2, lane & 3
                r = (2 * c, 2 * c + 1, 2 * c + 8, 2 * c + 9)[q]
                x, wo = 2 * jj + (g >> 2), 4 * (g & 3)
                banks.append(((r * D + vpos(D, x, r) * 16 + wo) // 4) % 32)
            bank_v += 32 - len(set(banks))
    if tokV != tokP:
        bad.append(("P and V token orders differ", tokV, tokP))
    if sorted(tokP.values()) != list(range(16)):
        bad.append(("P V does not cover the page once",))
    for (T, n), d in dV.items():
        c, e = n // 2, n % 2
        if d != 32 * (T >> 2) + 4 * (2 * c + e) + (T & 3):  # the .cu's output store
            bad.append(("output d formula", T, n, d))
    if sorted(dV.values()) != list(range(D)):
        bad.append(("output does not cover d once",))
    # cp.async writes: a warp instruction k writes lanes' chunks idx = lane + 32 k (conflicts in
    # 16-byte writes: 8 lanes a phase)
    bank_w = 0
    for k in range(PAGE * NCH // 32):
        for pos in (kpos, vpos):
            for ph in range(4):
                banks = []
                for lane in range(8 * ph, 8 * ph + 8):
                    idx = lane + 32 * k
                    row, x = idx // NCH, idx % NCH
                    a = row * D + pos(D, x, row) * 16
                    banks += [((a // 4) + w) % 32 for w in range(4)]
                bank_w += len(banks) - len(set(banks))
    dperm = [dK[(j, k)] for j in range(KS) for k in range(16)]
    return bad, dperm, tokP, (bank_k, bank_v, bank_w)


# ---- 2. tiling ----------------------------------------------------------------------------------
def walk(n, nblk, ch, S):
    """The kernel's page walk for one (sequence, head): problems found."""
    bad = []
    npv = min((n + PAGE - 1) // PAGE, nblk)
    seen = [0] * npv
    for sp in range(S):
        p0 = sp * ch
        p1 = min(p0 + ch, npv)
        for warp in range(NWARP):
            nit = (p1 - p0 - warp + NWARP - 1) // NWARP if p1 > p0 + warp else 0
            if nit > 32:
                bad.append(("steps > 32", sp, warp, nit))
            loaded = {lane for lane in range(32) if p0 + warp + NWARP * lane < min(p0 + ch, nblk)}  # myid's load
            if any(p0 + warp + NWARP * lane >= nblk for lane in loaded):
                bad.append(("block-table read past NBLK", sp, warp))
            for it in range(nit):
                p = p0 + warp + NWARP * it
                if it not in loaded:
                    bad.append(("page id not loaded", sp, warp, it))
                if p >= nblk or p >= npv:
                    bad.append(("page past the table", p))
                    continue
                if n - p * PAGE < 1:
                    bad.append(("empty page", p))
                seen[p] += 1
    if any(s != 1 for s in seen):
        bad.append(("pages not covered once", sum(s != 1 for s in seen)))
    if S * ch < nblk or ch > 128 or ch < 1 or S > 65535:
        bad.append(("split arithmetic", ch, S, nblk))
    return bad


def splits(mod, B, HK, nblk, slots, forced=None):
    if forced:
        os.environ[mod.CHUNK_ENV] = str(forced)
    else:
        os.environ.pop(mod.CHUNK_ENV, None)
    try:
        return mod.splits_for(B, HK, nblk, slots)
    finally:
        os.environ.pop(mod.CHUNK_ENV, None)


# ---- 3. numerics --------------------------------------------------------------------------------
def decode_table():
    vals = []
    for byte in range(256):
        s = -1.0 if byte & 0x80 else 1.0
        e, mnt = (byte >> 3) & 0xF, byte & 7
        vals.append(float("nan") if (e == 15 and mnt == 7) else s * (mnt / 8 * 2 ** -6 if e == 0 else (1 + mnt / 8) * 2.0 ** (e - 7)))
    return torch.tensor(vals, dtype=torch.float32)


TABLE = decode_table()


def fp8(t):
    b = t if t.dtype == torch.uint8 else t.view(torch.uint8)
    return TABLE[b.long()]


def emulate(mod, query, kc, ks, vc, vs, bt, sl, slots, split_B=None, maps=None):
    B, HQ, D = query.shape
    HK = kc.shape[2]
    G = HQ // HK
    nblk = bt.shape[1]
    ch, S = splits(mod, split_B or B, HK, nblk, slots)
    dperm, tokP = maps[D]
    K, V = fp8(kc), fp8(vc)  # [NB, 16, HK, D], exact
    qh = query.float().half().float()  # bf16 -> fp16 (the kernel's pack_h2)
    scale = math.log2(math.e) / math.sqrt(D) * float(ks[0])
    perm = torch.tensor(dperm)
    tperm = torch.tensor([tokP[k] for k in range(16)])
    out = torch.empty(B, HQ, D)
    for b in range(B):
        n = int(sl[b])
        npv = min((n + PAGE - 1) // PAGE, nblk)
        for h in range(HK):
            q = qh[b, h * G:(h + 1) * G][:, perm]  # d in the kernel's contraction order
            parts = []
            for sp in range(S):
                p0, p1 = sp * ch, min(sp * ch + ch, npv)
                wst = []
                for warp in range(NWARP):
                    m = torch.full((G,), -math.inf)
                    l = torch.zeros(G)
                    acc = torch.zeros(G, D)
                    nit = (p1 - p0 - warp + NWARP - 1) // NWARP if p1 > p0 + warp else 0
                    for it in range(nit):
                        p = p0 + warp + NWARP * it
                        pid = int(bt[b, p])
                        valid = n - p * PAGE
                        k = K[pid, :, h][:, perm]                 # [16 tokens, D] in d order
                        s = (q @ k.t()) * scale                    # fp32, [G, 16]
                        tok = torch.arange(16)
                        s = torch.where(tok[None, :] < valid, s, torch.tensor(-math.inf))
                        mn = torch.maximum(m, s.max(1).values)
                        al = torch.exp2(m - mn)
                        pr = torch.exp2(s - mn[:, None])
                        l = l * al + pr.sum(1)
                        ph = pr.half().float()[:, tperm]           # P fragment, k slots -> tokens
                        v = V[pid, :, h][tperm]                     # rows in the same k order
                        acc = acc * al[:, None] + ph @ v
                        m = mn
                    wst.append((m, l, acc))
                M = torch.stack([w[0] for w in wst]).max(0).values
                o, L = torch.zeros(G, D), torch.zeros(G)
                for mw, lw, aw in wst:
                    wt = torch.where(mw == -math.inf, torch.zeros(G), torch.exp2(mw - M))
                    wt = torch.where(M == -math.inf, torch.zeros(G), wt)
                    o += wt[:, None] * aw
                    L += wt * lw
                parts.append((M, L, o * float(vs[0])))
            M = torch.stack([x[0] for x in parts]).max(0).values
            o, L = torch.zeros(G, D), torch.zeros(G)
            for mp, lp, op in parts:
                w = torch.where(mp == -math.inf, torch.zeros(G), torch.exp2(mp - M))
                o += w[:, None] * op
                L += w * lp
            out[b, h * G:(h + 1) * G] = torch.where(L[:, None] > 0, o / L.clamp_min(1e-30)[:, None], torch.zeros(G, D))
    return out.to(torch.bfloat16)


# ---- 4. execution of the kernel's own code on the CPU -------------------------------------------
def build_host_emu():
    out = os.path.join(tempfile.mkdtemp(prefix="cufd_emu_"), "pd_emu.so")
    subprocess.run(["g++", "-O1", "-std=c++17", "-shared", "-fPIC", "-DKZOO_PD_HOST_EMU",
                    "-I", SOL, "-I", os.path.join(HERE, "cufd"),
                    os.path.join(HERE, "cufd/pd_host_emu.cpp"), "-o", out], check=True)
    lib = ctypes.CDLL(out)
    lib.kzoo_pd_emu.restype = ctypes.c_int
    lib.kzoo_pd_emu.argtypes = [ctypes.c_void_p] * 11 + [ctypes.c_int] * 7
    return lib


def run_host_emu(lib, mod, x, slots, split_B=None, forced=None):
    q, kc, ks, vc, vs, bt, sl = [t.contiguous() for t in x]
    B, HQ, D = q.shape
    HK = kc.shape[2]
    nblk = bt.shape[1]
    ch, S = splits(mod, split_B or B, HK, nblk, slots, forced)
    po = torch.zeros(B * HQ * S, D)
    pm = torch.zeros(B * HQ * S)
    pl = torch.zeros(B * HQ * S)
    out = torch.zeros(B, HQ, D, dtype=torch.bfloat16)
    rc = lib.kzoo_pd_emu(q.data_ptr(), kc.data_ptr(), vc.data_ptr(), ks.data_ptr(), vs.data_ptr(), bt.data_ptr(),
                         sl.data_ptr(), po.data_ptr(), pm.data_ptr(), pl.data_ptr(), out.data_ptr(),
                         B, HQ, HK, D, nblk, ch, S)
    if rc:
        raise RuntimeError("kzoo_pd_emu: %d" % rc)
    return out, ch, S


def execution(mod, task, ref, specs, w):
    lib = build_host_emu()
    fails, worst = 0, (0.0, 0.0)
    runs = []
    base = [list(s) for s in w["correctness"] + w["measure"]] + [
        [2, 8, 2, 64, 1023, 160], [3, 4, 4, 64, 530, 120], [2, 16, 1, 64, 2100, 300], [2, 32, 2, 128, 700, 120]]
    for si, dims in enumerate(base):
        runs.append((dims, None, None, False, 396))
        runs.append((dims, None, 7, True, 528))  # varied lengths, 7 pages a split
    for g in w["graded"]:
        B, HQ, HK, D, L, _ = g
        runs.append(([2, HQ, HK, D, L, 2 * -(-L // 16)], B, None, False, 396))
    for ri, (dims, split_B, forced, varied, slots) in enumerate(runs):
        x = list(inputs.make_inputs(task, task.bind(w, dims), 500 + ri, "cpu"))
        if varied:
            gen = torch.Generator().manual_seed(11 + ri)
            x[6] = torch.randint(1, dims[4] + 1, (dims[0],), generator=gen, dtype=torch.int32)
            x[6][0] = 1
        exp = reference.run(ref, task, x)
        t0 = time.time()
        got, ch, S = run_host_emu(lib, mod, x, slots, split_B, forced)
        m = compare.measure([got], exp, specs, task.comparator, task.row_pass)
        v = compare.compare([got], exp, specs, task.comparator, math.inf, task.row_pass, strict_dtype=False, bound=(0.01, 0.01))
        ok = m <= task.tolerance and (v.bound_ratio or 0.0) <= 1.0 and not torch.isnan(got.float()).any()
        fails += not ok
        worst = (max(worst[0], m), max(worst[1], v.bound_ratio or 0.0))
        print("exec %-40s %-26s %s%.3g (bound %.3g) [%.1f s]" % (
            str(dims) + ("" if split_B is None else " [splits of B=%d]" % split_B),
            "%d pages x %d splits%s" % (ch, S, ", lens 1..L" if varied else ""),
            "" if ok else "FAIL ", m, v.bound_ratio or 0.0, time.time() - t0), flush=True)
    print("execution of pd_sm90.cu's kernels on the CPU: worst relative-Frobenius %.3g, worst bound ratio %.3g, %d failures"
          % (worst[0], worst[1], fails))
    return fails


def main():
    mod = load_cufd()
    task = task_mod.load(os.path.join(ROOT, "catalog/tasks/paged-attention-decode/task.json"))
    ref = reference.load(task)
    specs = reference.expected_specs(task)
    _, w = task.workload(None)
    fails = 0
    maps = {}
    for D in (64, 128):
        bad, dperm, tokP, (bk, bv, bw) = fragments(D)
        maps[D] = (dperm, tokP)
        fails += len(bad)
        print("fragments D=%d: %s; bank conflicts (extra wavefront slots a page a warp): K reads %d, V reads %d, cp.async writes %d"
              % (D, "ok" if not bad else bad[:5], bk, bv, bw))
    # a deliberately broken swizzle must be caught
    caught_v = len(fragments(128, vread=lambda D, x, row: x)[0])
    caught_k = len(fragments(128, kread=lambda D, x, row: x)[0])
    print("self-test: reads that do not undo the writes' swizzle give %d (V) and %d (K) problems (must be > 0)"
          % (caught_v, caught_k))
    fails += caught_v == 0 or caught_k == 0

    # 2. tiling
    shapes = [list(s) for s in w["correctness"] + w["measure"] + w["graded"]] + [
        [2, 8, 2, 64, 1023, 160], [3, 4, 4, 64, 530, 120], [2, 16, 1, 64, 2100, 300], [1, 32, 2, 128, 40000, 2600]]
    tb = 0
    for dims in shapes:
        B, HQ, HK, D, L, NB = dims
        nblk = -(-L // PAGE)
        combos = set()
        for slots in [132 * k for k in (1, 2, 3, 4)]:
            combos.add(splits(mod, B, HK, nblk, slots))
        for forced in (1, 7, 32, 128):
            combos.add(splits(mod, B, HK, nblk, 528, forced))
        for ch, S in sorted(combos):
            for n in sorted({L, max(L - 1, 1), 1}):
                bad = walk(n, nblk, ch, S)
                if bad:
                    tb += 1
                    print("TILING", dims, ch, S, n, bad[:3])
    fails += tb
    print("tiling: every correctness, measure, graded and edge shape x resident CTAs 132 x {1..4} and forced chunks {1,7,32,128} x n in {L, L-1, 1}: %s"
          % ("ok" if not tb else "%d problems" % tb))
    for dims in w["graded"]:
        B, HQ, HK, D, L, NB = dims
        nblk = -(-L // PAGE)
        line = []
        for per in (3, 4):
            ch, S = splits(mod, B, HK, nblk, 132 * per)
            ctas = B * HK * S
            line.append("%d CTAs/SM: %d pages a split x %d splits, %d CTAs = %.2f waves, partials %.1f MB"
                        % (per, ch, S, ctas, ctas / (132 * per), B * HQ * S * D * 4 / 1e6))
        print("graded", dims, "; ".join(line))

    # 3. numerics
    num = [(list(s), None) for s in w["correctness"] + w["measure"]] + [
        ([2, 8, 2, 64, 1023, 160], None), ([3, 4, 4, 64, 530, 120], None), ([2, 16, 1, 64, 2100, 300], None),
        ([2, 32, 2, 128, 700, 120], None)]
    for g in w["graded"]:
        B, HQ, HK, D, L, _ = g
        num.append(([2, HQ, HK, D, L, 2 * -(-L // 16)], B))
    worst = (0.0, 0.0)
    for si, (dims, split_B) in enumerate(num):
        bound = task.bind(w, dims)
        x = inputs.make_inputs(task, bound, 100 + si, "cpu")
        # vary the lengths too (the task's L is fixed; the kernel reads seq_lens): n in [1, L]
        exp = reference.run(ref, task, x)
        res = []
        for slots in (396, 528):
            got = emulate(mod, *x, slots=slots, split_B=split_B, maps=maps)
            m = compare.measure([got], exp, specs, task.comparator, task.row_pass)
            v = compare.compare([got], exp, specs, task.comparator, math.inf, task.row_pass, strict_dtype=False, bound=(0.01, 0.01))
            ok = m <= task.tolerance and (v.bound_ratio or 0.0) <= 1.0
            fails += not ok
            worst = (max(worst[0], m), max(worst[1], v.bound_ratio or 0.0))
            res.append("%s%.3g (bound %.3g)" % ("" if ok else "FAIL ", m, v.bound_ratio or 0.0))
        print("shape %-40s %s" % (str(dims) + ("" if split_B is None else " [splits of B=%d]" % split_B), "; ".join(res)), flush=True)
        if si < 3 or dims[4] in (1023, 530):  # varied lengths: seq_lens in [1, L], same tables
            x2 = list(x)
            gen = torch.Generator().manual_seed(7 + si)
            x2[6] = torch.randint(1, dims[4] + 1, (dims[0],), generator=gen, dtype=torch.int32)
            x2[6][0] = 1
            exp2 = reference.run(ref, task, x2)
            got = emulate(mod, *x2, slots=528, maps=maps)
            m = compare.measure([got], exp2, specs, task.comparator, task.row_pass)
            v = compare.compare([got], exp2, specs, task.comparator, math.inf, task.row_pass, strict_dtype=False, bound=(0.01, 0.01))
            ok = m <= task.tolerance and (v.bound_ratio or 0.0) <= 1.0
            fails += not ok
            worst = (max(worst[0], m), max(worst[1], v.bound_ratio or 0.0))
            print("shape %-40s %s%.3g (bound %.3g)" % (str(dims) + " lens " + str(x2[6].tolist()[:8]), "" if ok else "FAIL ", m, v.bound_ratio or 0.0), flush=True)
    print("worst relative-Frobenius %.3g (tolerance %g), worst elementwise bound ratio %.3g (limit 1)" % (worst[0], task.tolerance, worst[1]))
    fails += execution(mod, task, ref, specs, w)
    print("%d failures" % fails)


if __name__ == "__main__":
    main()
