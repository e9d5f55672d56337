"""CPU model of the round-3 one-warp variants (w1split, w1deep): pass 1 as _select does it
(the row's threshold from its first SAMPLE columns, shared by its segments; slots in column
order by a prefix sum, the first CAP kept, the true count stored), pass 2 as _merge does it
(round 2's, unchanged), checked bit-exactly against a stable sort on the task's correctness
shapes, slices of the graded shapes and adversarial rows. Then the margins on the task's
data at the graded widths: per row, the candidates >= t against K, and per segment the
count against CAP, over many rows (the fallback must essentially never run).
Round 4: also models "fused" (pass 2 in the same kernel, on packed int64 keys): when the
module has _topk_fused, the candidates are kept as keys and pass 2's check "value >= max t"
is done as the kernel does it, key >= okey(max t) << 32 (also tested against the float test
on adversarial values), and the fallback's candidates go through keys too.
usage: python3 lab/topk-logits/emulate_w1.py PATH/TO/topk_logits.py [ROWS_FOR_STATS]"""
import sys, types, math, importlib.util
import torch
tr = types.ModuleType("triton"); tl = types.ModuleType("triton.language")
tr.jit = lambda f=None, **kw: (f if f else (lambda g: g))
tr.next_power_of_2 = lambda n: 1 << (int(n) - 1).bit_length()
tr.cdiv = lambda a, b: (a + b - 1) // b
tl.constexpr = object
tr.language = tl
sys.modules["triton"] = tr; sys.modules["triton.language"] = tl
spec = importlib.util.spec_from_file_location("tk", sys.argv[1]); tk = importlib.util.module_from_spec(spec); spec.loader.exec_module(tk)
K = tk.K
STAT_ROWS = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
FUSED = hasattr(tk, "_topk_fused")
KEY_MIN = -2**63


def okey(x):
    b = x.view(torch.int32).clone()
    b[x == 0] = 0
    return torch.where(b < 0, b ^ 0x7FFFFFFF, b)


def key64(v, i):
    return (okey(v).to(torch.int64) << 32) | (2147483647 - i).to(torch.int64)


def threshold(xr, V, sample, z):
    xs = xr[:min(V, sample)]
    n0 = float(min(V, sample))
    mean = xs.sum() / n0
    var = torch.clamp((xs * xs).sum() / n0 - mean * mean, min=0.0)
    t = (mean + torch.tensor(z, dtype=torch.float32) * torch.sqrt(var)).float()  # -inf * 0 -> nan as on the GPU
    return float("-inf") if t != t else float(t)


def run(x):
    B, V = x.shape
    tile, sample, ns, seg, cap, z, slots = tk._plan(V)
    cv = torch.full((B, ns * cap), float("nan")); ci = torch.full((B, ns * cap), -7, dtype=torch.int32)
    cnt = torch.zeros(B, ns, dtype=torch.int32); thr = torch.zeros(B, ns)
    fallbacks = 0
    for r in range(B):
        t = threshold(x[r], V, sample, z)
        for s in range(ns):
            start = s * seg; end = min(start + seg, V)
            seg_x = x[r, start:end]
            c = seg_x >= t
            idx = torch.nonzero(c).flatten()  # column order, as the prefix sum gives
            n = len(idx); k = min(n, cap)
            cv[r, s * cap:s * cap + k] = seg_x[idx[:k]]; ci[r, s * cap:s * cap + k] = (idx[:k] + start).int()
            cnt[r, s] = n; thr[r, s] = t
    vals = torch.empty(B, K); inds = torch.empty(B, K, dtype=torch.int64)
    for r in range(B):
        j = torch.arange(slots); present = j < ns * cap
        sidx = torch.clamp(j // cap, max=ns - 1); within = j % cap
        c = torch.where(present, cnt[r][sidx], torch.zeros_like(j, dtype=torch.int32))
        th = torch.where(present, thr[r][sidx], torch.full((slots,), float("-inf")))
        tmax = th.max(); most = c.max()
        valid = present & (within < c)
        v = torch.full((slots,), float("-inf")); i = torch.full((slots,), V, dtype=torch.int32)
        jj = j[valid]
        v[valid] = cv[r][jj]; i[valid] = ci[r][jj]
        if FUSED:  # the kernel's test on packed keys (empty slots hold int64 min)
            kk = torch.where(valid, key64(v, i), torch.full((slots,), KEY_MIN, dtype=torch.int64))
            kt = int(okey(torch.tensor([float(tmax)]))[0]) << 32
            above = int((valid & (kk >= kt)).sum())
            assert above == int((valid & (v >= tmax)).sum())
        else:
            above = int((valid & (v >= tmax)).sum())
        if most <= cap and above >= K:
            key = torch.sort(kk if FUSED else key64(v, i), descending=True).values
            col = (2147483647 - (key & 0xFFFFFFFF).to(torch.int64))[:K]
        else:
            fallbacks += 1
            kx = okey(x[r]).to(torch.int64)
            lo, hi = -2**31, 2**31 - 1
            for _ in range(32):
                mid = lo + (hi - lo + 1) // 2
                if int((kx >= mid).sum()) >= K: lo = mid
                else: hi = mid - 1
            T = lo
            ngt = int((kx > T).sum()); need = K - ngt
            eq = kx == T; er = torch.cumsum(eq.int(), 0) - 1
            sel = (kx > T) | (eq & (er < need))
            assert int(sel.sum()) == K
            ii = torch.nonzero(sel).flatten()
            key = torch.sort(key64(x[r][ii], ii.int()), descending=True).values
            col = 2147483647 - (key & 0xFFFFFFFF).to(torch.int64)
        inds[r] = col; vals[r] = x[r][col]
    return vals, inds, fallbacks


def ref(x):
    v, i = torch.sort(x, dim=-1, descending=True, stable=True)
    return v[:, :K], i[:, :K]


def gen(B, V, seed):  # the judge's generator (kzoo_judge.inputs._row_scaled_normal)
    g = torch.Generator(); g.manual_seed(seed)
    x = torch.randn(B, V, generator=g)
    f = torch.rand(B, generator=g) * 2 - 1
    return x * torch.exp2(f).unsqueeze(1)


bad = 0
if FUSED:  # key >= okey(t) << 32  <=>  v >= t, on adversarial values and thresholds
    vals = torch.tensor([float("-inf"), -3e38, -1.0, -1e-45, -0.0, 0.0, 1e-45, 1.0, 2.5, 3e38, float("inf")])
    vals = torch.cat([vals, torch.randn(200) * 3])
    cols = torch.randint(0, 2**31 - 1, (vals.numel(),), dtype=torch.int32)
    cols[:4] = torch.tensor([0, 2**31 - 2, 2**31 - 1, 5], dtype=torch.int32)
    kv = key64(vals, cols)
    for t in vals.tolist():
        kt = int(okey(torch.tensor([t]))[0]) << 32
        if not torch.equal(kv >= kt, vals >= t):
            bad += 1; print("key test MISMATCH at t", t)
    print("key test (%d values x %d thresholds) done" % (vals.numel(), vals.numel()))
shapes = [(1, 50), (3, 1000), (2, 4097), (16, 32000), (5, 65537), (4, 128256),
          (4, 131072), (2, 262144), (8, 32768)]  # correctness shapes (64 x 32000 cut to 16), graded widths
for (B, V) in shapes:
    for seed in range(2):
        x = gen(B, V, seed)
        v, i, fb = run(x); rv, ri = ref(x)
        okk = torch.equal(i, ri) and torch.equal(v, rv)
        bad += not okk
        print(B, V, "ok" if okk else "MISMATCH", "fallbacks", fb, "plan", tk._plan(V))
adv = {
    "ties": torch.randint(0, 5, (3, 5000)).float(),
    "ties-wide": torch.randint(0, 3, (2, 131072)).float(),
    "allsame": torch.zeros(2, 40000),
    "negzero": torch.where(torch.rand(2, 3000) < 0.5, torch.tensor(-0.0), torch.tensor(0.0)),
    "inf": torch.cat([torch.randn(2, 70000), torch.full((2, 10), float("inf")), torch.full((2, 5), float("-inf"))], 1),
    "exact50": torch.randn(3, 50),
    "sorted": torch.arange(70000).float().repeat(2, 1),
    "rsorted": torch.arange(70000).float().flip(0).repeat(2, 1),
    "neg": -torch.rand(2, 9000) - 1,
    "spike-late": torch.cat([torch.randn(2, 100000) * 0.01, torch.randn(2, 31072) * 10], 1),
    "dup-top": torch.cat([torch.randn(2, 131000), torch.full((2, 72), 9.0)], 1),
}
for name, x in adv.items():
    v, i, fb = run(x); rv, ri = ref(x)
    okk = torch.equal(i, ri) and torch.equal(v, rv)
    bad += not okk
    print(name, "ok" if okk else "MISMATCH", "fallbacks", fb)
print("BAD", bad)

# Margins on the task's data at the graded widths (vectorised, pass 1's counts only).
for V in (131072, 262144, 32768):
    tile, sample, ns, seg, cap, z, slots = tk._plan(V)
    min_above, max_seg, n_fb, rows = 10**9, 0, 0, 0
    above_all = []
    for chunk in range(max(1, STAT_ROWS * V // (256 * 131072))):
        B = 256 * 131072 // V
        x = gen(B, V, 10_000 + chunk)
        xs = x[:, :min(V, sample)]
        n0 = float(min(V, sample))
        mean = xs.sum(1) / n0
        var = torch.clamp((xs * xs).sum(1) / n0 - mean * mean, min=0.0)
        t = mean + z * torch.sqrt(var)
        ge = x >= t[:, None]
        above = ge.sum(1)
        segc = torch.stack([ge[:, s * seg:min((s + 1) * seg, V)].sum(1) for s in range(ns)], 1)
        n_fb += int(((above < K) | (segc.max(1).values > cap)).sum())
        min_above = min(min_above, int(above.min())); max_seg = max(max_seg, int(segc.max()))
        above_all.append(above.float()); rows += B
    a = torch.cat(above_all)
    print("V=%d rows=%d ns=%d cap=%d slots=%d: candidates/row mean %.1f sd %.1f min %d (K=%d); "
          "largest segment count %d (cap %d); rows needing the fallback %d"
          % (V, rows, ns, cap, slots, a.mean(), a.std(), min_above, K, max_seg, cap, n_fb))
