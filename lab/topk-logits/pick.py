#!/usr/bin/env python3
"""The lab's winner among top-k sources, from one run_rows.sh run (issue 21).

Reads ROWS/topk-logits.jsonl (catalog_helper.py lab: a correctness line per source, then events
at each graded shape) and ROWS/topk-logits-adversarial.jsonl (adversarial_gpu.py: wrong rows per
source). A source qualifies when it is correct at every correctness and graded shape, has no
wrong adversarial row and was timed at every graded shape the first source (the solution) was.
Prints one line per source (geomean of its events over the solution's) and, last, `winner SRC`:
the qualifying source with the lowest geomean, if it beats the solution; `winner none` otherwise.
Usage: python3 lab/topk-logits/pick.py ROWS_DIR [SRC ...]   (SRC: only these candidates)
"""
import json
import math
import os
import sys


def read(path):
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def pick(lab_lines, adversarial_lines, only=None):
    """(rows of (src, ratio or None, reason), winner or None). The first source seen is the reference."""
    order, correct, times = [], {}, {}
    for d in lab_lines:
        src = d.get("src")
        if src is None or d.get("baseline"):
            continue
        if src not in order:
            order.append(src)
        if "correct" in d:
            correct[src] = bool(d["correct"])
        if "events_us" in d:
            times.setdefault(src, {})[d["shape_index"]] = float(d["events_us"])
    wrong = {d["src"]: int(d.get("wrong", 1)) for d in adversarial_lines if "src" in d}
    if not order:
        return [], None
    ref = order[0]
    shapes = sorted(times.get(ref, {}))
    rows, best = [], None
    for src in order:
        t = times.get(src, {})
        reason = None
        if not correct.get(src, False):
            reason = "not correct"
        elif wrong.get(src, 1) != 0:
            reason = "adversarial rows wrong or not run"
        elif not shapes or any(s not in t for s in shapes):
            reason = "not timed at every graded shape"
        ratio = None
        if shapes and all(s in t for s in shapes):
            ratio = math.exp(sum(math.log(t[s] / times[ref][s]) for s in shapes) / len(shapes))
        rows.append((src, ratio, reason))
        if src != ref and reason is None and ratio < 1.0 and (only is None or src in only):
            if best is None or ratio < best[1]:
                best = (src, ratio)
    return rows, best[0] if best else None


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    rows_dir = argv[1]
    only = set(argv[2:]) or None
    rows, winner = pick(read(os.path.join(rows_dir, "topk-logits.jsonl")),
                        read(os.path.join(rows_dir, "topk-logits-adversarial.jsonl")), only)
    for src, ratio, reason in rows:
        print("%-70s %s %s" % (src, "%.4fx" % ratio if ratio else "   -   ", reason or "qualifies"))
    print("winner %s" % (winner or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
