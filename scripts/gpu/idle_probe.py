#!/usr/bin/env python3
"""Does the device's idle time between calls move a call's own time? The judge hands each timed
call over with the device idle for a few milliseconds (inputs, the L2 flush, the doorbell),
where a plain loop and Nsight Compute's replay do not: if the SM clock drops in that idle time
and the call's first microseconds run at a lower clock, the judge reads more than ncu.

Usage (on the GPU machine, from the repository root):
  python3 scripts/gpu/idle_probe.py TASK.json SRC_DIR SHAPE_INDEX [CALLS]

Modes, interleaved call by call (round robin, so that drift falls on every mode alike); each
call: sync, L2 flushed by reading twice its size, sync, [host idle], [pad: a spin kernel while
the call is launched], start event, the call, stream-end event:
  busy        no idle, pad 250 us             (the device is never idle for long)
  idle2       2 ms idle, pad 250 us           (the judge's hand-over, roughly)
  idle2-pad2  2 ms idle, pad 2000 us          (a longer pad: does it bring the clock back?)
  idle20      20 ms idle, pad 250 us
  idle2-nopad 2 ms idle, no pad               (the launch inside the window, for scale)
Prints per mode the median, p10 and p90 of the stream window in microseconds, and the ratio of
each median to busy's.
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from eager_package import from_argv, l2_buffer, sleep_cycles_per_us  # noqa: E402

MODES = (("busy", 0.0, 250), ("idle2", 0.002, 250), ("idle2-pad2", 0.002, 2000),
         ("idle20", 0.020, 250), ("idle2-nopad", 0.002, 0))


def main():
    _, dims, fn, sets, calls = from_argv(40, 5000, 4)
    flush = l2_buffer()
    rate = sleep_cycles_per_us()
    for s in sets[:2]:
        fn(*s)
    times = {m[0]: [] for m in MODES}
    for k in range(calls):
        for name, idle_s, pad_us in MODES:
            args = sets[k % len(sets)]
            torch.cuda.synchronize()
            flush.sum()
            torch.cuda.synchronize()
            if idle_s:
                time.sleep(idle_s)
            if pad_us:
                torch.cuda._sleep(int(pad_us * rate))
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(*args)
            b.record()
            b.synchronize()
            times[name].append(a.elapsed_time(b) * 1e3)
    base = statistics.median(times["busy"])
    print("idle_probe: %s %s, %d calls per mode" % (sys.argv[2], dims, calls))
    for name, _, _ in MODES:
        t = sorted(times[name])
        q = statistics.quantiles(t, n=10)
        print("  %-12s median %9.1f us  p10 %9.1f  p90 %9.1f  vs busy %.4f"
              % (name, statistics.median(t), q[0], q[-1], statistics.median(t) / base))


if __name__ == "__main__":
    main()
