#!/usr/bin/env python3
"""How far identical code strays from 1.0x in the judge's CPU A/B runs, run after run: the noise the
judge tests' band (0.8-1.25, judge/tests/test_ab.py) must hold.

Each run is one A/B judge run of the tests' softmax against itself (or, with --saboteur, the
containment tests' orphan saboteur against it) at the measure shape R x C, with the tests' options
(32 timed pairs unless --pairs). Prints per run the speed-up (medians' ratio), the per-pair ratios'
median and spread, the per-call spread and the median call; then the range of each. Run beside a
CPU hog (`yes > /dev/null &`) for a loaded machine's figures (docs/PERF.md, session 28).

  PYTHONPATH=judge python3 scripts/ab_noise_cpu.py [--runs 8] [--shape 256 1024] [--pairs 32] [--saboteur]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "judge"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--shape", type=int, nargs=2, default=(256, 1024), metavar=("R", "C"))
    ap.add_argument("--pairs", type=int, default=32)
    ap.add_argument("--saboteur", action="store_true", help="the orphan saboteur (CPU work) as the submission")
    a = ap.parse_args()
    from tests import helpers as h
    from tests import test_ab as t
    task = h.softmax_task()
    task["workloads"]["synthetic"]["measure"] = [list(a.shape)]
    opts = dict(t.AB_PAIRS_32, iterations=4 * a.pairs)
    seen = {"value": [], "ratio_median": []}
    for i in range(a.runs):
        sub = t.saboteur("orphan", "cpu") if a.saboteur else h.GOOD_SOFTMAX
        c = h.case0(t.judge_ab(sub, h.GOOD_SOFTMAX, opts, task_raw=task))
        s = c.get("speedup") or {}
        if c["status"] != "ok" or not s:
            print("run %d: %s: %s" % (i, c["status"], c.get("message")), flush=True)
            continue
        for k in seen:
            seen[k].append(s[k])
        print("run %d: speed-up %.3f, per-pair median %.3f (spread %.3f), per-call spread %.2f, median call %.1f us"
              % (i, s["value"], s["ratio_median"], s["spread"], c["spread"], c["metrics"]["time_us"]), flush=True)
    for k, v in seen.items():
        if v:
            print("%s: %.3f-%.3f over %d runs" % (k, min(v), max(v), len(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
