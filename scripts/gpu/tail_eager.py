#!/usr/bin/env python3
"""What the judge's window tail is made of: the gap between a call's stream end and the
device-wide end the judge records after waiting for the whole device (timing.window_ns).

Usage (on the GPU machine, from the repository root):
  python3 scripts/gpu/tail_eager.py TASK.json SRC_DIR SHAPE_INDEX [CALLS] [peer]

With `peer`, a second process holds a CUDA context (and 1 GiB) on the device, idle, the whole
time, as the judge's own process does while its child runs.

Calls: `trivial` (empty outputs, as the judge's calibration), `sleep` (one spinning kernel as
long as the package's call), `dirty` (twice the L2 zeroed: the L2 full of dirty lines at the
stream end), `package` (the eager baseline). Drains, each after the call's
stream-end event:
  judge     spin on the stream end, device sync, record the end   (the judge's child)
  nosync    spin on the stream end, record the end
  block     block on the stream end (no spin), device sync, record the end
  inorder   record the end at once, in stream order (the GPU's own event-to-event gap)
Prints, per call and drain, the median and least tail in microseconds.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from eager_package import from_argv, l2_buffer, sleep_cycles_per_us  # noqa: E402


def main():
    peer = None
    if "peer" in sys.argv[5:]:
        import subprocess
        peer = subprocess.Popen([sys.executable, "-c", "import sys, time, torch; x = torch.empty(1 << 28, device='cuda'); "
                                 "torch.cuda.synchronize(); print('ready', flush=True); time.sleep(600)"], stdout=subprocess.PIPE)
        peer.stdout.readline()
    _, dims, fn, sets, calls = from_argv(30, 4000, 4)
    flush = l2_buffer()
    out_specs = [(o.shape, o.dtype) for o in (lambda r: r if isinstance(r, (list, tuple)) else [r])(fn(*sets[0]))]
    torch.cuda.synchronize()

    # how many cycles torch.cuda._sleep needs to last as long as the package's call
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record(); fn(*sets[0]); b.record(); b.synchronize()
    call_ms = a.elapsed_time(b)
    cycles = int(call_ms * 1e3 * sleep_cycles_per_us())

    bodies = {
        "trivial": lambda args: [torch.empty(s, dtype=d, device="cuda") for s, d in out_specs],
        "sleep": lambda args: torch.cuda._sleep(cycles),
        # the L2 left full of dirty lines at the stream end, as after any call that writes its outputs
        "dirty": lambda args: (flush.zero_(), [torch.empty(s, dtype=d, device="cuda") for s, d in out_specs]),
        "package": lambda args: fn(*args),
    }

    def tail(body, drain, args):
        torch.cuda.synchronize()
        flush.sum()
        s, m, e = (torch.cuda.Event(enable_timing=True) for _ in range(3))
        s.record()
        body(args)
        m.record()
        if drain == "judge":
            while not m.query():
                pass
            torch.cuda.synchronize()
        elif drain == "nosync":
            while not m.query():
                pass
        elif drain == "block":
            m.synchronize()
            torch.cuda.synchronize()
        e.record()
        e.synchronize()
        return s.elapsed_time(m) * 1e3, m.elapsed_time(e) * 1e3

    print("call %.1f us; sleep cycles %d%s" % (call_ms * 1e3, cycles, "; an idle peer context on the device" if peer else ""))
    for name, body in bodies.items():
        for drain in ("judge", "nosync", "block", "inorder"):
            res = [tail(body, drain, sets[i % len(sets)]) for i in range(calls)]
            ts = [t for _, t in res]
            print("%-8s %-8s stream %9.1f us  tail median %7.1f  least %7.1f  greatest %7.1f"
                  % (name, drain, statistics.median(s for s, _ in res), statistics.median(ts), min(ts), max(ts)), flush=True)
    if peer is not None:
        peer.kill()


if __name__ == "__main__":
    main()
