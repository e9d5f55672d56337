#!/usr/bin/env python3
"""Sums gpu__time_duration.sum from ncu --csv output; prints per-call microseconds.

Usage: python3 ncu_sum.py NCU_CSV CALLS [--kernels] [--by-marker | --ranges]
  --kernels: also one line per kernel name (microseconds per call, launches per call)
  --by-marker: the run is ncu_package.py's, one segment per graded shape, each opened by a
      marker kernel (spin_kernel, not counted): one line per segment, "INDEX US KERNELS"
  --ranges: the run is ncu_package.py's with RANGE=1 under --replay-mode app-range: a row per
      range, in order, each shape a marker range then CALLS call ranges; the same lines, the
      median range per call (a range's duration holds the idle gaps between its kernels) and
      KERNELS = 1. The rows are taken by position, not by name (a range's name column is ncu's).
  --padded-ranges: the run is ncu_package.py's with RANGE=1 and PAD_US under app-range replay:
      per shape CALLS pairs of ranges, the pad alone then the pad and the call; the same
      lines, the median of the pairs' differences per call (KERNELS = 1), then a fourth field:
      how far those differences spread, (most - least) / median in percent (whether the figure
      is steady enough to grade against); on stderr how far the pad-alone ranges spread (the
      pad's own noise, which every difference carries).
  --clocks: the run is ncu_package.py's with CLOCK_METRIC among its metrics (fidelity.sh
      NCU_CLOCKS=1): one line per segment, "INDEX MHZ_MEDIAN MHZ_MIN MHZ_MAX", the SM clock each
      kernel ran at. Why: the judge times calls on a warm device (its pad), ncu replays each
      kernel after its own save, restore and flush; a kernel that runs faster in the judge than
      under ncu is either faster code or a faster clock, and this tells the two apart.
"""
import csv
import sys

_NS_PER = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "ms": 1e6, "msecond": 1e6}
_HZ_PER = {"hz": 1.0, "cycle/second": 1.0, "cycle/nsecond": 1e9, "cycle/usecond": 1e6, "khz": 1e3, "mhz": 1e6,
           "ghz": 1e9}
MARKER = "spin_kernel"
CLOCK_METRIC = "sm__cycles_elapsed.avg.per_second"


def _metric_rows(path, metric):
    with open(path, newline="") as f:
        lines = [l for l in f if l.startswith('"')]
    for row in csv.DictReader(lines):
        if row.get("Metric Name") == metric:
            yield row


def rows(path):
    """(kernel name, ns) per profiled kernel, in launch order."""
    for row in _metric_rows(path, "gpu__time_duration.sum"):
        yield row.get("Kernel Name", "?"), float(row["Metric Value"].replace(",", "")) * _NS_PER.get(row.get("Metric Unit", "ns"), 1.0)


def clocks(path):
    """[(median MHz, least, most)] per segment opened by a marker kernel: the SM clock of each
    of the segment's kernels (CLOCK_METRIC). A unit it does not know is refused, naming it."""
    segments = []
    for row in _metric_rows(path, CLOCK_METRIC):
        unit = row.get("Metric Unit", "").strip().lower()
        if unit not in _HZ_PER:
            raise SystemExit("ncu_sum.py: %s: unit %r of %s is not one of %s" % (path, unit, CLOCK_METRIC,
                                                                                ", ".join(sorted(_HZ_PER))))
        if MARKER in row.get("Kernel Name", ""):
            segments.append([])
        elif segments:
            segments[-1].append(float(row["Metric Value"].replace(",", "")) * _HZ_PER[unit] / 1e6)
    out = []
    for mhz in segments:
        mhz.sort()
        out.append((mhz[len(mhz) // 2], mhz[0], mhz[-1]) if mhz else (float("nan"),) * 3)
    return out


def summed(path):
    """(total ns, kernel launches, {kernel name: (launches, ns)}) of an ncu --csv file."""
    total_ns, kernels, by_name = 0.0, 0, {}
    for name, ns in rows(path):
        total_ns += ns
        kernels += 1
        n, t = by_name.get(name, (0, 0.0))
        by_name[name] = (n + 1, t + ns)
    return total_ns, kernels, by_name


def by_marker(path, calls):
    """[(per-call us, kernels)] per segment opened by a marker kernel."""
    segments = []
    for name, ns in rows(path):
        if MARKER in name:
            segments.append([0.0, 0])
        elif segments:
            segments[-1][0] += ns
            segments[-1][1] += 1
    return [(total / calls / 1e3, n) for total, n in segments]


def by_range(path, calls):
    """[(median call-range us, 1)] per shape: rows in groups of one marker range and CALLS calls."""
    durations = [ns for _, ns in rows(path)]
    if not durations or len(durations) % (calls + 1):
        raise SystemExit("ncu_sum.py: %d ranges in %s is not a whole number of shapes of 1 + %d" % (
            len(durations), path, calls))
    out = []
    for i in range(0, len(durations), calls + 1):
        group = sorted(durations[i + 1:i + 1 + calls])
        out.append((group[len(group) // 2] / 1e3, 1))
    return out


def by_padded_range(path, calls, report=None):
    """[(median of (pad + call) - pad us, 1, spread of those differences in percent of it)] per
    shape: rows in groups of CALLS pairs."""
    durations = [ns for _, ns in rows(path)]
    if not durations or len(durations) % (2 * calls):
        raise SystemExit("ncu_sum.py: %d ranges in %s is not a whole number of shapes of %d pairs" % (
            len(durations), path, calls))
    out = []
    for i in range(0, len(durations), 2 * calls):
        group = durations[i:i + 2 * calls]
        pads, padded = group[0::2], group[1::2]
        diffs = sorted(b - a for a, b in zip(pads, padded))
        median = diffs[len(diffs) // 2]
        spread = (diffs[-1] - diffs[0]) / median * 100 if median > 0 else float("inf")
        out.append((median / 1e3, 1, spread))
        if report:
            report("shape %d: pad alone %.1f-%.1f us (spread %.2f us) across %d ranges" % (
                i // (2 * calls), min(pads) / 1e3, max(pads) / 1e3, (max(pads) - min(pads)) / 1e3, calls))
    return out


def main():
    path, calls = sys.argv[1], int(sys.argv[2])
    if "--clocks" in sys.argv[3:]:
        for i, (med, lo, hi) in enumerate(clocks(path)):
            print("%d %.0f %.0f %.0f" % (i, med, lo, hi))
        return
    if "--padded-ranges" in sys.argv[3:]:
        for i, (us, n, spread) in enumerate(by_padded_range(path, calls, lambda line: print("ncu_sum.py: " + line,
                                                                                             file=sys.stderr))):
            print("%d %.3f %d %.2f" % (i, us, n, spread))
        return
    split = by_range if "--ranges" in sys.argv[3:] else by_marker if "--by-marker" in sys.argv[3:] else None
    figures = split(path, calls) if split else None
    if figures is not None:
        for i, (us, n) in enumerate(figures):
            print("%d %.3f %d" % (i, us, n))
        return
    total_ns, kernels, by_name = summed(path)
    print("%.3f %d" % (total_ns / calls / 1e3, kernels))
    if "--kernels" in sys.argv[3:]:
        for name, (n, t) in sorted(by_name.items(), key=lambda kv: -kv[1][1]):
            print("    %-90s %5.1f %9.1f" % (name[:90], n / calls, t / calls / 1e3))


if __name__ == "__main__":
    main()
