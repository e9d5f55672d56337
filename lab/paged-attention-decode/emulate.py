"""CPU model of the round-3 decode variants' tiling (no GPU, no Triton: triton is stubbed), checked
against the task's reference with the task's comparator and the board's elementwise bound.

Models one program per (KV head, split, sequence) exactly as the kernels walk it: the split and
chunk arithmetic of _splits, BLOCK_N-token steps through the block table with the tail masked,
fp8 -> fp16 (exact), q -> fp16, p -> fp16, fp32 accumulation, online softmax in base 2 with the
scales folded, then the log-sum-exp merge. FORM "qk" is the solution's (S = Q K^T, row sums per
step); FORM "kq" is round 3's 26bdea9:lab/paged-attention-decode/kq (S^T = K Q^T, row sums accumulated
elementwise and reduced after the loop). FORM "next" (round 4, lab/paged-attention-decode/btnext)
is "qk" with the page ids loaded one step ahead and carried (the first step's before the loop,
each step the next step's, masked past the split's end). Round 4's occ is the solution's kernel
("qk") under a register cap: its configs are modelled as "qk".

usage: python3 lab/paged-attention-decode/emulate.py   (torch on CPU, from the repository root)
"""
import importlib.util
import math
import os
import sys
import types

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "judge"))
from kzoo_judge import compare, inputs, reference  # noqa: E402
from kzoo_judge import task as task_mod  # noqa: E402

tr = types.ModuleType("triton")
tl = types.ModuleType("triton.language")
tr.jit = lambda f=None, **kw: (f if f else (lambda g: g))
tr.next_power_of_2 = lambda n: 1 << (int(n) - 1).bit_length()
tr.cdiv = lambda a, b: (a + b - 1) // b
tl.constexpr = object
tr.language = tl
sys.modules["triton"] = tr
sys.modules["triton.language"] = tl


def load(path):
    spec = importlib.util.spec_from_file_location("v%d" % abs(hash(path)), path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def decode_table():
    vals = []
    for byte in range(256):
        s = -1.0 if byte & 0x80 else 1.0
        e, mnt = (byte >> 3) & 0xF, byte & 7
        vals.append(float("nan") if (e == 15 and mnt == 7) else s * (mnt / 8 * 2 ** -6 if e == 0 else (1 + mnt / 8) * 2.0 ** (e - 7)))
    return torch.tensor(vals, dtype=torch.float32)


TABLE = decode_table()


def emulate(mod, form, cfg, target, query, kc, ks, vc, vs, bt, sl):
    bn = cfg[0]
    B, HQ, D = query.shape
    NB, PAGE, HK, _ = kc.shape
    G = HQ // HK
    nblk = bt.shape[1]
    splits, chunk = mod._splits(B, HK, nblk * PAGE, bn, target)
    assert splits * chunk >= nblk * PAGE and (splits - 1) * chunk < nblk * PAGE
    kf = TABLE[kc.view(torch.uint8).long()].half().float()  # fp16 holds e4m3 exactly
    vf = TABLE[vc.view(torch.uint8).long()].half().float()
    scale = mod.LOG2E / math.sqrt(D) * float(ks)
    po = torch.zeros(B, HQ, splits, D)
    pm = torch.full((B, HQ, splits), float("-inf"))
    pl = torch.zeros(B, HQ, splits)
    for b in range(B):
        n = int(sl[b])
        for h in range(HK):
            q = query[b, h * G:(h + 1) * G].float().half().float()  # [G, D]
            for sp in range(splits):
                start, end = sp * chunk, min(sp * chunk + chunk, n)
                m_i = torch.full((G,), float("-inf"))
                l_i = torch.zeros(G)
                l_part = torch.zeros(bn, G)
                acc = torch.zeros(G, D)
                def pages(tok, lim):
                    ok = tok < lim
                    return torch.where(ok, bt[b, torch.clamp(tok // PAGE, max=nblk - 1)].long(), torch.zeros_like(tok))
                page_next = pages(torch.arange(start, start + bn), end)
                for t0 in range(start, end, bn):
                    tok = torch.arange(t0, t0 + bn)
                    tm = tok < end
                    if form == "next":
                        page, page_next = page_next, pages(tok + bn, end)
                    else:
                        page = pages(tok, end)
                    k = torch.where(tm[:, None], kf[page, tok % PAGE, h], torch.zeros(()))
                    v = torch.where(tm[:, None], vf[page, tok % PAGE, h], torch.zeros(()))
                    s = (q @ k.t()) * scale  # [G, bn]
                    s = torch.where(tm[None, :], s, torch.tensor(float("-inf")))
                    m_new = torch.maximum(m_i, s.max(1).values)
                    p = torch.exp2(s - m_new[:, None])
                    alpha = torch.exp2(m_i - m_new)
                    if form in ("qk", "next"):
                        l_i = l_i * alpha + p.sum(1)
                    else:
                        l_part = l_part * alpha[None, :] + p.t()
                    acc = acc * alpha[:, None] + p.half().float() @ v
                    m_i = m_new
                if form == "kq":
                    l_i = l_part.sum(0)
                po[b, h * G:(h + 1) * G, sp] = acc * float(vs)
                pm[b, h * G:(h + 1) * G, sp] = m_i
                pl[b, h * G:(h + 1) * G, sp] = l_i
    mx = pm.max(-1, keepdim=True).values
    w = torch.where(pm == float("-inf"), torch.zeros(()), torch.exp2(pm - mx))
    total = (pl * w).sum(-1)
    return ((po * w[..., None]).sum(-2) / total[..., None]).to(torch.bfloat16)


def main():
    task = task_mod.load(os.path.join(ROOT, "catalog/tasks/paged-attention-decode/task.json"))
    ref = reference.load(task)
    specs = reference.expected_specs(task)
    _, w = task.workload(None)
    here = os.path.dirname(os.path.abspath(__file__))
    # The candidates in lab/ now (round 3's "sweep" and "kq" are in git at 26bdea9:lab/).
    variants = [("next", load(os.path.join(here, "btnext/paged_attention_decode.py"))),
                ("qk", load(os.path.join(here, "occ/paged_attention_decode.py")))]
    # The task's correctness and measure shapes, plus edges: lengths not a multiple of the page
    # or of BLOCK_N, a split boundary inside a page, one KV head, G = 1.
    shapes = [list(s) for s in w["correctness"] + w["measure"]] + [
        [2, 8, 2, 64, 1023, 160], [3, 4, 4, 64, 530, 120], [2, 16, 1, 64, 2100, 300]]
    worst = 0.0
    fails = 0
    for si, dims in enumerate(shapes):
        bound = task.bind(w, dims)
        x = inputs.make_inputs(task, bound, 100 + si, "cpu")
        exp = reference.run(ref, task, x)
        for form, mod in variants:
            cfgs = sorted(set(mod.CONFIGS) | {mod.DEFAULT}, key=lambda c: (c[0], str(c)))
            seen = set()
            for cfg in cfgs:
                for target in [mod.TARGET_PROGRAMS] + mod.TARGETS:
                    if (cfg[0], target) in seen:
                        continue
                    seen.add((cfg[0], target))
                    got = emulate(mod, form, cfg, target, *x)
                    m = compare.measure([got], exp, specs, task.comparator, task.row_pass)
                    v = compare.compare([got], exp, specs, task.comparator, math.inf, task.row_pass,
                                        strict_dtype=False, bound=(0.01, 0.01))
                    worst = max(worst, m)
                    ok = m <= task.tolerance and (v.bound_ratio or 0.0) <= 1.0
                    if not ok:
                        print("FAIL", form, dims, cfg, target, m, v.bound_ratio)
                        fails += 1
            print("shape", dims, "form", form, "ok up to", worst, flush=True)
    print("worst measure %.3g (tolerance %g), %d failures" % (worst, task.tolerance, fails))


if __name__ == "__main__":
    main()
