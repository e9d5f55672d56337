#!/usr/bin/env python3
"""What the judge's sync tail reads after different kinds of call, in one process (issue 17).

The judge charges each timed call the median excess of its "sync" tail -- the host time the
driver's cuCtxSynchronize blocks once the call's stream end was seen (child._drain) -- over
floors calibrated on judge-owned calls that spin the device (torch.cuda._sleep). On an H200
real calls read 5-16 us where the floors read ~5 (docs/GPU.md, session 20). This probe runs
the drain's protocol after calls of several kinds, interleaved round by round so that host
drift falls on all of them alike, and prints each kind's tail quantiles:

  sleep        torch.cuda._sleep for ~LEN us and an output allocation (the calibration's call)
  copy         an HBM-bound copy of ~LEN us (ATen, one kernel, no allocation)
  copy+alloc   the same into a freshly allocated output
  sleep+copy   the two above on one stream (two kernels)
  sleep xN     N sleep kernels of LEN/N us each (--kernels N,M,...): does the sync's cost follow the
               number of kernels launched since the last sync?
  TASK:SRC     a package's entry point at graded shape 0, on fresh input sets (e.g. a Triton solution)

Usage (GPU machine, repository root):
  python3 scripts/gpu/sync_probe.py [--len-us 500] [--rounds 60] [--kernels 2,5,20] [TASK_JSON:SRC_DIR ...]
"""
import argparse
import ctypes
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402

from eager_package import l2_buffer, load, sleep_cycles_per_us  # noqa: E402
from kzoo_judge import inputs  # noqa: E402


def quantiles(v):
    v = sorted(v)
    n = len(v)
    return "p10 %5.1f  med %5.1f  p90 %5.1f  max %6.1f us (n=%d)" % (
        v[n // 10] / 1e3, v[n // 2] / 1e3, v[9 * n // 10] / 1e3, v[-1] / 1e3, n)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--len-us", type=float, default=500.0)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--kernels", type=lambda v: [int(n) for n in v.split(",") if n], default=[],
                    help="also N sleep kernels a call, for each N of a comma list (e.g. 2,5,20)")
    ap.add_argument("packages", nargs="*", help="TASK_JSON:SRC_DIR")
    a = ap.parse_args()
    sync = ctypes.CDLL("libcuda.so.1").cuCtxSynchronize
    sync.restype, sync.argtypes = ctypes.c_int, []
    torch.zeros(1, device="cuda")
    assert sync() == 0
    cycles = int(a.len_us * sleep_cycles_per_us())
    # an HBM copy of about len_us: 4.8 TB/s read + write
    n = int(a.len_us * 1e-6 * 4.0e12 / 2 / 4)
    src, dst = torch.ones(n, device="cuda"), torch.empty(n, device="cuda")
    flush = l2_buffer().zero_
    kinds = {
        "sleep": lambda: (torch.cuda._sleep(cycles), torch.empty(1024, device="cuda")),
        "copy": lambda: dst.copy_(src),
        "copy+alloc": lambda: src.clone(),
        "sleep+copy": lambda: (torch.cuda._sleep(cycles // 2), dst.copy_(src)),
    }
    for k in a.kernels:
        def many(k=k):
            for _ in range(k):
                torch.cuda._sleep(max(1, cycles // k))
            return torch.empty(1024, device="cuda")
        kinds["sleep x%d" % k] = many
    for spec in a.packages:
        task_path, src_dir = spec.split(":", 1)
        task, _, dims, fn = load(task_path, src_dir, 0)
        sets = [inputs.make_inputs(task, dims, 500 + i, "cuda") for i in range(4)]
        for st in sets[:2]:
            fn(*[t.clone() for t in st])  # builds, autotuning
        ring = [0]

        def call(fn=fn, sets=sets, ring=ring):
            ring[0] += 1
            return fn(*sets[ring[0] % len(sets)])
        kinds[task.name] = call
    torch.cuda.synchronize()
    tails = {k: [] for k in kinds}
    windows = {k: [] for k in kinds}
    clk = time.perf_counter_ns
    for _ in range(a.rounds):
        for k, fn in kinds.items():
            torch.cuda.synchronize()
            flush()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(cycles // 10)  # the judge's launch pad, in short
            start.record()
            r = fn()
            end.record()
            while not end.query():
                pass
            t0 = clk()
            rc = sync()
            tails[k].append(clk() - t0)
            assert rc == 0
            windows[k].append(start.elapsed_time(end) * 1e6)
            del r
    print("sync_probe: %s, torch %s, calls of ~%.0f us, %d rounds" % (
        torch.cuda.get_device_name(0), torch.__version__, a.len_us, a.rounds))
    for k in kinds:
        print("%-26s window med %8.1f us | sync tail %s" % (k, sorted(windows[k])[len(windows[k]) // 2] / 1e3,
                                                           quantiles(tails[k])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
