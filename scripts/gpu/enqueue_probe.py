# The host enqueue time of two catalog solutions' calls outside the sandbox (the diagnosis of the judge's launch pad,
# 2026-12-02; docs/PERF.md): the call alone and with the judge's pad and events. Run from the repository root on
# the GPU machine: python3 scripts/gpu/enqueue_probe.py (one JSON line).
import json
import os
import statistics
import sys
import time

os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, "judge")
sys.path.insert(0, "scripts/gpu")
import torch  # noqa: E402
from kzoo_judge import task as task_mod, inputs  # noqa: E402
from catalog_helper import PAD_CYCLES, _load_solution  # noqa: E402
out = {}
for tname, src in [("fp8-quant-per-token", "catalog/solutions/gpu/h200/quant/per_token/fp8/fp8_quant_per_token_eager/src"),
                   ("cross-entropy", "catalog/solutions/gpu/h200/loss/cross_entropy/bf16/cross_entropy_eager/src")]:
    task = task_mod.load("catalog/tasks/%s/task.json" % tname)
    _, w = task.workload(None)
    dims = task.bind(w, w["graded"][0])
    x = inputs.make_inputs(task, dims, 1, "cuda")
    fn = _load_solution(task, src)
    for _ in range(3):  # builds and caches first
        fn(*x)
    torch.cuda.synchronize()
    res = {}
    for mode in ("fn", "pad+events+fn"):
        ts = []
        for i in range(100):
            torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0 = time.perf_counter_ns()
            if mode != "fn":
                torch.cuda._sleep(PAD_CYCLES)
                a.record()
            fn(*x)
            if mode != "fn":
                b.record()
            ts.append((time.perf_counter_ns() - t0) / 1e3)
        torch.cuda.synchronize()
        ts.sort()
        res[mode] = {"med": round(statistics.median(ts), 1), "p90": round(ts[89], 1), "min": round(ts[0], 1)}
    out[tname] = res
print(json.dumps(out))
