#!/usr/bin/env python3
"""Runs a package's entry point at every graded shape of its task under Nsight Compute.

Usage (on the GPU machine, from the repository root):
  ncu --profile-from-start off --clock-control none --cache-control all \
      --metrics gpu__time_duration.sum --csv \
      python3 scripts/gpu/ncu_package.py TASK.json SRC_DIR [CALLS] > NCU.csv
  python3 scripts/gpu/ncu_sum.py NCU.csv CALLS --by-marker   # one line per graded shape

One process for all the task's graded shapes (a process per shape spent most of a device
call importing torch). Per shape: CALLS + 2 input sets from the judge's own generator, two
warm-up calls, then -- between cudaProfilerStart and Stop, so ncu sees nothing else -- one
marker kernel (torch.cuda._sleep, named spin_kernel) and the CALLS calls. ncu_sum.py splits
the kernel list at the markers. The independent cross-check of the judge's median
(scripts/gpu/fidelity.sh).

With WARM_US=N in the environment, each profiled call is preceded, outside the profiled range,
by N microseconds of a spin kernel: ncu's own work between kernels leaves the device idle and
its SM clock low ("clocks as found", --clock-control none), which a compute-bound kernel then
starts at, where the judge's calls start on a device its launch pad keeps busy.

With RANGE=1 each call is a profiler range of its own (cudaProfilerStart, the call,
cudaProfilerStop; the device synchronised outside the range), and each shape's marker a range
holding the spin kernel alone, for `ncu --replay-mode app-range`: Nsight Compute then times the
call as one workload, first kernel to last, idle gaps between them included -- what a call of
several kernels costs the device, which the summed kernel times (the default mode) leave out
(docs/PERF.md, "Fidelity, session 22"). ncu_sum.py --ranges CALLS splits its rows.

With RANGE=1 and PAD_US=N as well, each call's range opens with N microseconds of the judge's
own launch pad (kzoo_judge/pad.py: the whole device held, timed by its global timer) and the
call's launches queue behind it; a range holding the pad alone comes just before each call's,
and ncu_sum.py --padded-ranges CALLS takes the median of the differences. Why: without the pad, a range's clock starts while the
host is still launching the call's kernels through ncu's interception (1.0-1.7 ms of the ranges
session 23 read), which no call in the judge pays; with it, the range holds the call as the
device runs it -- its kernels back to back, the idle gaps between them, a previous kernel's L2
lines written back during the next -- and a clock kept up by the spin, as in the judge.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from eager_package import load, sleep_cycles_per_us  # noqa: E402
from kzoo_judge import inputs  # noqa: E402
from kzoo_judge.pad import ExclusivePad  # noqa: E402


def main():
    task_path, src_dir = sys.argv[1], sys.argv[2]
    calls = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    task, name, _, fn = load(task_path, src_dir, 0)
    _, workload = task.workload(None)
    warm_us = float(os.environ.get("WARM_US", "0"))
    warm_cycles = int(warm_us * sleep_cycles_per_us()) if warm_us > 0 else 0
    pad_us = float(os.environ.get("PAD_US", "0"))
    for index, shape in enumerate(workload["graded"]):
        dims = task.bind(workload, shape)
        sets = [inputs.make_inputs(task, dims, 1000 * (index + 1) + i, "cuda") for i in range(calls + 2)]
        for s in sets[:2]:
            fn(*s)
        torch.cuda.synchronize()
        cudart = torch.cuda.cudart()
        if os.environ.get("RANGE") == "1" and pad_us > 0:
            padded_ranges(fn, sets[2:], cudart, pad_us)
        elif os.environ.get("RANGE") == "1":
            ranges(fn, sets[2:], cudart, warm_cycles)
        else:
            kernels(fn, sets[2:], cudart, warm_cycles)
        del sets
        torch.cuda.empty_cache()
        print("ncu_package: %s workload %s graded shape %d %s, %d calls" % (task.name, name, index, dims, calls),
              file=sys.stderr)


def kernels(fn, sets, cudart, warm_cycles):
    """One profiled stretch: the marker kernel, then every call (ncu's kernel replay)."""
    cudart.cudaProfilerStart()
    torch.cuda._sleep(1000)  # the marker: a shape's calls start here
    for s in sets:
        if warm_cycles:
            torch.cuda.synchronize()
            cudart.cudaProfilerStop()
            torch.cuda._sleep(warm_cycles)
            cudart.cudaProfilerStart()
        fn(*s)
    torch.cuda.synchronize()
    cudart.cudaProfilerStop()


def ranges(fn, sets, cudart, warm_cycles):
    """A range for the marker, then one range per call (ncu's range replay): the range holds the
    call's launches and nothing of the harness; the sync that ends it lies outside."""
    cudart.cudaProfilerStart()
    torch.cuda._sleep(1000)
    cudart.cudaProfilerStop()
    torch.cuda.synchronize()
    for s in sets:
        if warm_cycles:
            torch.cuda._sleep(warm_cycles)
        cudart.cudaProfilerStart()
        fn(*s)
        cudart.cudaProfilerStop()
        torch.cuda.synchronize()


def padded_ranges(fn, sets, cudart, pad_us):
    """Per call two ranges: the pad alone, then the pad with the call queued behind it. The pad
    is the judge's own (pad.ExclusivePad: every thread slot of every SM until its start plus
    `pad_us` on the device's global timer), so both ranges of a pair hold the same pad whatever
    the SM clock. (torch.cuda._sleep counts SM cycles: under ncu's range replay each range
    starts at whatever clock ncu's own idle left, and a 3000 us pad of cycles read 2980-3800 us
    from range to range on the H200, session 32.) The device is synchronised outside every range."""
    pad, why = ExclusivePad.load()  # loaded here, outside every range
    if pad is None:
        raise SystemExit("ncu_package.py: the judge's pad did not load: %s" % why)
    stream = torch.cuda.current_stream().cuda_stream
    for s in sets:
        for call in (False, True):
            cudart.cudaProfilerStart()
            why = pad.launch(pad_us, stream)
            if why:
                raise SystemExit("ncu_package.py: %s" % why)
            if call:
                fn(*s)
            cudart.cudaProfilerStop()
            torch.cuda.synchronize()


if __name__ == "__main__":
    main()
