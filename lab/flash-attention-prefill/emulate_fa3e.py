#!/usr/bin/env python3
"""CPU checks of fa3e's polynomial exp2 (fa3e/fa3_sm90.cu, ex2_poly; lab NOTES "fa3e").

0. Where the kernel's four coefficients come from: the degree-3 polynomial that minimises the
   largest relative error of 2^f on [-0.5, 0.5] (Lawson's iteration of weighted least squares),
   refitted here and compared with the constants read from the source (ten decimals, as written
   there); the checks below run on the source's constants, so a change to them is checked too.
1. The routine in float32, operation for operation as the kernel writes it (the clamp, the
   1.5 * 2^23 rounding, Horner, the exponent add), against 2^x in float64 over [-125, 0] and at
   -inf, -126, -1e30 and 0: its largest relative error (the kernel's header states 7.5e-5), and a
   result that is always finite, positive and normal.
2. Attention at D = 64 with the kernel's split: in every 128-key block the n8 blocks i with
   (i * POLY) % 16 < POLY take the polynomial, the rest an exact exp2 (the MUFU's ex2.approx is
   within 2 ulp; modelled exact), P rounded to bf16 for the P.V product as the kernel does, the row
   sum in float32 from the unrounded values. Relative Frobenius error and the board's elementwise
   bound (|o - ref| / (1e-2 + 1e-2 |ref|)) against the float64 reference at the task's D = 64
   correctness shapes and a longer one, for POLY 0 (the MUFU alone), 4 and 16 (all polynomial): the
   polynomial must not move either measure beyond what bf16's P already costs.

  /usr/bin/python3 lab/flash-attention-prefill/emulate_fa3e.py   (prints FAILURES: 0 when all hold)
"""
import os
import re
import sys

import numpy as np
import torch

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fa3e", "fa3_sm90.cu")


def source_coefficients():
    """ex2_poly's Horner constants as the kernel's source writes them: c3, c2, c1, c0."""
    with open(SOURCE) as f:
        body = f.read().split("float ex2_poly(float x)", 1)[1].split("\n}", 1)[0]
    m = re.search(r"fmaf\(([0-9.e+-]+)f, f, ([0-9.e+-]+)f\).*?fmaf\(p, f, ([0-9.e+-]+)f\).*?fmaf\(p, f, ([0-9.e+-]+)f\)",
                  body, re.S)
    if not m:
        raise SystemExit("emulate_fa3e.py: ex2_poly's Horner steps not found in %s: follow the source" % SOURCE)
    return [float(g) for g in m.groups()]


C3, C2, C1, C0 = (np.float32(v) for v in source_coefficients())
MAGIC = np.float32(12582912.0)
FAILURES = []


def check(cond, what):
    if not cond:
        FAILURES.append(what)
    print(("ok   " if cond else "FAIL ") + what)


def ex2_poly(x):
    """The kernel's ex2_poly, in float32 numpy, elementwise."""
    x = np.maximum(np.asarray(x, dtype=np.float32), np.float32(-125.0))
    t = (x + MAGIC).astype(np.float32)
    f = (x - (t - MAGIC).astype(np.float32)).astype(np.float32)
    p = (C3 * f + C2).astype(np.float32)
    p = (p * f + C1).astype(np.float32)
    p = (p * f + C0).astype(np.float32)
    bits = p.view(np.int32).astype(np.int64) + (t.view(np.int32).astype(np.int64) << 23)
    return ((bits + 2 ** 31) % 2 ** 32 - 2 ** 31).astype(np.int32).view(np.float32)


def fit():
    """The minimax-relative-error cubic for 2^f on [-0.5, 0.5], by Lawson's iteration."""
    f = np.linspace(-0.5, 0.5, 20001)
    y = 2.0 ** f
    a = np.vstack([f ** k for k in range(4)]).T
    w = np.ones_like(f)
    for _ in range(200):
        sw = np.sqrt(w) / y
        c = np.linalg.lstsq(a * sw[:, None], y * sw, rcond=None)[0]
        err = np.abs(a @ c - y) / y
        w = w * err
        w /= w.sum()
    return c


def coefficient_check():
    fitted = [round(float(v), 10) for v in fit()]  # the source writes ten decimals
    written = source_coefficients()[::-1]
    check(fitted == written, "the source's coefficients %s are the refitted cubic's %s" % (written, fitted))


def routine_check():
    xs = np.linspace(-125.0, 0.0, 2_000_001, dtype=np.float32)
    got = ex2_poly(xs).astype(np.float64)
    ref = np.exp2(xs.astype(np.float64))
    worst = float(np.max(np.abs(got - ref) / ref))
    check(worst <= 7.5e-5, "ex2_poly's largest relative error on [-125, 0]: %.3e (<= 7.5e-5)" % worst)
    special = np.array([-np.inf, -1e30, -126.0, -200.0, 0.0], dtype=np.float32)
    sv = ex2_poly(special)
    check(bool(np.all(np.isfinite(sv)) and np.all(sv >= np.float32(1.17549435e-38))),
          "ex2_poly at -inf, -1e30, -126, -200, 0: finite, positive and normal %s" % sv.tolist())
    check(abs(float(sv[-1]) - 1.0) <= 7.5e-5, "ex2_poly(0) within 7.5e-5 of 1: %.7f" % float(sv[-1]))


def attention(q, k, v, poly):
    """o for one head: causal, scale 1/sqrt(D), exp2 split as the kernel splits it."""
    T, D = q.shape
    sl2 = np.float32(1.0 / np.sqrt(D) * np.log2(np.e))
    s = (q.astype(np.float32) @ k.astype(np.float32).T).astype(np.float32)
    s[np.triu(np.ones((T, T), dtype=bool), 1)] = -np.inf
    m = s.max(axis=1, keepdims=True)
    x = (s * sl2 - m * sl2).astype(np.float32)
    i = (np.arange(T) % 128) // 8
    use = (i * poly) % 16 < poly
    e = np.exp2(x.astype(np.float64)).astype(np.float32)
    e[:, use] = ex2_poly(x[:, use])
    l = e.sum(axis=1, keepdims=True, dtype=np.float32)
    p = torch.from_numpy(e).to(torch.bfloat16).float().numpy()  # P in bf16 for the P.V wgmma
    return (p @ v.astype(np.float32)) / l


def attention_check():
    for B, H, T in ((1, 1, 3), (1, 2, 17), (2, 2, 1000), (1, 2, 256), (1, 1, 2048)):
        worst = {poly: (0.0, 0.0) for poly in (0, 4, 16)}
        for _ in range(B * H):  # the same heads for every split
            q, k, v = (torch.randn(T, 64).to(torch.bfloat16).float().numpy() for _ in range(3))
            qd, kd, vd = (a.astype(np.float64) for a in (q, k, v))
            s = qd @ kd.T / 8.0
            s[np.triu(np.ones((T, T), dtype=bool), 1)] = -np.inf
            w = np.exp(s - s.max(axis=1, keepdims=True))
            ref = (w / w.sum(axis=1, keepdims=True)) @ vd
            for poly in worst:
                o = attention(q, k, v, poly).astype(np.float64)
                rel = float(np.linalg.norm(o - ref) / np.linalg.norm(ref))
                bound = float(np.max(np.abs(o - ref) / (1e-2 + 1e-2 * np.abs(ref))))
                worst[poly] = (max(worst[poly][0], rel), max(worst[poly][1], bound))
        base = worst[0]
        for poly in (4, 16):
            rel, bound = worst[poly]
            check(rel <= 0.02 and bound <= 1.0 and rel <= base[0] * 1.5 + 1e-6,
                  "D=64 T=%d POLY %d: relative Frobenius %.2e (MUFU alone %.2e), bound ratio %.3f (%.3f)"
                  % (T, poly, rel, base[0], bound, base[1]))


def main():
    torch.manual_seed(7)
    coefficient_check()
    routine_check()
    attention_check()
    print("FAILURES: %d" % len(FAILURES))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
