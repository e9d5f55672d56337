#!/usr/bin/env python3
"""fidelity.sh's table: each graded case's judge median against Nsight Compute's figure for the same
call, and, where fidelity.sh ran it, against the call's device span in a plain process.

Why the second reference: ncu's kernel replay sums each kernel's own duration, replayed alone. A
call of several kernels also costs what lies between and around them when they run in sequence:
the device's idle gaps and whatever runs slower back to back than alone. The judge times that whole
span (judge/kzoo_judge/spans.py), so of session 27's 21 cases off ncu by more than 1%, 16 were
calls of several kernels. kernel_span.py times the same span outside the judge -- one process, no
sandbox, no harness, the judge's flush, warm-up and launch pad -- so "judge against span" says
whether the judge adds anything to what the call costs, and "span against ncu" how far the call's
own sequence is from ncu's sum. The same records give the call's kernels' own durations summed
("sum us", copies and memsets left out as ncu leaves them): "sum against ncu" then tells the two
parts of that distance apart. Within 1%, the
kernels run as fast in sequence as alone and the device's idle gaps between them are the
difference; beyond it, the kernels themselves run slower back to back (a previous kernel's dirty
L2 lines, the clock) than under ncu's replay.

A third reference, where fidelity.sh ran it (NCU_PADDED): Nsight Compute's own figure for the call
whole ("range us"), app-range replay of each call behind the judge's launch pad, which lets its
launches queue, the pad alone subtracted (ncu_package.py PAD_US). It holds what the summed kernel times leave out,
measured by ncu rather than by the CUPTI records the judge also reads. For a call of several kernels
it is the figure the count line grades against ("ref": range) when it is steady: its pairs'
differences agree within RANGE_STEADY ("range ±", ncu_sum.py's spread), so that its own noise
cannot decide a 1% bound. A single kernel keeps ncu's kernel replay, the most exact figure there
is for it; an unsteady range (session 32's first pad, a spin of SM cycles, spread hundreds of
µs) is shown and not counted.

Reads LOGS (fidelity.sh's): grade_NAME.json (and grade_NAME_r2/_r3.json, the repeats),
ncu_NAME.txt (ncu_sum.py: "index us kernels" per graded shape), ncu_NAME_padded.txt (ncu_sum.py
--padded-ranges, the same lines), ncu_NAME.clock (ncu_sum.py
--clocks), spans.jsonl (kernel_span.py --json over the packages) and span_index.tsv (which
package each source folder is). Writes OUT/fidelity_table.txt and prints it.

  python3 scripts/gpu/fidelity_table.py LOGS OUT NCU_CALLS NCU_MODE
"""
import glob
import json
import os
import re
import sys

WITHIN = 1.0  # percent: issue 17's bound, a case's median against its reference
RANGE_STEADY = 1.0  # percent: the most a call's padded-range differences may spread to be its reference


def grade_medians(path):
    """(accepted or None, {case id: median us or None}) of one `kzoo grade --json` document."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):  # a grade that printed nothing
        return None, {}
    d = doc if "cases" in doc else (doc.get("document") or {})
    meds = {}
    for c in d.get("cases", []):
        m = re.match(r"median ([0-9.]+) us", c.get("message", ""))
        meds[c["test_case_id"]] = float(m.group(1)) if m else None
    # kzoo grade's own decision where it made one: an eager package is decided as the worker decides a
    # baseline (--baseline), which the judge's overall (its library gate) does not know.
    decision = (d.get("kzoo_grade") or {}).get("decision") or {}
    if "outcome" in decision:
        return decision["outcome"] == "accepted", meds
    return (d.get("overall") or {}).get("accept"), meds


def _lines(path):
    try:
        with open(path) as f:
            return [line.split() for line in f if line.strip()]
    except OSError:
        return []


def ncu_figures(path):
    """{shape index: (us a call, kernels over all profiled calls)} from ncu_sum.py's output."""
    return {int(i): (float(us), int(n)) for i, us, n in _lines(path)}


def padded_figures(path):
    """{shape index: (us a call, spread of its pairs in percent, or None)} from ncu_sum.py
    --padded-ranges; a line of a run before the spread was printed has None (never steady)."""
    return {int(p[0]): (float(p[1]), float(p[3]) if len(p) > 3 else None) for p in _lines(path) if len(p) >= 3}


def ncu_clocks(path):
    """{shape index: "median MHz (least-greatest)"} from ncu_sum.py --clocks."""
    return {int(i): "%s MHz (%s-%s)" % (med, lo, hi) for i, med, lo, hi in _lines(path)}


def spans(logs):
    """{package name: {shape index: {"span": median span us a call, "sum": median of the call's
    kernels' summed us (kernel_sum_us: no copies or memsets), or None}}} from kernel_span.py's run over the
    packages: LOGS/spans.jsonl (one line per package and graded shape, named by its source folder)
    and LOGS/span_index.tsv ("name<TAB>source folder" per package). A shape the probe could not
    time (an "error" line), or a line cut short, is left out."""
    by_src = {}
    for parts in _lines(os.path.join(logs, "span_index.tsv")):
        if len(parts) == 2:
            by_src[parts[1]] = parts[0]
    out = {}
    try:
        with open(os.path.join(logs, "spans.jsonl")) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                name = by_src.get(rec.get("src"))
                if name and "error" not in rec and isinstance(rec.get("span_us"), (int, float)):
                    total = rec.get("kernel_sum_us")
                    out.setdefault(name, {})[int(rec["shape_index"])] = {
                        "span": float(rec["span_us"]),
                        "sum": float(total) if isinstance(total, (int, float)) and total > 0 else None}
    except OSError:
        pass
    return out


def _case_order(case_id):
    tail = case_id.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def _pct(a, b):
    return (a / b - 1) * 100 if a and b else None


def table(logs, ncu_calls, ncu_mode):
    """The table's text, its last lines the counts."""
    rows, clock_rows, span_of = [], [], spans(logs)
    n = {"cases": 0, "within": 0, "rep": 0, "rep_ok": 0, "multi_off": 0, "span": 0, "span_ok": 0, "multi_off_span_ok": 0,
         "multi_off_sum": 0, "multi_off_sum_ok": 0, "range": 0, "range_ok": 0, "multi_off_range_ok": 0,
         "by_range": 0, "kernels_cases": 0, "kernels_within": 0}
    for g in sorted(glob.glob(os.path.join(logs, "grade_*.json"))):
        name = os.path.basename(g)[len("grade_"):-len(".json")]
        if re.search(r"_r[23]$", name):
            continue
        accepted, meds = grade_medians(g)
        ncu = ncu_figures(os.path.join(logs, "ncu_%s.txt" % name))
        clk = ncu_clocks(os.path.join(logs, "ncu_%s.clock" % name))
        whole = padded_figures(os.path.join(logs, "ncu_%s_padded.txt" % name))
        sp = span_of.get(name, {})
        reps = [grade_medians(os.path.join(logs, "grade_%s_r%d.json" % (name, k)))[1] for k in (2, 3)]
        for idx, (case, med) in enumerate(sorted(meds.items(), key=lambda kv: _case_order(kv[0]))):
            n_us, n_k = ncu.get(idx, (None, 0))
            diff = _pct(med, n_us)
            span_us = (sp.get(idx) or {}).get("span")
            sum_us = (sp.get(idx) or {}).get("sum")
            vs_span = _pct(med, span_us)
            sum_vs_ncu = _pct(sum_us, n_us)
            multi = ncu_mode != "range" and n_k > ncu_calls
            range_us, range_spread = whole.get(idx, (None, None))
            vs_range = _pct(med, range_us)
            if vs_range is not None:
                n["range"] += 1
                n["range_ok"] += abs(vs_range) <= WITHIN
            # The count's reference: a steady range for a call of several kernels, else the summed kernels.
            by_range = multi and vs_range is not None and range_spread is not None and range_spread <= RANGE_STEADY
            counted = vs_range if by_range else diff
            if counted is not None:
                n["cases"] += 1
                n["within"] += abs(counted) <= WITHIN
                n["by_range"] += by_range
            if diff is not None:
                n["kernels_cases"] += 1
                n["kernels_within"] += abs(diff) <= WITHIN
                off = abs(diff) > WITHIN and multi
                n["multi_off"] += off
                n["multi_off_span_ok"] += off and vs_span is not None and abs(vs_span) <= WITHIN
                n["multi_off_sum"] += off and sum_vs_ncu is not None
                n["multi_off_sum_ok"] += off and sum_vs_ncu is not None and abs(sum_vs_ncu) <= WITHIN
                n["multi_off_range_ok"] += off and vs_range is not None and abs(vs_range) <= WITHIN
            if vs_span is not None:
                n["span"] += 1
                n["span_ok"] += abs(vs_span) <= WITHIN
            if idx in clk:
                clock_rows.append("%-40s | %-12s | ncu's SM clock %s" % (name, case, clk[idx]))
            rep = ""
            vals = [med] + [r.get(case) for r in reps if r]
            if len(vals) == 3 and all(vals):
                spread = (max(vals) - min(vals)) / min(vals) * 100
                n["rep"] += 1
                n["rep_ok"] += spread <= WITHIN
                rep = "%.2f%%" % spread
            # kernels a call by ncu's kernel replay; a range (NCU_MODE=range) is the call whole
            per_call = "range" if ncu_mode == "range" else ("%g" % round(n_k / ncu_calls, 1) if n_k else "-")
            rows.append(_row(name, case, "%.1f" % n_us if n_us else "-", "%.1f" % med if med else "-",
                             "%+.2f%%" % diff if diff is not None else "-", per_call,
                             "%.1f" % span_us if span_us else "-", "%+.2f%%" % vs_span if vs_span is not None else "-",
                             "%.1f" % sum_us if sum_us else "-", "%+.2f%%" % sum_vs_ncu if sum_vs_ncu is not None else "-",
                             "%.1f" % range_us if range_us else "-", "%+.2f%%" % vs_range if vs_range is not None else "-",
                             "%.2f%%" % range_spread if range_us and range_spread is not None else "-",
                             "range" if by_range else ("kernels" if diff is not None else "-"),
                             rep, "accepted" if accepted else "NOT accepted"))
    head = _row("package", "case", "ncu us", "judge us", "diff", "kernels", "span us", "vs span", "sum us", "sum-ncu",
                "range us", "vs range", "range ±", "ref", "3 runs", "grade")
    tail = ["fidelity: %d of %d cases within 1%% of ncu; repeats: %d of %d cases agree within 1%%"
            % (n["within"], n["cases"], n["rep_ok"], n["rep"])]
    if n["by_range"]:
        tail.append("ncu's figure there (ref): the call whole (range us) for %d calls of several kernels whose padded "
                    "ranges agreed within %g%% (range ±), the summed kernels for the rest; against the summed kernels "
                    "alone: %d of %d cases within 1%%" % (n["by_range"], RANGE_STEADY, n["kernels_within"],
                                                          n["kernels_cases"]))
    if n["multi_off"]:
        tail.append("of the cases off by more than 1%%, %d are calls of several kernels: ncu's kernel replay sums their "
                    "own times and leaves out what lies between them in sequence (span us: kernel_span.py's)" % n["multi_off"])
    if n["span"]:
        tail.append("against the plain process's device span (kernel_span.py): %d of %d cases within 1%%; of the calls of "
                    "several kernels off ncu by more than 1%%, %d within 1%% of their span"
                    % (n["span_ok"], n["span"], n["multi_off_span_ok"]))
    if n["multi_off_sum"]:
        tail.append("of those %d with their kernels' own durations summed in sequence (sum us), %d are within 1%% of ncu "
                    "(the device's idle gaps between kernels are the difference); the rest run slower back to back "
                    "than under ncu's replay" % (n["multi_off_sum"], n["multi_off_sum_ok"]))
    if n["range"]:
        tail.append("against ncu's figure for the call whole (range us, behind the judge's pad): %d of %d cases within 1%%; of the "
                    "calls of several kernels off ncu's summed kernels by more than 1%%, %d within 1%% of it"
                    % (n["range_ok"], n["range"], n["multi_off_range_ok"]))
    return "\n".join([head, "-" * len(head)] + rows + tail + clock_rows)


def _row(*cols):
    return "%-40s | %-12s | %10s | %10s | %7s | %7s | %10s | %7s | %10s | %7s | %10s | %7s | %7s | %7s | %7s | %s" % cols


def main(argv):
    if len(argv) != 4:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    logs, out, ncu_calls, ncu_mode = argv[0], argv[1], int(argv[2]), argv[3]
    text = table(logs, ncu_calls, ncu_mode)
    with open(os.path.join(out, "fidelity_table.txt"), "w") as f:
        f.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
