#!/usr/bin/env python3
"""The catalog's H200 table (docs/CATALOG.md) from the parts of scripts/gpu/catalog_bench.sh.

  catalog_table.py table FOLDER [FOLDER ...] [--write DOC] [--ceilings CEILING_JSONL]
      FOLDER holds the parts' files of one run (eager.jsonl, compile.jsonl, solutions.jsonl, ncu.jsonl;
      calibrate.jsonl is not needed); several folders are read in order, a later file's records
      replacing an earlier one's. Prints one markdown table: per task and graded shape the eager
      package, torch.compile of the reference and the solution (Nsight Compute and the judge), % of the
      roofline, the target and whether the solution meets it; then the geometric means of the solution's
      speed-up over eager and over torch.compile. Files of different commits make one table of the newest
      commit's code only where nothing they measured changed since (read_run): one table, one code. --write DOC replaces the text between DOC's "<!-- catalog_table begin -->" and
      "<!-- catalog_table end -->" lines with it. --ceilings (scripts/gpu/ceiling.py's --json lines, the
      fastest any probe kernel moves each task's bytes on the GPU; FOLDER/ceiling.jsonl, catalog_bench.sh's
      PART=ceiling, when not given) marks the targets beyond them.
  catalog_table.py summary PART.jsonl
      A few lines on what one part measured (catalog_bench.sh prints them at its end).
  catalog_table.py fidelity-parts LOGS OUT [--ncu-calls N] --commit C --gpu G --torch T
      The table's parts from a scripts/gpu/fidelity.sh run (its LOGS folder: grade_KIND_TASK.json, and
      ncu_solution_TASK.txt by ncu_sum.py --by-marker): OUT/eager.jsonl, OUT/solutions.jsonl and OUT/ncu.jsonl
      for the kinds it graded. fidelity.sh grades every graded shape at the judge's defaults and runs ncu on
      the same calls, so its run stands in for the eager, solutions and ncu parts; compile stays a part.
  catalog_table.py grade-records KIND TASK GRADE_JSON | tag-records KIND < JSON_LINES |
                   ncu-record TASK SHAPE NCU_CSV CALLS | tolerance-record TASK TASK_JSON CALIBRATE_JSON FASTMATH_JSON
      The parts' lines, one JSON object each (catalog_bench.sh writes them as it measures).

Standard library only: it runs where the figures are read, not only on the GPU machine.
"""
import argparse
import json
import math
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PARTS = ("eager", "compile", "solutions", "ncu")
BEGIN, END = "<!-- catalog_table begin -->", "<!-- catalog_table end -->"
# The target (docs/CATALOG.md): 80 % of the roofline, or 5 % faster than torch.compile, whichever is the
# slower time; a T4 task's target is the vendor library's time.
ROOFLINE_SHARE = 0.8
COMPILE_MARGIN = 1.05


class TableError(Exception):
    pass


def _read(path):
    with open(path) as f:
        return f.read()


# ---- reading what the parts wrote ------------------------------------------------------------------------

def last_json(text):
    """The last top-level JSON object in `text` (a grade's stdout may carry log lines before it)."""
    for start in [m.start() for m in re.finditer(r"^\{", text, re.M)][::-1]:
        try:
            return json.loads(text[start:])
        except ValueError:
            continue
    return None


def grade_records(kind, task, text):
    """One record per graded case of a `kzoo grade --json` document."""
    d = last_json(text)
    if d is None:
        return [{"kind": kind, "task": task, "error": "no grade document (the grade was cut or did not start)"}]
    if not d.get("cases"):
        why = (d.get("overall") or {}).get("accept_reason") or d.get("reason") or d.get("status") or "no cases"
        return [{"kind": kind, "task": task, "error": str(why)[:200]}]
    out = []
    for c in d["cases"]:
        cid = str(c.get("test_case_id", "?"))
        tail = cid.rsplit("-", 1)[-1]
        r = {"kind": kind, "task": task, "case": cid, "shape_index": int(tail) if tail.isdigit() else None,
             "status": c.get("status"), "correct": bool(c.get("correct"))}
        m = re.search(r"median ([0-9.]+) us", c.get("message") or "")
        if r["status"] == "ok" and r["correct"] and m:
            r["judge_us"] = float(m.group(1))
        else:
            r["error"] = ("%s: %s" % (r["status"], c.get("message") or ""))[:200]
        out.append(r)
    return out


def ncu_record(task, shape, csv_path, calls):
    sys.path.insert(0, HERE)
    from ncu_sum import summed
    r = {"kind": "ncu", "task": task, "shape_index": int(shape)}
    try:
        total_ns, kernels, by_name = summed(csv_path)
    except (OSError, ValueError, KeyError) as e:
        r["error"] = "%s: %s" % (csv_path, e)
        return r
    if kernels == 0:
        r["error"] = "%s: no gpu__time_duration.sum rows (did the run reach cudaProfilerStart?)" % csv_path
        return r
    r.update(ncu_us=total_ns / calls / 1e3, kernels_per_call=kernels / calls,
             top_kernels=[[n[:120], t / calls / 1e3] for n, (_, t) in sorted(by_name.items(), key=lambda kv: -kv[1][1])[:3]])
    return r


def marker_ncu_records(task, text, calls=1):
    """ncu records of `ncu_sum.py --by-marker` output: "INDEX US KERNELS" per graded shape, INDEX the shape's,
    US per call, KERNELS over all `calls` calls."""
    out = []
    for line in text.splitlines():
        f = line.split()
        if len(f) != 3 or not f[0].isdigit():
            continue
        r = {"kind": "ncu", "task": task, "shape_index": int(f[0])}
        if int(f[2]) == 0:
            r["error"] = "ncu saw no kernel of this shape (did the run reach cudaProfilerStart?)"
        else:
            r.update(ncu_us=float(f[1]), kernels_per_call=int(f[2]) / calls)
        out.append(r)
    return out or [{"kind": "ncu", "task": task, "error": "no ncu figures (ncu did not run, or was cut)"}]


# fidelity.sh's package kinds, and the part each one's grades stand in for
FIDELITY_KINDS = {"eager": "eager", "solution": "solutions"}


def fidelity_parts(logs, run, ncu_calls=5):
    """{part: [records]} of a fidelity.sh LOGS folder; `run` is the run line's dict (commit, gpu, torch)."""
    parts = {}
    for name in sorted(os.listdir(logs)):
        m = re.match(r"grade_(eager|solution)_(.+)\.json$", name)
        if not m or re.search(r"_r[23]$", m.group(2)):  # the repeats are the spread, not the table's figure
            continue
        kind, task = m.groups()
        parts.setdefault(FIDELITY_KINDS[kind], []).extend(grade_records(kind, task, _read(os.path.join(logs, name))))
        if kind == "solution":
            try:
                text = _read(os.path.join(logs, "ncu_solution_%s.txt" % task))
            except OSError:
                text = ""
            parts.setdefault("ncu", []).extend(marker_ncu_records(task, text, ncu_calls))
    return {p: [dict(run, part=p, source="fidelity.sh")] + recs for p, recs in parts.items()}


def tolerance_record(task, task_json, cal_json, fast_json):
    """Is the task's tolerance admissible on this device (2E < value < D/10, with E the worst of the GPU
    calibration's floor and the fast-math variants), and if not, what value is (the geometric middle)?"""
    def load(path):
        try:
            return last_json(_read(path)) or {}
        except OSError:
            return {}
    tol = json.loads(_read(task_json))["grading"]["tolerance"]
    cal, fm = load(cal_json), load(fast_json)
    r = {"kind": "calibrate", "task": task, "comparator": tol["comparator"], "value": tol["value"],
         "row_pass": tol.get("row_pass"), "gpu_E": cal.get("measured_floor_E"), "gpu_D": cal.get("measured_drop_D"),
         "basis": cal.get("basis"), "fastmath_solution": fm.get("solution"), "fastmath_reference": fm.get("fast_reference"),
         "errors": [x for x in (fm.get("error"), cal.get("error")) if x]}
    if tol["comparator"] == "exact":
        r["admissible"] = (fm.get("solution") in (0, 0.0)) if fm else None
        r["proposed"] = tol["value"]
    elif r["gpu_E"] is not None and r["gpu_D"] is not None:
        floor = max(v for v in (r["gpu_E"], r["fastmath_solution"], r["fastmath_reference"]) if v is not None)
        lo, hi = 2 * floor, r["gpu_D"] / 10
        r["admissible"] = lo < tol["value"] < hi
        if r["admissible"]:
            r["proposed"] = tol["value"]
        elif lo < hi:
            r["proposed"] = float("%.1g" % math.sqrt(max(lo, 1e-12) * hi))
        else:
            r["proposed"] = None
            r["errors"].append("no tolerance separates 2E = %.3g and D/10 = %.3g" % (lo, hi))
    return r


def json_lines(path, what):
    """(line number, object) of each non-blank line of a JSON-lines file; `what` names the file's writer
    in the error a malformed line gets."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield n, json.loads(line)
            except ValueError as e:
                raise TableError("%s:%d: not a JSON line (%s); %s" % (path, n, e, what))


def read_part(path):
    """(run header, records) of a part's .jsonl."""
    run, recs = None, []
    for _, d in json_lines(path, "each line of a part's file is one JSON object"):
        if "run" in d:
            run = d["run"]
        else:
            recs.append(d)
    if run is None:
        raise TableError("%s: no `run` line (commit, GPU, torch): was it written by catalog_bench.sh? "
                         "Its first line must be {\"run\": {\"commit\": ...}}" % path)
    return run, recs


# What may change between two parts of one table: the measuring scripts, their notes, the lab's
# candidates (never built or graded by kzoo) and the CPU tests. Nothing the table measures (the kzoo
# binary, the judge, the catalog's packages and tasks) lives here.
MEASURING_PATHS = ("scripts/gpu/", "docs/", "lab/", "tests/")


def _git(repo, *args):
    import subprocess
    try:
        out = subprocess.run(["git", "-C", repo] + list(args), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return None, str(e)
    return (out.stdout if out.returncode == 0 else None), out.stderr.strip()[:200]


def changed_paths(older, newer, repo=ROOT):
    """(the paths outside MEASURING_PATHS that differ between two commits, None) or (None, why not)."""
    out, err = _git(repo, "diff", "--name-only", older.split()[0], newer.split()[0], "--")
    if out is None:
        return None, "git could not compare %s and %s%s" % (older, newer, (": " + err) if err else "")
    return [f for f in out.split() if not f.startswith(MEASURING_PATHS)], None


def newest_commit(commits, repo=ROOT):
    """(the commit every other one is an ancestor of, None) or (None, why there is none)."""
    for c in commits:
        if all(o == c or _git(repo, "merge-base", "--is-ancestor", o.split()[0], c.split()[0])[0] is not None
               for o in commits):
            return c, None
    return None, "the commits %s are not on one line of history" % ", ".join(c[:12] for c in commits)


# Which parts a package's source feeds: the eager packages are graded in the eager part, the GPU
# solutions in the solutions and ncu parts, the CPU solutions in none of the GPU table's.
PACKAGE_PARTS = (("catalog/kernel_data/", {"eager"}), ("catalog/solutions/gpu/", {"solutions", "ncu"}),
                 ("catalog/solutions/cpu/", set()))


def _task_of_package(path, repo):
    """The task a catalog package's file belongs to (its desc.yaml's `ref:`), or None."""
    d = os.path.dirname(path)
    while d.startswith("catalog/"):
        desc = os.path.join(repo, d, ".kernel_package", "desc.yaml")
        if os.path.exists(desc):
            m = re.search(r"^\s+ref:\s*(\S+)\s*$", _read(desc), re.M)
            return m.group(1) if m else None
        d = os.path.dirname(d)
    return None


def stale_scope(paths, repo=ROOT):
    """What a change of `paths` invalidates: ({task: parts}, None), or (None, a path that touches every task:
    the judge, kzoo's sources, anything not one task's or one package's)."""
    scope = {}
    for f in paths:
        m = re.match(r"catalog/tasks/([^/]+)/", f)
        if m:
            scope.setdefault(m.group(1), set()).update(PARTS)
            continue
        for prefix, parts in PACKAGE_PARTS:
            if f.startswith(prefix):
                task = _task_of_package(f, repo)
                if task is None:
                    return None, f
                scope.setdefault(task, set()).update(parts)
                break
        else:
            return None, f
    return scope, None


def part_files(folder, part):
    """A part's files in a run folder: PART.jsonl, then PART.N.jsonl (a later call that finished the part:
    catalog_bench.sh names what its deadline skipped), in that order."""
    names = [n for n in os.listdir(folder) if re.fullmatch(r"%s(\.\d+)?\.jsonl" % re.escape(part), n)]
    return [os.path.join(folder, n) for n in sorted(names, key=lambda n: int((n.split(".")[1:-1] or ["0"])[0]))]


def read_run(folders, repo=ROOT):
    """(the run header, {part: records}) of one table. `folders` (one, or several read in order) hold the
    parts' files; a part may come in several files, and a later file's record of a task and shape replaces
    an earlier one's. Files of different commits make one table of the newest commit's code: a file of an
    older commit is taken when what changed since touches only the measuring scripts and docs, or only
    some tasks' sources -- then its records of those tasks, in the parts those sources feed, are dropped
    (named under the table) and a later file must measure them again. A change to anything every task
    runs on (the judge, kzoo) refuses the older file."""
    if isinstance(folders, str):
        folders = [folders]
    files = []
    for folder in folders:
        for p in PARTS:
            for path in part_files(folder, p):
                run, recs = read_part(path)
                files.append((p, path, run, recs))
    if not files:
        raise TableError("%s: none of %s; copy the parts' $OUT files of one run here"
                         % (", ".join(folders), ", ".join(p + ".jsonl" for p in PARTS)))
    commits = sorted({r.get("commit") or "?" for _, _, r, _ in files})
    dirty = [c for c in commits if "dirty" in c]
    if dirty:
        raise TableError("%s: the parts come from different commits or a dirty bundle (%s: a bundle built from uncommitted "
                         "code, which no commit names); measure the parts on committed code" % (", ".join(folders), dirty[0]))
    newest, dropped, scopes = commits[0], [], {}
    if len(commits) > 1:
        newest, why = newest_commit(commits, repo)
        scopes = {}
        for c in commits:
            if why is None and c != newest:
                paths, why = changed_paths(c, newest, repo)
                if why is None:
                    scopes[c], path = stale_scope(paths, repo)
                    if path is not None:
                        why = "%s and %s differ in %s" % (c[:12], newest[:12], path)
        if why:
            raise TableError("%s: the parts come from different commits (%s): one table is one run of the same code (%s); "
                             "measure the missing parts on the same commit"
                             % (", ".join(folders), ", ".join("%s %s" % (os.path.basename(f)[:-len(".jsonl")], r.get("commit"))
                                                              for _, f, r, _ in files), why))
    parts, used = {}, {}
    key = lambda r: (r.get("kind"), r.get("task"), r.get("shape_index"))  # noqa: E731
    for p, path, run, recs in files:
        c = run.get("commit") or "?"
        scope = scopes.get(c, {})
        keep = [r for r in recs if p not in scope.get(r.get("task"), ())]
        dropped += [(p, r.get("task"), r.get("shape_index"), c) for r in recs if p in scope.get(r.get("task"), ())]
        again = {key(r) for r in keep}
        parts[p] = [r for r in parts.get(p, []) if key(r) not in again] + keep
        used.setdefault(c, set()).add(os.path.basename(path)[:-len(".jsonl")])
    # a record dropped from an older file but measured again by a later one is not missing
    have = {(p, r.get("task"), r.get("shape_index")) for p, rs in parts.items() for r in rs}
    stale = ["%s %s shape %s (measured at %s; its sources changed since)" % (p, t, sh, c[:12])
             for p, t, sh, c in dropped if (p, t, sh) not in have]
    first = dict(files[0][2])
    if len(commits) > 1:
        first["commit"] = "; ".join("%s (%s)" % (c[:12], ", ".join(sorted(used[c]))) for c in commits) + \
            ", the same measured code (%s's)" % newest[:12]
    return dict(first, parts=sorted(parts), stale=stale), parts


def read_ceilings(path):
    """{(task, shape index): ceiling us} and where they were measured, from scripts/gpu/ceiling.py's
    --json lines: the fastest any probe kernel moved the task's bytes on that GPU. They are the
    machine's figures, not the packages', so they may come from another commit than the parts."""
    out, where = {}, set()
    for n, d in json_lines(path, "the file is ceiling.py's --json output"):
        if d.get("error") or d.get("ceiling_us") is None:
            continue  # a task the probe could not measure, or a run line: its rows get no ceiling
        if not isinstance(d.get("task"), str) or not isinstance(d.get("shape_index"), int):
            raise TableError("%s:%d: a ceiling needs `task` and `shape_index` (ceiling.py writes both)" % (path, n))
        out[(d["task"], d["shape_index"])] = float(d["ceiling_us"])
        where.add("%s, torch %s" % (d.get("device", "?"), d.get("torch", "?")))
    if not out:
        raise TableError("%s: no ceiling in it; run `python3 scripts/gpu/ceiling.py --json FILE catalog/tasks/...` "
                         "on the GPU" % path)
    return out, "; ".join(sorted(where))


# ---- the table --------------------------------------------------------------------------------------------

def tier_of(task):
    try:
        return json.loads(_read(os.path.join(ROOT, "catalog", "tasks", task, "task.json")))["difficulty"]["tier"]
    except (OSError, KeyError, ValueError):
        return "?"


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def rows_of(parts, tiers=None, ceilings=None):
    """One dict per (task, graded shape) with every figure the table shows, in the order tasks first appear.
    ceilings ({(task, shape): us}, read_ceilings) mark the targets no kernel can meet on that GPU."""
    order, rows = [], {}

    def row(task, shape):
        key = (task, 0 if shape is None else shape)
        if key not in rows:
            order.append(key)
            rows[key] = {"task": task, "shape": key[1], "notes": []}
        return rows[key]

    for kind in ("solutions", "ncu", "eager", "compile"):
        for r in parts.get(kind, []):
            x = row(r["task"], r.get("shape_index"))
            if r.get("error"):
                x["notes"].append("%s: %s" % (kind, r["error"]))
            if kind == "eager":
                x["eager_judge_us"] = r.get("judge_us", x.get("eager_judge_us"))
                x["eager_events_us"] = r.get("events_us", x.get("eager_events_us"))
            elif kind == "solutions":
                x["sol_judge_us"] = r.get("judge_us", x.get("sol_judge_us"))
            elif kind == "ncu":
                x["sol_ncu_us"] = r.get("ncu_us")
            else:
                for k in ("compile_us", "roofline_us", "vendor_us", "reference_us"):
                    if r.get(k) is not None:
                        x[k] = r[k]
    out = []
    for key in order:
        x = rows[key]
        x["tier"] = (tiers or {}).get(x["task"]) or tier_of(x["task"])
        x["eager_us"] = x.get("eager_judge_us") or x.get("eager_events_us")
        x["eager_from_events"] = x.get("eager_judge_us") is None and x.get("eager_events_us") is not None
        # Nsight Compute is the ground truth for the solution; the judge's figure stands in where ncu did not run.
        x["sol_us"] = x.get("sol_ncu_us") or x.get("sol_judge_us")
        x["sol_from_judge"] = x.get("sol_ncu_us") is None and x.get("sol_judge_us") is not None
        roof, comp, vend = x.get("roofline_us"), x.get("compile_us"), x.get("vendor_us")
        if x["tier"] == "T4":
            x["target_us"], x["target_basis"] = vend, "vendor"
        else:
            cands = [v for v in ((roof / ROOFLINE_SHARE) if roof else None, (comp / COMPILE_MARGIN) if comp else None) if v]
            # Without torch.compile's time the target is the roofline's alone, which may be the looser
            # bound: the table says so rather than show it as the whole target.
            x["target_us"], x["target_basis"] = (min(cands) if cands else None), ("" if comp else "roofline only")
        x["met"] = None if not (x["sol_us"] and x["target_us"]) else x["sol_us"] <= x["target_us"]
        x["ceiling_us"] = (ceilings or {}).get(key)
        x["beyond_ceiling"] = bool(x["ceiling_us"] and x["target_us"] and x["target_us"] < x["ceiling_us"])
        x["roofline_pct"] = 100.0 * roof / x["sol_us"] if (roof and x["sol_us"]) else None
        s, j = x.get("sol_ncu_us"), x.get("sol_judge_us")
        x["judge_vs_ncu_pct"] = 100.0 * (j - s) / s if (s and j) else None
        out.append(x)
    return out


def _us(v):
    return "-" if v is None else ("%.0f" % v if v >= 1000 else "%.1f" % v)


def render(run, rows, note=None, ceilings_from=None):
    hdr = ["task", "shape", "eager µs", "torch.compile µs", "solution, ncu µs", "solution, judge µs",
           "judge vs ncu", "% roofline", "target µs", "met"]
    lines = ["| " + " | ".join(hdr) + " |", "|" + "---|" * len(hdr)]
    for x in rows:
        tgt = _us(x["target_us"])
        if x["target_us"] is not None and x["target_basis"] == "vendor":
            tgt = "cuBLAS " + tgt
        elif x["target_us"] is not None and x["target_basis"]:
            tgt += " (%s)" % x["target_basis"]
        if x.get("beyond_ceiling"):
            tgt += " (beyond the ceiling, %s)" % _us(x["ceiling_us"])
        lines.append("| " + " | ".join([
            "%s (%s)" % (x["task"], x["tier"]), str(x["shape"]),
            _us(x["eager_us"]) + (" (events)" if x["eager_from_events"] else ""),
            _us(x.get("compile_us")),
            _us(x.get("sol_ncu_us")),
            _us(x.get("sol_judge_us")),
            "-" if x["judge_vs_ncu_pct"] is None else "%+.1f%%" % x["judge_vs_ncu_pct"],
            "-" if x["roofline_pct"] is None else "%.0f%%" % x["roofline_pct"],
            tgt,
            {True: "yes", False: "no", None: "?"}[x["met"]],
        ]) + " |")
    over_eager = geomean([x["eager_us"] / x["sol_us"] for x in rows if x["eager_us"] and x["sol_us"]])
    over_compile = geomean([x["compile_us"] / x["sol_us"] for x in rows if x.get("compile_us") and x["sol_us"]])
    n_eager = sum(1 for x in rows if x["eager_us"] and x["sol_us"])
    n_compile = sum(1 for x in rows if x.get("compile_us") and x["sol_us"])
    met = [x["met"] for x in rows if x["met"] is not None]
    head = ["Run: commit %s, %s, %s; parts %s. Generated by `scripts/gpu/catalog_table.py table`."
            % (run.get("commit", "?"), run.get("gpu", "?"), run.get("torch", "?"), ", ".join(run.get("parts", [])))]
    if note or run.get("note"):
        head.append("**%s**" % (note or run.get("note")))
    tail = ["",
            "Geometric mean of the solutions' speed-up: over eager %s (%d rows), over torch.compile %s (%d rows). "
            "Targets met: %d of %d." % ("-" if over_eager is None else "%.2fx" % over_eager, n_eager,
                                        "-" if over_compile is None else "%.2fx" % over_compile, n_compile,
                                        sum(met), len(met))]
    beyond = [x for x in rows if x.get("beyond_ceiling")]
    if ceilings_from:
        tail += ["", "Ceilings: the fastest any probe kernel moved each task's bytes (`scripts/gpu/ceiling.py`, %s). "
                 "%d of %d targets lie beyond them: no kernel meets those on this GPU; the ceiling is the reachable bar."
                 % (ceilings_from, len(beyond), sum(1 for x in rows if x["target_us"]))]
    if run.get("stale"):
        tail += ["", "Measured at an older commit and dropped (the task's sources changed since; measure them again):"] + \
            ["- " + d for d in run["stale"]]
    notes = [(x["task"], x["shape"], n) for x in rows for n in x["notes"]]
    if notes:
        tail += ["", "Not measured:"] + ["- %s shape %s: %s" % n for n in notes]
    return "\n".join(head + [""] + lines + tail) + "\n", {"over_eager": over_eager, "over_compile": over_compile,
                                                          "met": sum(met), "of": len(met)}


def write_between_markers(doc, text):
    body = _read(doc)
    if body.count(BEGIN) != 1 or body.count(END) != 1 or body.index(BEGIN) > body.index(END):
        raise TableError("%s: needs exactly one %r line and, after it, one %r line around the table to replace"
                         % (doc, BEGIN, END))
    a = body.index(BEGIN) + len(BEGIN)
    b = body.index(END)
    with open(doc, "w") as f:
        f.write(body[:a] + "\n" + text + body[b:])


def summary(path):
    run, recs = read_part(path)
    print("%s: commit %s, %s, %s" % (run.get("part"), run.get("commit"), run.get("gpu"), run.get("torch")))
    for r in recs:
        figs = ", ".join("%s %.1f" % (k, r[k]) for k in ("judge_us", "events_us", "compile_us", "roofline_us",
                                                         "vendor_us", "reference_us", "ncu_us", "ceiling_us") if isinstance(r.get(k), (int, float)))
        if r.get("kind") == "calibrate":
            figs = "E %s D %s value %s admissible %s proposed %s" % (r.get("gpu_E"), r.get("gpu_D"), r.get("value"),
                                                                     r.get("admissible"), r.get("proposed"))
        print("  %-8s %-26s shape %s  %s%s" % (r.get("kind"), r.get("task"), r.get("shape_index", "-"), figs,
                                               ("  error: " + r["error"]) if r.get("error") else ""))


def _candidate_name(src):
    """A lab line's source as the table names it: eager, solution, or the lab variant's folder."""
    if "/kernel_data/" in src or src.startswith("catalog/kernel_data"):
        return "eager"
    if "/solutions/" in src or src.startswith("catalog/solutions"):
        return "solution"
    return src.rstrip("/").split("/")[-1]


def lab_table(lines):
    """Markdown of `catalog_helper.py lab` lines: per task and graded shape, each source's time
    (CUDA events with the launch padded out, median) and % of the roofline; a source found
    incorrect, or that failed, is marked so instead of timed."""
    checks, times, order = {}, {}, {}
    for d in lines:
        if "task" not in d or "src" not in d:
            continue
        name = _candidate_name(d["src"])
        names = order.setdefault(d["task"], [])
        if name not in names:
            names.append(name)
        if "shape_index" not in d:
            checks[(d["task"], name)] = d
        else:
            times[(d["task"], d["shape_index"], name)] = d
    out = []
    for task, names in order.items():
        names = sorted(names, key=lambda n: (n != "eager", n != "solution", n))
        out.append("| %s | shape | %s |" % (task, " | ".join(names)))
        out.append("|---|---|" + "---|" * len(names))
        shapes = sorted({k[1] for k in times if k[0] == task})
        for sh in shapes:
            cells = []
            for n in names:
                c, t = checks.get((task, n)), times.get((task, sh, n))
                if c is not None and c.get("error"):
                    cells.append("failed: " + c["error"][:60])
                elif c is not None and c.get("correct") is False and (c.get("bound_ratio_max") or 0) > 1:
                    cells.append("past the elementwise bound (%.2fx)" % c["bound_ratio_max"])
                elif c is not None and c.get("correct") is False:
                    cells.append("incorrect (%.3g > %.3g)" % (c.get("max_measure"), c.get("tolerance")))
                elif t is None or t.get("events_us") is None:
                    cells.append("-" if t is None else "not timed: " + str(t.get("error", ""))[:60])
                else:
                    pct = t.get("pct_roofline")
                    cells.append("%.1f" % t["events_us"] + (" (%s%%)" % pct if pct is not None else ""))
            out.append("| | %d | %s |" % (sh, " | ".join(cells)))
        out.append("")
    return "\n".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    # Each command's positional arguments (see the module's docstring).
    commands = {"table": ["folder"], "fidelity-parts": ["logs", "out"], "summary": ["part"], "grade-records": ["kind", "task", "grade_json"],
                "tag-records": ["kind"], "ncu-record": ["task", "shape", "csv", "calls"],
                "tolerance-record": ["task", "task_json", "calibrate_json", "fastmath_json"]}
    for name, args in commands.items():
        sp = sub.add_parser(name)
        for arg in args:
            if name == "table":
                sp.add_argument("folders", nargs="+", metavar="FOLDER")
                continue
            sp.add_argument(arg, type=int if arg == "calls" else str)
        if name == "table":
            sp.add_argument("--write", metavar="DOC")
            sp.add_argument("--ceilings", metavar="CEILING_JSONL", help="ceiling.py's --json lines: mark the "
                            "targets beyond what the GPU can move")
        if name == "fidelity-parts":
            for opt in ("--commit", "--gpu", "--torch"):
                sp.add_argument(opt, default="?")
            sp.add_argument("--ncu-calls", type=int, default=5, help="the calls ncu profiled per shape (NCU_CALLS)")
    lb = sub.add_parser("lab")
    lb.add_argument("files", nargs="+")
    a = p.parse_args(argv)
    try:
        if a.cmd == "lab":
            lines = []
            for f in a.files:
                for line in _read(f).splitlines():
                    if line.strip().startswith("{"):
                        lines.append(json.loads(line))
            sys.stdout.write(lab_table(lines))
            return 0
        if a.cmd == "table":
            run, parts = read_run(a.folders)
            # The run's own ceiling part (catalog_bench.sh PART=ceiling) unless another file is named.
            own = [os.path.join(f, "ceiling.jsonl") for f in a.folders if os.path.exists(os.path.join(f, "ceiling.jsonl"))]
            cpath = a.ceilings or (own[-1] if own else None)
            ceilings, where = read_ceilings(cpath) if cpath else (None, None)
            text, _ = render(run, rows_of(parts, ceilings=ceilings),
                             ceilings_from=("%s, %s" % (os.path.basename(cpath), where)) if cpath else None)
            if a.write:
                write_between_markers(a.write, text)
            else:
                sys.stdout.write(text)
        elif a.cmd == "summary":
            summary(a.part)
        elif a.cmd == "fidelity-parts":
            run = {"commit": a.commit, "gpu": a.gpu, "torch": a.torch,
                   "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            for part, lines in fidelity_parts(a.logs, run, a.ncu_calls).items():
                with open(os.path.join(a.out, part + ".jsonl"), "w") as f:
                    f.write(json.dumps({"run": lines[0]}) + "\n")
                    for r in lines[1:]:
                        f.write(json.dumps(r) + "\n")
                print("catalog_table.py: %s.jsonl, %d records" % (part, len(lines) - 1))
        elif a.cmd == "grade-records":
            try:
                text = _read(a.grade_json)
            except OSError:
                text = ""
            for r in grade_records(a.kind, a.task, text):
                print(json.dumps(r))
        elif a.cmd == "tag-records":
            for line in sys.stdin:
                if line.strip():
                    d = json.loads(line)
                    d["kind"] = a.kind
                    print(json.dumps(d))
        elif a.cmd == "ncu-record":
            print(json.dumps(ncu_record(a.task, a.shape, a.csv, a.calls)))
        else:
            print(json.dumps(tolerance_record(a.task, a.task_json, a.calibrate_json, a.fastmath_json)))
    except TableError as e:
        print("catalog_table.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
