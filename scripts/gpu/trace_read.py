#!/usr/bin/env python3
"""Read traced GPU grades call by call against Nsight Compute (docs/GPU.md, session 19).

    python3 scripts/gpu/trace_read.py DIR

DIR holds grades run with --judge-options '{"trace": true}' (`-v` stderr as grade_NAME.err or
g_NAME.err, fidelity.sh's and the one-off runs' names) and ncu sums (ncu_X.txt from ncu_sum.py
--by-marker), X the longest prefix of NAME that has one. Per grade and case, each against ncu's
summed kernel time: what the judge reported (the median of its per-call figures), the median of
the stream windows alone (start event to the call's stream end: the kernels, no tail), the figure
the judge's rule gives from the traced windows and the logged floors (timing.window_ns: it must
equal the reported one unless batches were flagged), how many batches were flagged, and the median
tail beside the median time the device sync itself blocked (the child logs it with the trace since
session 19: the `tail: "sync"` option's figure of the same calls), and the median harness of the
timed calls (the judge's clock per call less the call's stream window and tail: what the
cross-check's overhead must cover) beside the calibration's, the trivial batches' the overhead is
fitted on and each level's (calls that keep the device busy), and the child's split of each
call's host time (to the call's return, the drain, the copy, the copy's sync) timed against
calibration. Why: a
case off ncu is either its kernels (the stream windows), the tail charge, or the cross-check;
this says which without another device call.
"""
import glob
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "judge"))
from kzoo_judge import timing  # noqa: E402


def _floats(text, scale=1.0):
    return [float(x.strip(" '")) * scale for x in text.split(",") if x.strip(" '")]


def read_grade(path):
    """([floors per calibrated shape, as [(stream ns, tail ns)]], {case number: [(streams ns, tails
    ns, the child's figures us, flagged, the device sync's blocked ns per call where the child
    logged it)]}); a batch belongs to the case whose "case k/3" line follows it."""
    floors, cases, pending, batches, synced, busy = [], {}, None, [], [], None
    calibration = []  # [(level us, or 0 for the trivial batches; harness ns per call)]
    with open(path, errors="replace") as f:
        lines = f.readlines()
    for line in lines:
        if "window tail floors" in line:
            body = line.split("least tail, us):", 1)[1]
            floors.append([(float(p.split(":")[0].split()[0]) * 1e3, float(p.split(":")[1]) * 1e3)
                           for p in body.split(",") if ":" in p])
        m = re.search(r"kzoo-child: trace: host enqueue .*; sync \[(.*?)\] us", line)
        if m:
            synced += [float(x.strip(" '")) * 1e3 for x in m.group(1).split(",") if x.strip(" '-")]
        m = re.search(r"kzoo-child: trace: device records: busy \[(.*?)\] us", line)
        if m:
            # each call's busy time within its span (spans.per_call_detail), logged as the batch's
            # spans were read, before the judge's line of the same batch
            busy = [x for x in _floats(m.group(1), 1e3) if x > 0]
        m = re.search(r"trace: stream \[(.*?)\] us; tails \[(.*?)\] us(?:; spans \[(.*?)\] us)?", line)
        if m:
            # spans: the device's records of each call (docs/JUDGE.md, "The device span"), -1.0 where
            # they could not say; absent before session 25 and with figure "window"
            spans = [int(round(x)) for x in _floats(m.group(3), 1e3)] if m.group(3) is not None else None
            pending = (_floats(m.group(1), 1e3), _floats(m.group(2), 1e3), synced, spans, busy or [])
            synced, busy = [], None
        m = re.search(r"trace: calibration, (?:trivial batch of \d+|level (\d+) us): harness ([-\d.]+) us/call", line)
        if m:
            calibration.append((int(m.group(1) or 0), float(m.group(2)) * 1e3))
        m = re.search(r"batch of \d+: child \[(.*?)\] us; .*wall ([\d.]+) us/call.*flagged (\w+)", line)
        if m and pending:
            calls = [s + t for s, t in zip(*pending[:2])]
            harness = float(m.group(2)) * 1e3 - sum(calls) / max(len(calls), 1)
            batches.append(pending[:2] + (_floats(m.group(1)), m.group(3) == "True", pending[2], harness, pending[3], pending[4]))
            pending = None
        m = re.search(r"case (\d+)/\d+ ", line)
        if m:
            cases[int(m.group(1)) - 1] = batches
            batches = []
    return floors, cases, calibration


def calibration_harness(grade_err):
    """[(level us, 0 for the trivial batches; the median harness us per call)] of a traced grade's
    calibration, in level order."""
    by = {}
    for lv, h in read_grade(grade_err)[2]:
        by.setdefault(lv, []).append(h)
    return [(lv, statistics.median(v) / 1e3) for lv, v in sorted(by.items())]


PHASES = ("to return", "drain", "copy", "its sync")


def host_phases(grade_err):
    """{"timed" | "calibration": [median us of each logged phase of a call's host time, in
    PHASES order]} of a traced grade: the child's own split of the judge's clock per call (three
    phases before session 20's fourth, the copy's sync apart)."""
    calls = {"timed": [], "calibration": []}
    with open(grade_err, errors="replace") as f:
        for line in f:
            if "kzoo-child: trace:" not in line or "host to return" not in line:
                continue
            kind = "calibration" if "trace: calibration call," in line else "timed"
            body = line.split("host to return", 1)[1]
            calls[kind] += [[float(x) for x in re.findall(r"'([-\d.]+)'", c)] for c in re.findall(r"\[('[^\[\]]*')\]", body)]
    out = {}
    for kind, rows in calls.items():
        width = min((len(r) for r in rows), default=0)
        if width:
            out[kind] = [statistics.median(r[k] for r in rows) for k in range(width)]
    return out


def read_ncu(path):
    with open(path) as f:
        return {int(line.split()[0]): float(line.split()[1]) for line in f if line.strip()}


def case_figures(grade_err, ncu):
    """[{case, judge, stream, span and busy (None before spans), rule (each % off ncu), flagged, batches}] of one traced grade's
    stderr against its ncu sums ({shape index: us})."""
    floors, cases, _ = read_grade(grade_err)
    out = []
    for c, batches in sorted(cases.items()):
        if c not in ncu or not batches:
            continue
        tf = timing.TailFloors()
        tf.levels = sorted(floors[min(c, len(floors) - 1)]) if floors else []
        # the judge's rule, recomputed from the trace: the spans' where the batch was timed by them
        rule = [x for s, t, _, _, _, _, sp, _ in batches
                for x in (timing.span_figures(sp, s, t) if sp is not None else timing.window_ns(s, t, tf if tf.levels else None))]
        stream = [x for s, *_ in batches for x in s]
        spans = [x for *_, sp, _ in batches if sp is not None for x in sp if x > 0]
        busy = [x for *_, b in batches for x in b]
        reported = [x * 1e3 for _, _, child, *_ in batches for x in child]
        tails = [x for _, t, *_ in batches for x in t]
        synced = [x for _, _, _, _, sy, _, _, _ in batches for x in sy]
        off = lambda v: (statistics.median(v) / 1e3 / ncu[c] - 1) * 100  # noqa: E731
        out.append({"case": c, "judge": off(reported), "stream": off(stream), "rule": off(rule),
                    "span": off(spans) if spans else None, "busy": off(busy) if busy else None,
                    "flagged": sum(f for _, _, _, f, *_ in batches), "batches": len(batches),
                    "harness_us": statistics.median(h for *_, h, _, _ in batches) / 1e3,
                    "tail_us": statistics.median(tails) / 1e3,
                    "sync_us": statistics.median(synced) / 1e3 if synced else None})
    return out


def main(folder):
    ncus = {os.path.basename(p)[4:-4]: read_ncu(p) for p in glob.glob(os.path.join(folder, "ncu_*.txt"))}
    for path in sorted(glob.glob(os.path.join(folder, "g*_*.err"))):
        name = re.sub(r"^(grade|g)_", "", os.path.basename(path)[:-4])
        owners = [k for k in ncus if name.startswith(k)]
        if not owners:
            continue
        rows = case_figures(path, ncus[max(owners, key=len)])
        print(" | ".join(["%-44s" % name] + ["case %d: judge %+.2f%%, stream %+.2f%%, %srule %+.2f%%, flagged %d/%d, "
                                               "tail %.0f us, sync %s us, harness %.0f us"
                                               % (r["case"], r["judge"], r["stream"],
                                                  ("" if r["span"] is None else "span %+.2f%%, " % r["span"])
                                                  + ("" if r["busy"] is None else "busy %+.2f%%, " % r["busy"]),
                                                  r["rule"], r["flagged"], r["batches"],
                                                  r["tail_us"], "-" if r["sync_us"] is None else "%.1f" % r["sync_us"],
                                                  r["harness_us"])
                                               for r in rows]))
        ph = host_phases(path)
        if ph:
            # Where the judge's clock goes per call, timed against calibration: an honest call's
            # harness over the overhead's shows here as the phase that grew.
            print("%-44s | host phases us/call, timed | calibration: %s" % (name, ", ".join(
                "%s %s | %s" % (PHASES[k], "%.0f" % ph["timed"][k] if "timed" in ph and k < len(ph["timed"]) else "-",
                                "%.0f" % ph["calibration"][k] if "calibration" in ph and k < len(ph["calibration"]) else "-")
                for k in range(max(len(v) for v in ph.values())))))
        cal = calibration_harness(path)
        if cal:
            # Beside the timed calls' harness: what the cross-check's overhead was fitted on
            # (the trivial batches) and what calls that keep the device busy and get inputs cost.
            print("%-44s | calibration harness us/call: %s" % (name, ", ".join(
                "%s %.0f" % ("trivial" if lv == 0 else "%d us" % lv, h) for lv, h in cal)))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
