#!/usr/bin/env python3
"""A call's kernels on the device's own clock: their summed time, their span, the idle gaps between.

The judge times a call as a stream window (CUDA events around it); Nsight Compute reports the sum
of each kernel's own duration. For calls of many kernels the two part: the eager rotary-embedding
package launches 19 kernels a call, ~5.0 ms by ncu's sum, 5.42 ms by a CUDA-event window even in
a plain process (7.5%). Either the device idles between the call's kernels (launch latency: the
span, first kernel's start to last kernel's end, exceeds the sum), or the kernels themselves run
slower than under ncu (span == sum, and the sum exceeds ncu's). This probe reads the kernels'
device timestamps from one torch.profiler (Kineto/CUPTI) session over --calls calls, each after a
device sync and an L2 flush, on 4 input sets in turn, and reports per package and graded shape the
medians over calls of: kernels, sum, span, gaps = span - sum (negative where kernels overlap),
idle (the span's time with no kernel running, never negative), window (the CUDA events; under the
profiler, CUPTI's launch overhead is in it) and window - span. Memsets and memcopies the call puts
on the device count as its kernels (they hold it), though ncu's sum leaves them out: --names shows them.

Attribution: each call runs inside record_function("kernel_span.call"), the flush and the pad in
"kernel_span.other" ranges, with a device sync between the flush and the call. A device activity
belongs to the range in which its launch (the cudaLaunchKernel/cuLaunchKernel/cudaMemsetAsync ...
runtime or driver event, same CUPTI correlation id) was made on the host: exact, no host/device
clock alignment involved. Activities whose launch Kineto did not record go by their device start
to the last range opened before it on the host (sound since the syncs order every range's work
after the previous one's, but it leans on Kineto's alignment of the two clocks); their count is
reported as by_time, and kernels_min/max differing across calls flags a misattribution.

Usage (GPU machine, repository root):
  python3 scripts/gpu/kernel_span.py [--shape 0 | --all-shapes] [--calls 20] [--pad-us 0] [--warm-us 0] [--names] [--json FILE] TASK_JSON:SRC_DIR ...
"""
import argparse
import bisect
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

CALL, OTHER = "kernel_span.call", "kernel_span.other"


def is_work(name):
    """False for the device-side records that are no work: Kineto's sync records (a wait spans the
    whole sync, it would swell the sum) and the GPU track of our own record_function ranges."""
    return not (name.endswith(" Sync") or name == "Stream Wait Event" or name.startswith("kernel_span."))


def attribute(ranges, launches, device):
    """Device activities per call. ranges: [(label, start, end)] host times of the CALL and OTHER
    ranges; launches: [(correlation id, host start)] of runtime/driver API events; device:
    [(correlation id, name, start, end)] device activities. Returns ([[(name, start, end)] per CALL
    range, in order], how many were placed by device time for want of a recorded launch)."""
    ranges = sorted(ranges, key=lambda r: r[1])
    starts = [r[1] for r in ranges]
    call_no, n = [], 0
    for label, _, _ in ranges:
        call_no.append(n if label == CALL else None)
        n += label == CALL
    calls, by_time = [[] for _ in range(n)], 0
    owner = {}  # correlation id -> call number, or None for a launch outside every call range
    for corr, t in launches:
        i = bisect.bisect_right(starts, t) - 1
        owner[corr] = call_no[i] if i >= 0 and t <= ranges[i][2] else None
    for corr, name, s, e in device:
        if not is_work(name):
            continue
        if corr in owner:
            k = owner[corr]
        else:
            i = bisect.bisect_right(starts, s) - 1
            k = call_no[i] if i >= 0 else None
            by_time += k is not None
        if k is not None:
            calls[k].append((name, s, e))
    return calls, by_time


def is_copy(name):
    """Kineto's names for a copy's or a memset's record ("Memcpy DtoH (Device -> Pinned)", "Memset
    (Device)"): work the call holds the device with, which Nsight Compute's kernel sum leaves out."""
    return name.startswith("Memcpy") or name.startswith("Memset")


def call_figures(kernels):
    """One call's figures from its kernels [(name, start_us, end_us)]: kernels, sum_us, kernel_sum_us
    (the kernels' alone, copies and memsets left out: what ncu's sum counts), span_us,
    gaps_us (span - sum: negative where kernels overlap), idle_us (time of the span no kernel ran,
    >= 0), top_gaps (the 3 largest idle gaps, [us, kernel before, kernel after], largest first);
    {"error": ...} for a call with no kernels."""
    if not kernels:
        return {"error": "no kernels attributed to the call"}
    ks = sorted(kernels, key=lambda k: (k[1], k[2]))
    total = sum(e - s for _, s, e in ks)
    reach, reach_name, gaps = ks[0][2], ks[0][0], []  # the latest end so far and whose it is
    for name, s, e in ks[1:]:
        if s > reach:  # an idle stretch; a kernel that starts before `reach` overlaps, no gap
            gaps.append((s - reach, reach_name, name))
        if e > reach:
            reach, reach_name = e, name
    span = reach - ks[0][1]
    gaps.sort(key=lambda g: -g[0])
    return {"kernels": len(ks), "sum_us": total, "kernel_sum_us": sum(e - s for n, s, e in ks if not is_copy(n)),
            "span_us": span, "gaps_us": span - total,
            "idle_us": sum(g[0] for g in gaps), "top_gaps": [list(g) for g in gaps[:3]]}


def summarize(figs, windows_us):
    """Medians over the calls that have kernels: kernels (and their least and most: a count that
    varies means a data-dependent package or a misattribution), sum, span, gaps, idle, window,
    window - span (per call, then the median); errors counts the calls without kernels."""
    good = [(f, w) for f, w in zip(figs, windows_us) if "error" not in f]
    out = {"calls": len(figs), "errors": len(figs) - len(good)}
    if not good:
        out["error"] = figs[0]["error"] if figs else "no calls"
        return out
    for key in ("kernels", "sum_us", "kernel_sum_us", "span_us", "gaps_us", "idle_us"):
        out[key] = statistics.median(f[key] for f, _ in good)
    out["kernels_min"] = min(f["kernels"] for f, _ in good)
    out["kernels_max"] = max(f["kernels"] for f, _ in good)
    out["window_us"] = statistics.median(w for _, w in good)
    out["window_minus_span_us"] = statistics.median(w - f["span_us"] for f, w in good)
    return out


def names_table(calls):
    """[(name, launches in the median call, median over calls of the name's summed us a call)] in
    the launch order of the median call (median by span; calls lacking a name count it 0 us)."""
    spans = sorted((call_figures(c).get("span_us", 0.0), i) for i, c in enumerate(calls))
    mid = calls[spans[len(spans) // 2][1]] if calls else []
    per_call = []
    for c in calls:
        d = {}
        for name, s, e in c:
            d[name] = d.get(name, 0.0) + (e - s)
        per_call.append(d)
    order = []
    for name, _, _ in sorted(mid, key=lambda k: k[1]):
        if name not in order:
            order.append(name)
    return [(n, sum(1 for k in mid if k[0] == n), statistics.median(d.get(n, 0.0) for d in per_call))
            for n in order]


def kineto_events(prof):
    """(ranges, launches, device) of a finished session, in us, for attribute(); torch 1.13 and 2.x."""
    def us(e):
        if hasattr(e, "start_ns"):
            return e.start_ns() / 1e3, (e.start_ns() + e.duration_ns()) / 1e3
        return float(e.start_us()), float(e.start_us() + e.duration_us())
    ranges, launches, device = [], [], []
    for e in prof.profiler.kineto_results.events():
        name, on_device = e.name(), str(e.device_type()).endswith("CUDA")
        s, t = us(e)
        if on_device:
            device.append((e.correlation_id(), name, s, t))
        elif name in (CALL, OTHER):
            ranges.append((name, s, t))
        elif name.startswith("cu"):  # runtime (cuda*) and driver (cu*) API calls; aten ops are "aten::"
            launches.append((e.correlation_id(), s))
    return ranges, launches, device


def measure(fn, sets, calls, pad_cycles, flush="read", warm_cycles=0):
    """(kernels per call, CUDA-event window us per call) of `calls` calls in one profiler session.
    warm_cycles: the device kept busy that long after the flush, before the sync that ends it, as
    the judge's child does (warm_us: the SM clock back up when the call starts).
    flush "read" evicts the L2 by reading twice its size, as the judge does (child._flush): the L2
    is clean when the call starts. "zero" writes it, as the lab's timing does: the L2 is then full
    of dirty lines that the call's first kernel writes back (up to ~14 us on an H200), which is
    how session 22's first run of this probe was taken."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function
    from eager_package import l2_buffer
    buf, windows = l2_buffer(), []
    for st in sets[:2]:
        fn(*[t.clone() for t in st])  # warm-up: builds, autotuning, lazy module loads
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(calls):
            torch.cuda.synchronize()
            with record_function(OTHER):
                if flush == "zero":
                    buf.zero_()
                else:
                    buf.sum()  # a read; the result is not needed, the eviction is
                if warm_cycles:
                    torch.cuda._sleep(warm_cycles)
            torch.cuda.synchronize()  # the flush is over on the device before the call's range opens
            with record_function(OTHER):
                if pad_cycles:
                    torch.cuda._sleep(pad_cycles)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            with record_function(CALL):
                a.record()
                r = fn(*sets[i % len(sets)])
                b.record()
            torch.cuda.synchronize()
            windows.append(a.elapsed_time(b) * 1e3)
            del r
    per_call, by_time = attribute(*kineto_events(prof))
    return per_call, windows, by_time


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", type=int, action="append", help="graded shape index (repeatable; default 0)")
    ap.add_argument("--all-shapes", action="store_true", help="every graded shape of each package's task")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--pad-us", type=float, default=0.0,
                    help="spin the device this long before each start event, as the judge's launch pad")
    ap.add_argument("--warm-us", type=float, default=0.0,
                    help="keep the device busy this long after the flush, as the judge's warm-up (warm_us)")
    ap.add_argument("--flush", choices=("read", "zero"), default="read",
                    help="how the L2 is flushed before each call: read (the judge's) or zero (the lab's)")
    ap.add_argument("--names", action="store_true", help="also each kernel name's median us a call")
    ap.add_argument("--json", help="write the JSON lines here instead of stdout")
    ap.add_argument("packages", nargs="+", help="TASK_JSON:SRC_DIR")
    a = ap.parse_args()
    import torch
    from eager_package import load, sleep_cycles_per_us
    from kzoo_judge import inputs
    pad_cycles = int(a.pad_us * sleep_cycles_per_us()) if a.pad_us else 0
    warm_cycles = int(a.warm_us * sleep_cycles_per_us()) if a.warm_us else 0
    out = open(a.json, "w") if a.json else sys.stdout

    def emit(rec):
        # line by line: a run cut at its time limit keeps the shapes it finished
        out.write(json.dumps(rec, default=str) + "\n")
        out.flush()

    for spec in a.packages:
        task_path, src_dir = spec.split(":", 1)
        try:
            shapes = a.shape or [0]
            if a.all_shapes:
                from kzoo_judge import task as task_mod
                shapes = range(len(task_mod.load(task_path).workload(None)[1]["graded"]))
        except Exception as e:  # noqa: BLE001 - one package's fault is its own line, the others still run
            emit({"src": src_dir, "task_path": task_path, "error": "%s: %s" % (type(e).__name__, e)})
            continue
        for shape in shapes:
            try:
                task, _, dims, fn = load(task_path, src_dir, shape)
                sets = [inputs.make_inputs(task, dims, 500 + i, "cuda") for i in range(4)]
                calls, windows, by_time = measure(fn, sets, a.calls, pad_cycles, a.flush, warm_cycles)
            except Exception as e:  # noqa: BLE001
                print("%-24s shape %d: %s: %s" % (src_dir, shape, type(e).__name__, e))
                emit({"src": src_dir, "task_path": task_path, "shape_index": shape, "error": "%s: %s" % (type(e).__name__, e)})
                continue
            figs = [call_figures(c) for c in calls]
            sm = summarize(figs, windows)
            if "error" in sm:
                print("%-24s shape %d: %s" % (task.name, shape, sm["error"]))
            else:
                print("%-24s shape %d: %g kernels (%d-%d), sum %.1f (kernels alone %.1f), span %.1f, gaps %.1f (idle %.1f),"
                      " window %.1f, window-span %.1f us (n=%d, by_time %d)" % (
                          task.name, shape, sm["kernels"], sm["kernels_min"], sm["kernels_max"], sm["sum_us"], sm["kernel_sum_us"],
                          sm["span_us"], sm["gaps_us"], sm["idle_us"], sm["window_us"], sm["window_minus_span_us"],
                          sm["calls"], by_time), flush=True)
            if a.names:
                for name, n, us in names_table(calls):
                    print("    %9.1f us  x%-3d %s" % (us, n, name[:140]))
            sm.update({"task": task.name, "src": src_dir, "shape_index": shape, "dims": dims, "by_time": by_time,
                       "pad_us": a.pad_us, "warm_us": a.warm_us, "flush": a.flush, "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "per_call": figs, "windows_us": windows})
            emit(sm)
    if out is not sys.stdout:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
