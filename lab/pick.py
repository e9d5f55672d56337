#!/usr/bin/env python3
"""The lab's winner for one task, from `scripts/gpu/catalog_helper.py lab` output (issues 19-21).

Reads every given .jsonl (a correctness line per source, then the events at each graded shape;
several files when the bench ran the solution and the candidates in separate processes) and
compares each candidate with the solution, shape by shape. A candidate wins when it is correct at
every correctness and graded shape, was timed at every shape the solution was, and its geomean
over the solution's events is below 1 - MARGIN with no shape slower by more than MARGIN.
Prints a line per candidate, then `winner SRC` or `winner none` (exit 0 either way; 2 when the
solution itself was not timed, which names the files).

Usage: python3 lab/pick.py --solution SRC [--margin 0.01] FILE.jsonl ...
On the device a winner can then be copied over the solution's src/ in the device's own copy
of the tree and graded by fidelity.sh there (the bytes graded are the candidate's, which a
promotion commits unchanged).
"""
import argparse
import json
import math
import sys


def read(paths):
    correct, times = {}, {}
    for p in paths:
        try:
            lines = open(p).read().splitlines()
        except OSError:
            continue
        for line in lines:
            line = line.strip()
            if not line.startswith("{"):
                continue
            d = json.loads(line)
            src = d.get("src")
            if src is None or d.get("baseline"):
                continue
            src = src.rstrip("/")
            if "correct" in d:
                correct[src] = correct.get(src, True) and bool(d["correct"])
            if "events_us" in d and d.get("shape_index") is not None:
                times.setdefault(src, {})[int(d["shape_index"])] = float(d["events_us"])
    return correct, times


def pick(correct, times, solution, margin):
    solution = solution.rstrip("/")
    base = times.get(solution)
    if not base:
        return None, []
    lines, best = [], (None, 1.0)
    for src in sorted(set(correct) | set(times)):
        if src == solution:
            continue
        t = times.get(src, {})
        if not correct.get(src):
            lines.append("%s: not correct everywhere (or no correctness line)" % src)
            continue
        if set(base) - set(t):
            lines.append("%s: not timed at shapes %s" % (src, sorted(set(base) - set(t))))
            continue
        ratios = [t[i] / base[i] for i in sorted(base)]
        g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        ok = g < 1 - margin and max(ratios) <= 1 + margin
        lines.append("%s: geomean %.4f of the solution's, by shape %s%s" % (
            src, g, " ".join("%.4f" % r for r in ratios), "" if ok else " (does not win)"))
        if ok and g < best[1]:
            best = (src, g)
    return best[0], lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--solution", required=True)
    ap.add_argument("--margin", type=float, default=0.01)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    correct, times = read(a.files)
    if not times.get(a.solution.rstrip("/")):
        print("pick.py: the solution %s was not timed in %s" % (a.solution, ", ".join(a.files)), file=sys.stderr)
        print("winner none")
        return 2
    winner, lines = pick(correct, times, a.solution, a.margin)
    for line in lines:
        print(line)
    print("winner %s" % (winner or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
