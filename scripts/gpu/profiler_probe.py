#!/usr/bin/env python3
"""What does the judge's profiler pass cost, and where? (issue 17, verdict time.)

On the H200 the first case of a softmax grade spent ~5 s in the child's profiler pass and
~6 s in the judge's profile of the reference; later cases spent almost nothing. This probe
times torch.profiler in fresh processes, one scenario each, so that the first-use cost
(CUPTI/Kineto coming up) is seen apart from the per-session cost:
  plain     import, CUDA up, a few kernels; then profile sessions 1, 2, 3 (CPU+CUDA), each split
            into enter / body / exit / events()
  cpuonly   the same with ProfilerActivity.CPU only (no CUPTI)
  warm      a profile session with nothing in it right after CUDA comes up, then a loaded
            workload, then sessions 1 and 2: does an empty session pay the first-use cost?
  thread    the empty session run in a background thread while the main thread times a tight
            loop of tiny host steps: does the warm-up stall the main thread (the GIL)?
  lazy      CUDA_MODULE_LOADING=EAGER set before import: is the first session's cost module
            patching of lazily loaded kernels?
  autograd  the judge's session since 2026-12-02 (kzoo_judge/profiling.py: the autograd profiler on
            Kineto, without torch.profiler's start_trace metadata), sessions 1, 2, 3
  inductor  `import torch._inductor.config` and `import torch.distributed` timed alone: what
            torch.profiler.profile's start_trace pulls in on its first use
Usage: python3 scripts/gpu/profiler_probe.py [SCENARIO ...]   (default: all but thread). One JSON
line each. Run 2026-12-02 on the H200 (torch 2.11): docs/PERF.md.
"""
import json
import os
import subprocess
import sys
import time

SCENARIOS = ["plain", "cpuonly", "warm", "autograd", "inductor", "lazy"]


def _work(torch, n=4):
    x = torch.randn(4096, 4096, device="cuda")
    for _ in range(n):
        y = torch.softmax(x, dim=-1)
        x = (y * 2.0 + 1.0).relu()
    torch.cuda.synchronize()
    return x


def _session(torch, acts, body):
    from torch.profiler import profile
    t0 = time.perf_counter()
    if acts == "autograd":
        from kzoo_judge import profiling  # imported by run() before any session: not timed here
        p = profiling.session("cuda")
    else:
        p = profile(activities=acts)
    p.__enter__()
    t1 = time.perf_counter()
    body()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    p.__exit__(None, None, None)
    t3 = time.perf_counter()
    names = [ev.name for ev in (p.events() if hasattr(p, "events") else p.function_events)]
    t4 = time.perf_counter()
    return {"enter": round(t1 - t0, 4), "body": round(t2 - t1, 4), "exit": round(t3 - t2, 4),
            "events": round(t4 - t3, 4), "n_events": len(names),
            "kernels": sum(1 for n in names if "softmax" in n.lower() or "elementwise" in n.lower())}


def run(scenario):
    out = {"scenario": scenario}
    t0 = time.perf_counter()
    import torch
    from torch.profiler import ProfilerActivity
    out["import_s"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    out["cuda_up_s"] = round(time.perf_counter() - t0, 3)
    both = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    if scenario == "warm":
        out["empty"] = _session(torch, both, lambda: None)
    if scenario == "thread":
        import threading
        gaps, stop = [], [False]

        def warm():
            out["empty_in_thread"] = _session(torch, both, lambda: None)
            stop[0] = True
        th = threading.Thread(target=warm)
        last = time.perf_counter()
        th.start()
        while not stop[0]:
            now = time.perf_counter()
            gaps.append(now - last)
            last = now
        th.join()
        gaps.sort()
        out["main_loop_steps"] = len(gaps)
        out["main_loop_max_gap_ms"] = round(gaps[-1] * 1e3, 2) if gaps else None
        out["main_loop_p99_gap_ms"] = round(gaps[int(len(gaps) * 0.99)] * 1e3, 3) if gaps else None
    if scenario == "inductor":
        for mod in ("torch.distributed", "torch._inductor.config"):
            t0 = time.perf_counter()
            __import__(mod)
            out["import " + mod] = round(time.perf_counter() - t0, 3)
    _work(torch, 2)  # the workload's kernels loaded before any profiled session
    acts = [ProfilerActivity.CPU] if scenario == "cpuonly" else both
    if scenario == "autograd":
        acts = "autograd"
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "judge"))
        import kzoo_judge.profiling  # noqa: F401
    out["inductor_before"] = "torch._inductor" in sys.modules
    for k in (1, 2, 3):
        out["session%d" % k] = _session(torch, acts, lambda: _work(torch))
    out["inductor_after"] = "torch._inductor" in sys.modules
    print(json.dumps(out), flush=True)


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--one":
        return run(sys.argv[2])
    for sc in sys.argv[1:] or SCENARIOS:
        env = dict(os.environ)
        if sc == "lazy":
            env["CUDA_MODULE_LOADING"] = "EAGER"
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", sc], env=env,
                           capture_output=True, text=True, timeout=300)
        line = (r.stdout.strip().splitlines() or ["{}"])[-1]
        try:
            doc = json.loads(line)
        except ValueError:
            doc = {"scenario": sc, "error": (r.stderr or r.stdout)[-2000:]}
        doc["process_s"] = round(time.perf_counter() - t0, 3)
        print(json.dumps(doc), flush=True)


if __name__ == "__main__":
    main()
