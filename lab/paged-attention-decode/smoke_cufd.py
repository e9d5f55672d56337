# Device smoke test and split sweep of round 7's cufd (not part of run_attn.sh; optional, ~60-90 s):
#   $PY lab/paged-attention-decode/smoke_cufd.py [timing]      (from the repository root)
# 1. Correctness against the task's reference at every correctness and measure shape, plus varied
#    seq_lens (1 .. L, the first 1) and edge shapes: the task's comparator (relative Frobenius <=
#    0.01) and the board's elementwise bound (0.01 + 0.01 |ref|). One line a check.
# 2. With "timing": CUDA-event medians (10 calls, after 2 warm-up calls) at each graded shape of the
#    catalog solution and of cufd at its own split choice and forced chunks (KZOO_PD_CHUNK pages a
#    split: 32, 64, 96, 128), and cufd's output against the solution's. One JSON line a point.
import importlib.util
import json
import math
import os
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "judge"))
from kzoo_judge import compare, inputs, reference  # noqa: E402
from kzoo_judge import task as task_mod  # noqa: E402


def load(path, name):
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(name, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    sys.path.pop(0)
    return m


t0 = time.time()
cufd = load(os.path.join(ROOT, "catalog/solutions/gpu/h200/attention/paged_decode/fp8/paged_attention_decode_eager/src/paged_attention_decode.py"), "cufd_pd")
print("import+build %.1f s" % (time.time() - t0), flush=True)
task = task_mod.load(os.path.join(ROOT, "catalog/tasks/paged-attention-decode/task.json"))
ref = reference.load(task)
specs = reference.expected_specs(task)
_, w = task.workload(None)
DEV = os.environ.get("KZOO_SMOKE_DEVICE", "cuda")  # cpu: checks the script and the reference fallback only
fails = 0
shapes = [list(s) for s in w["correctness"] + w["measure"]] + [
    [2, 8, 2, 64, 1023, 160], [3, 4, 4, 64, 530, 120], [2, 16, 1, 64, 2100, 300], [2, 32, 2, 128, 700, 120],
    [1, 8, 1, 128, 40000, 2600]]
for si, dims in enumerate(shapes):
    x = list(inputs.make_inputs(task, task.bind(w, dims), 200 + si, DEV))
    for varied in (False, True):
        if varied:
            gen = torch.Generator().manual_seed(si)
            sl = torch.randint(1, dims[4] + 1, (dims[0],), generator=gen, dtype=torch.int32)
            sl[0] = 1
            x[6] = sl.to(x[6].device)
        exp = reference.run(ref, task, x)
        got = cufd.paged_attention_decode(*[t.clone() for t in x])
        if DEV == "cuda":
            torch.cuda.synchronize()
        m = compare.measure([got], exp, specs, task.comparator, task.row_pass)
        v = compare.compare([got], exp, specs, task.comparator, math.inf, task.row_pass, strict_dtype=False, bound=(0.01, 0.01))
        ok = m <= task.tolerance and (v.bound_ratio or 0.0) <= 1.0
        fails += not ok
        print(json.dumps({"check": dims, "varied_lens": varied, "rel_frob": m, "bound_ratio": v.bound_ratio, "ok": ok}), flush=True)
print("correctness failures: %d" % fails, flush=True)

if "timing" in sys.argv:
    sol = load(os.path.join(ROOT, "catalog/solutions/gpu/h200/attention/paged_decode/fp8/"
                                  "paged_attention_decode_eager/src/paged_attention_decode.py"), "sol_pd")

    def events(fn, x, calls=10):
        for _ in range(2):
            fn(*x)
        torch.cuda.synchronize()
        ts = []
        for _ in range(calls):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(*x)
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) * 1e3)
        return sorted(ts)[len(ts) // 2]

    for gi, dims in enumerate(w["graded"]):
        x = inputs.make_inputs(task, task.bind(w, dims), 300 + gi, "cuda")
        with torch.no_grad():
            base = sol.paged_attention_decode(*x).float()
            print(json.dumps({"graded": gi, "variant": "solution", "events_us": events(sol.paged_attention_decode, x)}), flush=True)
            for ch in ("", "32", "64", "96", "128"):
                os.environ[cufd.CHUNK_ENV] = ch
                try:
                    got = cufd.paged_attention_decode(*x).float()
                    rel = ((got - base).norm() / base.norm()).item()
                    us = events(cufd.paged_attention_decode, x)
                    nb = x[5].shape[1]
                    per = cufd._occ[(x[0].device.index, dims[3], dims[1] // dims[2] > 8)]
                    print(json.dumps({"graded": gi, "variant": "cufd", "chunk_env": ch,
                                      "split": cufd.splits_for(dims[0], dims[2], nb, per), "resident": per,
                                      "events_us": us, "rel_vs_solution": rel}), flush=True)
                except Exception as e:  # noqa: BLE001 - one point's failure is a line, not the end
                    print(json.dumps({"graded": gi, "variant": "cufd", "chunk_env": ch, "error": str(e)[:300]}), flush=True)
            os.environ.pop(cufd.CHUNK_ENV, None)
        del x
        torch.cuda.empty_cache()
