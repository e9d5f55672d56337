# Device smoke test of fa3v1 (and of its variants, fa3v2: VARIANT_DIR):
# python3 lab/flash-attention-prefill/smoke_fa3v1.py [VARIANT_DIR] [timing] (from the repository root). Correctness against the task's reference at every correctness
# shape and a few ragged / block-boundary ones (relative Frobenius <= 0.02, the task's
# comparator, and the board's elementwise bound 0.01 + 0.01|ref|), then, with
# "timing", CUDA-event timing at the graded shapes beside torch SDPA (causal). One line a check.
import importlib.util
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

src = sys.argv[1] if len(sys.argv) > 1 else "lab/flash-attention-prefill/fa3v1"
variant = os.path.basename(os.path.normpath(src))
t0 = time.time()
spec = importlib.util.spec_from_file_location(variant + "_flash_attention", os.path.join(src, "flash_attention.py"))
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
print("import+build %.1f s" % (time.time() - t0), flush=True)
task = json.load(open("catalog/tasks/flash-attention-prefill/task.json"))
ns = {}
exec(task["definition"]["reference"]["source"], ns)
ref = ns["flash_attention"]
wl = task["workloads"]["synthetic"]


def inputs(B, H, T, D):
    return [torch.randn(B, H, T, D, device="cuda", dtype=torch.bfloat16) for _ in range(3)]


fails = 0
shapes = [tuple(s) for s in wl["correctness"]] + [tuple(s) for s in wl["measure"]] + [
    (1, 1, 128, 128), (1, 1, 129, 64), (2, 2, 383, 128), (1, 3, 640, 64), (1, 2, 4096, 128),
    (3, 100, 300, 64),  # 300 tiles, more than the SMs (the persistent walk wraps)
    (1, 2, 191, 64), (1, 2, 193, 64), (2, 3, 383, 64), (1, 2, 576, 64)]  # fa3v2's 192-key block edges
# Both grids: one CTA per tile (the default) and the persistent one (m.PERSISTENT is read at
# every call, so one build serves both).
# KZOO_SMOKE_GRIDS=0 checks and times the CTA-per-tile grid only (a sweep of build options).
GRIDS = [int(g) for g in os.environ.get("KZOO_SMOKE_GRIDS", "0,1").split(",")]
for persistent in GRIDS:
    m.PERSISTENT = persistent
    for shp in shapes:
        q, k, v = inputs(*shp)
        o = m.flash_attention(q, k, v).float()
        torch.cuda.synchronize()
        r = ref(q, k, v).float()
        rel = ((o - r).norm() / r.norm()).item()
        ratio = ((o - r).abs() / (0.01 + 0.01 * r.abs())).max().item()
        finite = bool(torch.isfinite(o).all())
        ok = finite and rel <= 0.02 and ratio <= 1
        fails += not ok
        print("persistent %d shape %s relfro %.2e bound_ratio %.3f %s"
              % (persistent, shp, rel, ratio, "ok" if ok else "FAIL"), flush=True)
    # Determinism / no races: the same inputs twice give identical bits.
    q, k, v = inputs(2, 4, 1000, 128)
    a, b = m.flash_attention(q, k, v), m.flash_attention(q, k, v)
    same = bool(torch.equal(a, b))
    fails += not same
    print("persistent %d repeat bit-identical %s" % (persistent, "ok" if same else "FAIL"), flush=True)
print("failures %d (%s: pingpong %s, stages %s/%s, BN64 %s)"
      % (fails, variant, getattr(m, "PINGPONG", "-"), getattr(m, "STAGES128", "-"), getattr(m, "STAGES64", "-"), getattr(m, "BN64", 128)), flush=True)

if "timing" in sys.argv[2:]:
    def events(fn, n=10):
        for _ in range(3):
            fn()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(n):
            fn()
        e1.record()
        torch.cuda.synchronize()
        return e0.elapsed_time(e1) * 1000 / n

    for B, H, T, D in wl["graded"]:
        q, k, v = inputs(B, H, T, D)
        flop = 4 * B * H * T * T * D / 2
        sd = events(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
        for persistent in GRIDS:
            m.PERSISTENT = persistent
            us = events(lambda: m.flash_attention(q, k, v))
            print("time %s %s persistent %d %.0f us (%.0f TFLOP/s, %.0f%% of roofline 989) sdpa %.0f us ratio %.2f"
                  % ((B, H, T, D), variant, persistent, us, flop / us / 1e6, 100 * flop / us / 1e6 / 989, sd, us / sd),
                  flush=True)
sys.exit(1 if fails else 0)
