#!/usr/bin/env python3
"""Why a call's kernels take longer back to back than in Nsight Compute's replay: the same
eager package timed op by op, each op isolated the way ncu isolates a kernel, in one process.

Usage (on the GPU machine, from the repository root):
  python3 scripts/gpu/isolated_eager.py TASK.json SRC_DIR SHAPE_INDEX [CALLS]

Every aten op of the call runs alone: the device is synchronised, optionally the L2 is
flushed, the stream is kept busy by a short sleep kernel while the op is launched (so the
op's events time the device, not the launch), and the op is bracketed by CUDA events.
The op figures are summed per call. Variants, one line each:

  in-stream      the whole call between two events, L2 read-flushed before (the judge's window)
  ops, no flush  each op alone on whatever the previous op left in the L2
  ops, read      each op alone after reading twice the L2 (clean lines: ncu's invalidate)
  ops, zero      each op alone after zeroing twice the L2 (dirty lines to write back first)

Then the per-op table of the 'read' variant (median microseconds per call) against the
in-stream kernels from torch.profiler, to see which ops lose time in the stream.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from eager_package import from_argv, l2_buffer, timed_call  # noqa: E402


class Isolated(TorchDispatchMode):
    def __init__(self, flush):
        super().__init__()
        self.flush = flush
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        torch.cuda.synchronize()
        self.flush()
        torch.cuda.synchronize()
        torch.cuda._sleep(100_000)  # ~50 us of busy stream: the op is queued before its start event runs
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        out = func(*args, **(kwargs or {}))
        b.record()
        torch.cuda.synchronize()
        self.ops.append((str(func.__name__), a.elapsed_time(b) * 1e3))
        return out


def main():
    task, dims, fn, sets, calls = from_argv(10, 4000, 4)
    buf = l2_buffer()
    flushes = {"no flush": lambda: None, "read": lambda: buf.sum(), "zero": lambda: buf.zero_()}
    for s in sets[:2]:
        fn(*[t.clone() for t in s])
    torch.cuda.synchronize()

    def in_stream():
        return statistics.median(timed_call(fn, [t.clone() for t in sets[i % len(sets)]], buf.sum)[0]
                                 for i in range(calls))

    def isolated(kind):
        per_call, table = [], {}
        for i in range(calls):
            args = [t.clone() for t in sets[i % len(sets)]]
            torch.cuda.synchronize()
            mode = Isolated(flushes[kind])
            with mode:
                fn(*args)
            per_call.append(sum(t for _, t in mode.ops))
            for k, (name, t) in enumerate(mode.ops):
                table.setdefault((k, name), []).append(t)
        return statistics.median(per_call), table

    stream_us = in_stream()
    results = {k: isolated(k) for k in flushes}
    print("%s shape %s: in-stream %.1f us; ops alone: %s" % (
        task.name, dims, stream_us, ", ".join("%s %.1f us" % (k, v[0]) for k, v in results.items())))

    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(5):
            args = [t.clone() for t in sets[i % len(sets)]]
            torch.cuda.synchronize()
            buf.sum()
            torch.cuda.synchronize()
            fn(*args)
            torch.cuda.synchronize()
    kern = {}
    for e in prof.events():
        if "CUDA" not in str(getattr(e, "device_type", "")):
            continue
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
        n, total = kern.get(e.name, (0, 0.0))
        kern[e.name] = (n + 1, total + t / 5)
    print("  ops alone after a read flush (median us per call):")
    for (k, name), ts in sorted(results["read"][1].items()):
        if statistics.median(ts) > 1.0:
            print("    %2d %-28s %9.1f" % (k, name, statistics.median(ts)))
    print("  in-stream kernels (torch.profiler, us per call, flush and clone kernels included):")
    for name, (n, t) in sorted(kern.items(), key=lambda kv: -kv[1][1]):
        print("    %-90s %3d %9.1f" % (name[:90], n, t))


if __name__ == "__main__":
    main()
