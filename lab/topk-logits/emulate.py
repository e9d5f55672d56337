"""CPU model of topk_logits.py's two kernels (no GPU, no Triton: triton is stubbed), checked
against a stable sort on the task's correctness shapes, graded widths and adversarial rows.
usage: python3 lab/topk-logits/emulate.py PATH/TO/topk_logits.py   (torch on CPU)"""
import sys, types, math, importlib.util
import torch
# stub triton so the module imports (for _plan)
tr = types.ModuleType("triton"); tl = types.ModuleType("triton.language")
tr.jit = lambda f=None, **kw: (f if f else (lambda g: g))
tr.next_power_of_2 = lambda n: 1 << (int(n) - 1).bit_length()
tr.cdiv = lambda a, b: (a + b - 1) // b
tl.constexpr = object
tr.language = tl
sys.modules["triton"] = tr; sys.modules["triton.language"] = tl
spec = importlib.util.spec_from_file_location("tk", sys.argv[1]); tk = importlib.util.module_from_spec(spec); spec.loader.exec_module(tk)
K = tk.K

def okey(x):
    b = x.view(torch.int32).clone()
    b[x == 0] = 0
    return torch.where(b < 0, b ^ 0x7FFFFFFF, b)

def key64(v, i):
    return (okey(v).to(torch.int64) << 32) | (2147483647 - i).to(torch.int64)

def run(x):
    B, V = x.shape
    tile, ns, seg, cap, z, slots, warps = tk._plan(V)
    cv = torch.full((B, ns * cap), float("nan")); ci = torch.full((B, ns * cap), -7, dtype=torch.int32)
    cnt = torch.zeros(B, ns, dtype=torch.int32); thr = torch.zeros(B, ns)
    fallbacks = 0
    for r in range(B):
        for s in range(ns):
            start = s * seg; end = min(start + seg, V)
            x0 = x[r, start:min(start + tile, end)]
            n0 = float(min(end - start, tile))
            mean = x0.sum() / n0
            var = max(float((x0 * x0).sum() / n0 - mean * mean), 0.0)
            t = float(mean) + (z * math.sqrt(var) if not (math.isinf(z) and var == 0) else float("nan"))
            if t != t: t = float("-inf")
            t = float(torch.tensor(t, dtype=torch.float32))
            seg_x = x[r, start:end]
            c = seg_x >= t
            idx = torch.nonzero(c).flatten()
            n = len(idx)
            out = s * cap
            k = min(n, cap)
            cv[r, out:out + k] = seg_x[idx[:k]]; ci[r, out:out + k] = (idx[:k] + start).int()
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
        above = int((valid & (v >= tmax)).sum())
        if most <= cap and above >= K:
            key = torch.sort(key64(v, i), descending=True).values
            col = 2147483647 - (key & 0xFFFFFFFF).to(torch.int64)
            col = col[:K]
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

def gen(B, V, seed):
    g = torch.Generator(); g.manual_seed(seed)
    x = torch.randn(B, V, generator=g)
    f = torch.rand(B, generator=g) * 2 - 1
    return x * torch.exp2(f).unsqueeze(1)

shapes = [(1, 50), (3, 1000), (2, 4097), (16, 32000), (5, 65537), (2, 128256), (2, 131072), (1, 262144), (4, 32768)]
bad = 0
for (B, V) in shapes:
    for seed in range(2):
        x = gen(B, V, seed)
        v, i, fb = run(x); rv, ri = ref(x)
        okk = torch.equal(i, ri) and torch.equal(v, rv)
        bad += not okk
        print(B, V, "ok" if okk else "MISMATCH", "fallbacks", fb, "plan", tk._plan(V))
# adversarial
adv = {
 "ties": torch.randint(0, 5, (3, 5000)).float(),
 "allsame": torch.zeros(2, 40000),
 "negzero": torch.where(torch.rand(2, 3000) < 0.5, torch.tensor(-0.0), torch.tensor(0.0)),
 "inf": torch.cat([torch.randn(2, 70000), torch.full((2, 10), float("inf")), torch.full((2, 5), float("-inf"))], 1),
 "exact50": torch.randn(3, 50),
 "sorted": torch.arange(70000).float().repeat(2, 1),
 "neg": -torch.rand(2, 9000) - 1,
}
for name, x in adv.items():
    v, i, fb = run(x); rv, ri = ref(x)
    okk = torch.equal(i, ri) and torch.equal(v, rv)
    bad += not okk
    print(name, "ok" if okk else "MISMATCH", "fallbacks", fb)
print("BAD", bad)
