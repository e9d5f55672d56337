"""CPU model of the round-3 layernorm variants' maths (one tuple reduction of the shifted
moments, d = x - x[row, 0]; y = (d - mean(d)) * rstd * w + b in float32, one rounding to
bf16) against the task's reference, on the correctness shapes, slices of the graded shapes
and rows with a large mean: the comparator's relative Frobenius measure (tolerance 1e-2)
and the board's elementwise bound ratio (|y - ref| / (1e-2 + 1e-2 |ref|), must be <= 1).
The float32 sums are done in a blocked order (per-thread chunks, then a tree), as a GPU does.
usage: python3 lab/layernorm/emulate.py"""
import torch

EPS = 1e-5


def ref(x, w, b):
    xf = x.float()
    mean = xf.mean(dim=-1, keepdim=True)
    c = xf - mean
    var = c.pow(2).mean(dim=-1, keepdim=True)
    return (c * torch.rsqrt(var + EPS) * w.float() + b.float()).to(torch.bfloat16)


def tree_sum(v, threads):
    # per-thread sequential sums over strided chunks, then a pairwise tree over threads (float32)
    T, H = v.shape
    P = 1 << max(0, (threads - 1).bit_length())
    pad = (-H) % P
    v = torch.nn.functional.pad(v, (0, pad)).reshape(T, -1, P)
    acc = torch.zeros(T, P)
    for j in range(v.shape[1]):
        acc = acc + v[:, j, :]
    while acc.shape[1] > 1:
        acc = acc[:, 0::2] + acc[:, 1::2]
    return acc[:, 0]


def onepass(x, w, b, ept):
    T, H = x.shape
    block = 1 << (H - 1).bit_length()
    threads = max(32, min(512, block // ept))
    xf = x.float()
    d = xf - xf[:, :1]
    s1 = tree_sum(d, threads)
    s2 = tree_sum(d * d, threads)
    md = (s1 / H)[:, None]
    var = torch.clamp(s2[:, None] / H - md * md, min=0.0)
    rstd = 1.0 / torch.sqrt(var + EPS)
    return ((d - md) * rstd * w.float() + b.float()).to(torch.bfloat16)


def gen(T, H, seed, shift=0.0):
    g = torch.Generator(); g.manual_seed(seed)
    x = torch.randn(T, H, generator=g)
    f = torch.rand(T, generator=g) * 2 - 1
    x = (x * torch.exp2(f)[:, None] + shift).to(torch.bfloat16)
    w = torch.randn(H, generator=g).mul(torch.exp2(torch.rand(1, generator=g) * 2 - 1)).to(torch.bfloat16)
    b = torch.randn(H, generator=g).mul(torch.exp2(torch.rand(1, generator=g) * 2 - 1)).to(torch.bfloat16)
    return x, w, b


worst_m, worst_r = 0.0, 0.0
cases = [(1, 1), (2, 7), (5, 4096), (127, 1000), (64, 4097), (3, 16384), (2, 8193), (64, 2048), (100, 1000),
         (16, 8192), (8, 16384), (64, 2048)]
for ept in (32, 64):
    for (T, H) in cases:
        for shift in (0.0, 100.0):
            x, w, b = gen(T, H, T * 7 + H, shift)
            e = ref(x, w, b).float(); o = onepass(x, w, b, ept).float()
            m = float((o - e).norm() / e.norm().clamp(min=1e-30))
            r = float(((o - e).abs() / (1e-2 + 1e-2 * e.abs())).max())
            if shift == 0.0:
                worst_m, worst_r = max(worst_m, m), max(worst_r, r)
            print("ept %d T=%d H=%d shift %g: rel-frobenius %.2e, bound ratio %.3f" % (ept, T, H, shift, m, r))
print("task data: worst rel-frobenius %.2e (tol 1e-2), worst bound ratio %.3f (must be <= 1)" % (worst_m, worst_r))
