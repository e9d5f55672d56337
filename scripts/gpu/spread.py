"""Reads a traced grade's batches against the GPU clocks sampled beside it (issue 17).

usage: spread.py GRADE_ERR CLOCKS_CSV

GRADE_ERR is `kzoo grade -v` stderr of a grade run with `--judge-options '{"trace": true}'`:
each timed batch logs `kzoo-judge: trace: t=<unix> batch of N: child [...] us; judge X us/call
(est), wall W us/call, ...` when it ends. CLOCKS_CSV is nvidia-smi's
`--query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
[,temperature.memory] --format=csv,nounits -lms 5` (fidelity.sh CLOCKS=1). A batch spans [t - N*W, t]; for each batch
this prints its median child figure beside the SM clock, power and throttle reasons sampled in
that span (and how many of its calls the judge compared after it), then how far the batch
medians spread and how they go with the clock. Why: the
calls of one batch agree within ~1% while batches differ by up to 15% (docs/PERF.md); if the
SM clock moves with them, the spread is the device's and the judge reads it faithfully.
nvidia-smi's timestamps are local time: the device runs on UTC, and `--tz-hours` says otherwise.
"""
import argparse
import calendar
import re
import statistics
import sys
import time

TRACE = re.compile(r"trace: t=([0-9.]+) batch of (\d+): child \[([^\]]*)\] us; judge ([0-9.]+) us/call \(est\), "
                   r"wall ([0-9.]+) us/call")


CHECKS = re.compile(r"trace: t=[0-9.]+ checks: (\d+) of \d+ calls compared")


def batches(lines):
    """[(start_s, end_s, [child us...], judge_us, compared)] of every traced batch, in order;
    `compared` is how many of its calls the judge compared after it (its "checks" line, which
    follows the batch's own), None where the trace has no such line."""
    out = []
    for line in lines:
        m = CHECKS.search(line)
        if m and out and out[-1][4] is None:
            out[-1] = out[-1][:4] + (int(m.group(1)),)
            continue
        m = TRACE.search(line)
        if not m:
            continue
        end, n, wall_us = float(m.group(1)), int(m.group(2)), float(m.group(5))
        child = [float(x.strip().strip("'")) for x in m.group(3).split(",") if x.strip()]
        out.append((end - n * wall_us / 1e6, end, child, float(m.group(4)), None))
    return out


def clock_samples(lines, tz_hours=0.0):
    """[(unix_s, sm_mhz, mem_mhz, power_w, temp_c, reasons, hbm_temp_c or None)] from nvidia-smi's
    CSV; rows that do not parse (the header, a '[N/A]') are skipped. Why the HBM temperature: a
    hot stack refreshes twice as often, which slows a memory-bound kernel with no clock moving."""
    out = []
    for line in lines:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 6:
            continue
        try:
            stamp, frac = parts[0].split(".") if "." in parts[0] else (parts[0], "0")
            t = calendar.timegm(time.strptime(stamp, "%Y/%m/%d %H:%M:%S")) + float("0." + frac) - tz_hours * 3600
            hbm = float(parts[6]) if len(parts) > 6 and parts[6].replace(".", "", 1).isdigit() else None
            out.append((t, float(parts[1]), float(parts[2]), float(parts[3]), float(parts[4]), parts[5], hbm))
        except ValueError:
            continue
    return out


def pearson(xs, ys):
    if len(xs) < 3:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else None


def report(bs, samples):
    rows, meds, sms = [], [], []
    for start, end, child, judge_us, compared in bs:
        inside = [s for s in samples if start <= s[0] <= end]
        med = statistics.median(child) if child else float("nan")
        if inside:
            sm = statistics.fmean(s[1] for s in inside)
            hbm = [s[6] for s in inside if s[6] is not None]
            clock = "%6.0f %6.0f %6.0f %6.1f %4s %s" % (sm, min(s[1] for s in inside), statistics.fmean(s[2] for s in inside),
                                                        max(s[3] for s in inside), "%.0f" % max(hbm) if hbm else "-",
                                                        ",".join(sorted({s[5] for s in inside})))
            meds.append(med)
            sms.append(sm)
        else:
            clock = "(no clock sample in the batch)"
        spread = (max(child) / min(child) - 1) * 100 if child and min(child) > 0 else float("nan")
        rows.append("%14.3f %7.1f %3d %9.1f %6.2f%% %9.1f %3s | %s" % (
            end, (end - start) * 1e3, len(child), med, spread, judge_us, "-" if compared is None else compared, clock))
    head = "%14s %7s %3s %9s %7s %9s %3s | %s" % ("end (unix s)", "ms", "n", "median us", "within", "judge us", "cmp",
                                                   "sm_mean sm_min mem_mean power_max hbm_c reasons")
    lines = [head] + rows
    all_meds = [statistics.median(b[2]) for b in bs if b[2]]
    if all_meds:
        lines.append("batches: %d; medians %.1f..%.1f us (%.2f%% apart)" % (
            len(all_meds), min(all_meds), max(all_meds), (max(all_meds) / min(all_meds) - 1) * 100))
    r = pearson(sms, meds)
    if r is not None:
        lines.append("median against the mean SM clock: pearson r = %+.2f over %d batches; SM clock %.0f..%.0f MHz" % (
            r, len(sms), min(sms), max(sms)))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("grade_err")
    p.add_argument("clocks_csv")
    p.add_argument("--tz-hours", type=float, default=0.0, help="the device's UTC offset, hours")
    a = p.parse_args(argv)
    with open(a.grade_err, errors="replace") as f:
        bs = batches(f)
    with open(a.clocks_csv, errors="replace") as f:
        samples = clock_samples(f, a.tz_hours)
    if not bs:
        print("spread.py: %s has no traced batch (grade it with --judge-options '{\"trace\": true}')" % a.grade_err,
              file=sys.stderr)
        return 2
    print(report(bs, samples))
    return 0


if __name__ == "__main__":
    sys.exit(main())
