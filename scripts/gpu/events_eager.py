#!/usr/bin/env python3
"""Where a GPU call's time goes, outside the judge: the same eager package timed in one
process with CUDA events three ways, to split the judge-vs-ncu gap into what the timing
window itself adds and what the judge's harness adds.

Usage (on the GPU machine, from the repository root):
  python3 scripts/gpu/events_eager.py TASK.json SRC_DIR SHAPE_INDEX [CALLS]

  sync-then-end  start; fn(); torch.cuda.synchronize(); end   (the judge's window)
  stream-end     start; fn(); end; synchronize               (stream order only)
  read flush     stream-end, the L2 flushed by reading (not zeroing) twice its size
  refill         fresh input values copied into the same tensors every call, against fresh tensors
  idle           sync-then-end after 50 ms of GPU idle (boost and power state as under ncu)
  fresh [+keep]  sync-then-end on new input tensors each call [and 5 outputs alive], as in the judge
  profiler       the sum of the kernels' own durations from torch.profiler, per call

Each call gets one of six fresh input sets from the judge's generator and an L2
flush (zeroing twice the L2) first, as in the judge. Prints one line per variant.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from eager_package import from_argv, l2_buffer, timed_call  # noqa: E402
from kzoo_judge import inputs  # noqa: E402


def main():
    task, dims, fn, sets, calls = from_argv(30, 2000, 6)
    flush = l2_buffer()
    for s in sets[:2]:
        fn(*s)
    torch.cuda.synchronize()

    def window(stream_end, idle_s=0.0, fresh=False, keep=0, read_flush=False, spin_ms=0.0, refill=False):
        out, kept = [], []
        for i in range(calls):
            if idle_s:
                torch.cuda.synchronize()
                time.sleep(idle_s)  # the GPU idles between calls, as between kernels under ncu
            end = time.perf_counter() + spin_ms / 1e3
            while time.perf_counter() < end:  # then busy again, as the judge's prime before a batch
                torch.cuda._sleep(200_000)
                torch.cuda.synchronize()
            args = inputs.make_inputs(task, dims, 3000 + i, "cuda") if fresh else sets[i % len(sets)]
            if refill:  # fresh values, written into the same tensors (the judge's GPU arena)
                for t, f in zip(args, inputs.make_inputs(task, dims, 3000 + i, "cuda")):
                    t.copy_(f)
            # read: the judge's flush since 2026-11-30 (clean lines, no write-back in the window)
            us, r = timed_call(fn, args, flush.sum if read_flush else flush.zero_, end_after_sync=not stream_end)
            out.append(us)
            if keep:  # the judge keeps a batch's outputs alive until it has read them
                kept = (kept + [r])[-keep:]
        return statistics.median(out)

    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(5):
            flush.zero_()
            fn(*sets[i % len(sets)])
        torch.cuda.synchronize()
    kern = [e for e in prof.events() if "CUDA" in str(getattr(e, "device_type", ""))]
    total = sum(getattr(e, "device_time_total", 0.0) or getattr(e, "cuda_time_total", 0.0) for e in kern)
    flush_us = sum(getattr(e, "device_time_total", 0.0) or getattr(e, "cuda_time_total", 0.0) for e in kern
                   if "fill" in e.name.lower() or "zero" in e.name.lower())
    print("%s shape %s: sync-then-end %.1f us, stream-end %.1f us, stream-end after a read flush %.1f us, "
          "idle 50 ms before each %.1f us, idle 50 ms then a 20 ms spin %.1f us, "
          "fresh values into the same tensors (read flush, stream end) %.1f us, fresh tensors (read flush, stream end) %.1f us, "
          "fresh inputs each call %.1f us, fresh inputs and 5 outputs kept %.1f us, profiler kernels %.1f us/call (flush excluded)"
          % (task.name, dims, window(False), window(True), window(True, read_flush=True), window(False, 0.05),
             window(True, 0.05, read_flush=True, spin_ms=20),
             window(True, read_flush=True, refill=True), window(True, read_flush=True, fresh=True), window(False, fresh=True),
             window(False, fresh=True, keep=5), (total - flush_us) / 5))


if __name__ == "__main__":
    main()
