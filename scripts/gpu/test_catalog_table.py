"""The catalog table's arithmetic (catalog_table.py) and the compile fix of catalog_helper.py, on the CPU.

Run from scripts/gpu: python3 -m unittest -v test_catalog_table
"""
import importlib
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import catalog_table as ct  # noqa: E402

RUN_9C5F355 = os.path.join(HERE, "..", "..", "docs", "catalog-runs", "9c5f355")


def dump(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


def write_part(folder, part, commit, records):
    with open(os.path.join(folder, part + ".jsonl"), "w") as f:
        f.write(json.dumps({"run": {"part": part, "commit": commit, "gpu": "GPU", "torch": "t"}}) + "\n")
        for r in records:
            f.write(json.dumps(r) + "\n")


class GitRepo:
    """A throwaway git repository: put() writes files, commit() commits them all and returns the hash."""

    def __init__(self, path):
        import subprocess
        self.path, self.run = path, subprocess.run
        self.run(["git", "init", "-q", path], check=True)

    def put(self, path, text):
        os.makedirs(os.path.dirname(os.path.join(self.path, path)), exist_ok=True)
        with open(os.path.join(self.path, path), "w") as f:
            f.write(text)

    def commit(self, msg):
        self.run(["git", "-C", self.path, "add", "-A"], check=True)
        self.run(["git", "-C", self.path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", msg], check=True)
        return self.run(["git", "-C", self.path, "rev-parse", "HEAD"], capture_output=True, text=True,
                        check=True).stdout.strip()


class Table(unittest.TestCase):
    def test_the_9c5f355_run_gives_its_published_figures(self):
        # shared/gpu-runs/2026-12-01-main-9c5f355.md: 4 of 12 met, 16.5x over eager by ncu.
        run, parts = ct.read_run(RUN_9C5F355)
        rows = ct.rows_of(parts)
        text, totals = ct.render(run, rows)
        self.assertEqual((totals["met"], totals["of"]), (4, 12))
        self.assertEqual(round(totals["over_eager"], 1), 16.5)
        by = {r["task"]: r for r in rows}
        self.assertAlmostEqual(by["rmsnorm-residual"]["target_us"], 537 / 1.05)  # compile-bound
        self.assertFalse(by["rmsnorm-residual"]["met"])
        self.assertAlmostEqual(by["softmax"]["target_us"], 447 / 0.8)  # roofline-bound
        self.assertEqual(by["bf16-gemm"]["target_basis"], "vendor")
        self.assertIn("eager = fp32 reference maths (old baselines)", text)
        self.assertIn("commit 9c5f355", text)

    def test_a_fabricated_run(self):
        with tempfile.TemporaryDirectory() as d:
            # bf16-gemm is T4 in the catalog (target: the vendor), softmax T2 (target: roofline or compile).
            write_part(d, "eager", "abc", [
                {"kind": "eager", "task": "softmax", "shape_index": 0, "events_us": 2100.0},
                {"kind": "eager", "task": "softmax", "shape_index": 0, "judge_us": 2000.0},
                {"kind": "eager", "task": "bf16-gemm", "shape_index": 0, "events_us": 1500.0},
                {"kind": "eager", "task": "bf16-gemm", "shape_index": 0, "error": "timeout: cut"}])
            write_part(d, "compile", "abc", [
                {"kind": "compile", "task": "softmax", "shape_index": 0, "roofline_us": 400.0, "compile_us": 420.0},
                {"kind": "compile", "task": "bf16-gemm", "shape_index": 0, "roofline_us": 1000.0, "compile_us": 1600.0,
                 "vendor_us": 1400.0}])
            write_part(d, "solutions", "abc", [
                {"kind": "solution", "task": "softmax", "shape_index": 0, "judge_us": 420.0},
                {"kind": "solution", "task": "bf16-gemm", "shape_index": 0, "judge_us": 1500.0}])
            write_part(d, "ncu", "abc", [{"kind": "ncu", "task": "softmax", "shape_index": 0, "ncu_us": 400.0}])
            run, parts = ct.read_run(d)
            rows = ct.rows_of(parts)
            text, totals = ct.render(run, rows)
        sm, gm = rows
        # softmax: the grade beats the events figure; ncu is the solution's time; target min(500, 400).
        self.assertEqual((sm["eager_us"], sm["sol_us"], sm["target_us"]), (2000.0, 400.0, 400.0))
        self.assertTrue(sm["met"])
        self.assertAlmostEqual(sm["judge_vs_ncu_pct"], 5.0)
        self.assertAlmostEqual(sm["roofline_pct"], 100.0)
        # bf16-gemm: no grade, so the events figure; no ncu, so the judge's; the vendor is the target.
        self.assertEqual((gm["eager_us"], gm["sol_us"], gm["target_us"]), (1500.0, 1500.0, 1400.0))
        self.assertTrue(gm["eager_from_events"] and gm["sol_from_judge"])
        self.assertFalse(gm["met"])
        self.assertAlmostEqual(totals["over_eager"], (5.0 * 1.0) ** 0.5)
        self.assertAlmostEqual(totals["over_compile"], (420 / 400 * 1600 / 1500) ** 0.5)
        self.assertEqual((totals["met"], totals["of"]), (1, 2))
        self.assertIn("| bf16-gemm (T4) | 0 | 1500 (events) | 1600 | - | 1500 | - | 67% | cuBLAS 1400 | no |", text)
        self.assertIn("bf16-gemm shape 0: eager: timeout: cut", text)

    def test_parts_of_two_commits_are_refused(self):
        with tempfile.TemporaryDirectory() as d:
            write_part(d, "eager", "abc", [])
            write_part(d, "ncu", "def", [])
            with self.assertRaisesRegex(ct.TableError, "different commits .*eager abc.*ncu def"):
                ct.read_run(d)

    def test_a_later_file_of_a_part_replaces_the_shapes_it_measured_again(self):
        with tempfile.TemporaryDirectory() as d:
            write_part(d, "compile", "abc", [
                {"kind": "compile", "task": "softmax", "shape_index": 0, "roofline_us": 400.0, "compile_us": 9000.0},
                {"kind": "compile", "task": "softmax", "shape_index": 1, "roofline_us": 400.0, "compile_us": 700.0}])
            write_part(d, "compile.2", "abc", [
                {"kind": "compile", "task": "softmax", "shape_index": 0, "roofline_us": 400.0, "compile_us": 740.0}])
            run, parts = ct.read_run(d)
            got = sorted((r["shape_index"], r["compile_us"]) for r in parts["compile"])
            self.assertEqual(got, [(0, 740.0), (1, 700.0)])
            self.assertEqual(run["parts"], ["compile"])

    def test_commits_that_differ_only_in_the_measuring_scripts_make_one_table(self):
        with tempfile.TemporaryDirectory() as repo, tempfile.TemporaryDirectory() as d:
            g = GitRepo(repo)

            def commit(path, text):
                g.put(path, text)
                return g.commit(path)
            a = commit("catalog/solutions/k.py", "v1")
            b = commit("scripts/gpu/catalog_bench.sh", "fixed")
            c = commit("catalog/solutions/k.py", "v2")
            write_part(d, "eager", a, [])
            write_part(d, "compile", b, [])
            run, _ = ct.read_run(d, repo=repo)
            self.assertIn("the same measured code", run["commit"])
            self.assertIn("%s (eager)" % a[:12], run["commit"])
            write_part(d, "ncu", b + " (dirty)", [])
            with self.assertRaisesRegex(ct.TableError, "uncommitted code"):
                ct.read_run(d, repo=repo)
            write_part(d, "ncu", c, [])
            with self.assertRaisesRegex(ct.TableError, "differ in catalog/solutions/k.py"):
                ct.read_run(d, repo=repo)

    def test_an_older_part_serves_the_newest_code_but_for_the_tasks_whose_sources_changed(self):
        with tempfile.TemporaryDirectory() as repo, tempfile.TemporaryDirectory() as d1, \
                tempfile.TemporaryDirectory() as d2:
            g = GitRepo(repo)
            put, commit = g.put, g.commit
            for t in ("softmax", "topk-logits"):
                put("catalog/tasks/%s/task.json" % t, "{}")
                for root in ("kernel_data", "solutions/gpu"):
                    put("catalog/%s/h200/%s_eager/.kernel_package/desc.yaml" % (root, t),
                        "reference_sources:\n  - kind: task\n    ref: %s\n" % t)
                    put("catalog/%s/h200/%s_eager/src/k.py" % (root, t), "v1")
            put("judge/j.py", "v1")
            a = commit("a")
            put("catalog/solutions/gpu/h200/topk-logits_eager/src/k.py", "v2")  # a new top-k solution
            b = commit("b")

            def rec(kind, task, us):
                return {"kind": kind, "task": task, "shape_index": 0, {"ncu": "ncu_us"}.get(kind, "judge_us"): us}
            write_part(d1, "eager", a, [rec("eager", "softmax", 900.0), rec("eager", "topk-logits", 10000.0)])
            write_part(d1, "solutions", a, [rec("solutions", "softmax", 516.0), rec("solutions", "topk-logits", 809.0)])
            write_part(d1, "ncu", a, [rec("ncu", "softmax", 515.0), rec("ncu", "topk-logits", 801.0)])
            write_part(d2, "solutions", b, [rec("solutions", "topk-logits", 479.0)])
            run, parts = ct.read_run([d1, d2], repo=repo)
            got = {(k, r["task"]): r.get("judge_us", r.get("ncu_us")) for k, rs in parts.items() for r in rs}
            # the top-k solution's old grade is replaced, its old ncu figure dropped; the rest serves
            self.assertEqual(got, {("eager", "softmax"): 900.0, ("eager", "topk-logits"): 10000.0,
                                   ("solutions", "softmax"): 516.0, ("solutions", "topk-logits"): 479.0,
                                   ("ncu", "softmax"): 515.0})
            self.assertEqual(run["stale"], ["ncu topk-logits shape 0 (measured at %s; its sources changed since)" % a[:12]])
            self.assertIn("the same measured code (%s's)" % b[:12], run["commit"])
            text, _ = ct.render(run, ct.rows_of(parts))
            self.assertIn("- ncu topk-logits shape 0 (measured at", text)
            # a change every task runs on (the judge) refuses the older files
            put("judge/j.py", "v2")
            c = commit("c")
            write_part(d2, "ncu", c, [rec("ncu", "topk-logits", 489.0)])
            with self.assertRaisesRegex(ct.TableError, "differ in judge/j.py"):
                ct.read_run([d1, d2], repo=repo)

    def test_a_part_without_its_run_line_is_refused(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "eager.jsonl"), "w") as f:
                f.write('{"kind": "eager", "task": "softmax"}\n')
            with self.assertRaisesRegex(ct.TableError, "eager.jsonl: no `run` line"):
                ct.read_run(d)

    def test_write_replaces_only_between_the_markers(self):
        with tempfile.TemporaryDirectory() as d:
            doc = os.path.join(d, "DOC.md")
            with open(doc, "w") as f:
                f.write("before\n%s\nold table\n%s\nafter\n" % (ct.BEGIN, ct.END))
            ct.write_between_markers(doc, "new table\n")
            self.assertEqual(ct._read(doc), "before\n%s\nnew table\n%s\nafter\n" % (ct.BEGIN, ct.END))
            with open(doc, "w") as f:
                f.write("no markers\n")
            with self.assertRaisesRegex(ct.TableError, "needs exactly one"):
                ct.write_between_markers(doc, "x")


class Records(unittest.TestCase):
    def test_grade_records(self):
        doc = {"overall": {"accept": False}, "cases": [
            {"test_case_id": "synthetic-0", "status": "ok", "correct": True, "message": "median 512.250 us over 30 timed calls"},
            {"test_case_id": "synthetic-2", "status": "incorrect", "correct": False, "message": "relative Frobenius 0.5"}]}
        recs = ct.grade_records("solution", "softmax", "kzoo: a log line\n" + json.dumps(doc, indent=1))
        self.assertEqual([(r["shape_index"], r.get("judge_us")) for r in recs], [(0, 512.25), (2, None)])
        self.assertIn("incorrect: relative Frobenius 0.5", recs[1]["error"])
        self.assertIn("no grade document", ct.grade_records("eager", "softmax", "")[0]["error"])

    def test_tolerance_record_fp8_quant(self):
        # The GPU run: E = 0.0153 makes 0.01 inadmissible (2E = 0.031); 0.06 sits between 2E and D/10.
        with tempfile.TemporaryDirectory() as d:
            cal, fast, task = (os.path.join(d, n) for n in ("cal.json", "fast.json", "task.json"))
            dump(cal, {"measured_floor_E": 0.0153, "measured_drop_D": 0.99994})
            dump(fast, {"solution": 0.004, "fast_reference": 0.0})
            for value, admissible, proposed in ((0.01, False, 0.06), (0.06, True, 0.06)):
                dump(task, {"grading": {"tolerance": {"comparator": "rowwise", "value": value, "row_pass": 0.99}}})
                r = ct.tolerance_record("fp8-quant-per-token", task, cal, fast)
                self.assertEqual((r["admissible"], r["proposed"]), (admissible, proposed))


class FidelityParts(unittest.TestCase):
    """A fidelity.sh run (every graded shape at the judge's defaults, ncu on the same calls) is the table's
    eager, solutions and ncu parts."""

    def test_its_grades_and_ncu_become_the_parts_and_the_repeats_do_not(self):
        case = lambda i, us: {"test_case_id": "synthetic-%d" % i, "status": "ok", "correct": True,
                              "message": "median %.1f us over 100 timed calls" % us}
        with tempfile.TemporaryDirectory() as logs:
            dump(os.path.join(logs, "grade_solution_softmax.json"), {"cases": [case(0, 515.0), case(1, 513.0)]})
            dump(os.path.join(logs, "grade_solution_softmax_r2.json"), {"cases": [case(0, 900.0)]})
            dump(os.path.join(logs, "grade_eager_softmax.json"), {"cases": [case(0, 1995.0)]})
            with open(os.path.join(logs, "ncu_solution_softmax.txt"), "w") as f:
                f.write("0 512.300 5\n1 511.900 5\n")
            with open(os.path.join(logs, "grade_solution_topk-logits.json"), "w") as f:
                f.write("")  # cut before it printed
            parts = ct.fidelity_parts(logs, {"commit": "abc", "gpu": "H200", "torch": "2.11"})
            self.assertEqual(sorted(parts), ["eager", "ncu", "solutions"])
            for lines in parts.values():
                self.assertEqual((lines[0]["commit"], lines[0]["source"]), ("abc", "fidelity.sh"))
            sol = [(r["task"], r.get("shape_index"), r.get("judge_us")) for r in parts["solutions"][1:]]
            self.assertEqual(sol, [("softmax", 0, 515.0), ("softmax", 1, 513.0), ("topk-logits", None, None)])
            ncu = parts["ncu"][1:]
            self.assertEqual([(r["shape_index"], r["ncu_us"]) for r in ncu if r["task"] == "softmax"], [(0, 512.3), (1, 511.9)])
            self.assertEqual({r.get("kernels_per_call") for r in ncu if r["task"] == "softmax"}, {1.0})  # 5 over 5 calls
            self.assertIn("no ncu figures", [r for r in ncu if r["task"] == "topk-logits"][0]["error"])
            # written by the CLI, the parts read back as one run
            out = os.path.join(logs, "out")
            os.mkdir(out)
            self.assertEqual(ct.main(["fidelity-parts", logs, out, "--commit", "abc", "--gpu", "H200", "--torch", "2.11"]), 0)
            run, read = ct.read_run(out)
            self.assertEqual((run["commit"], run["parts"]), ("abc", ["eager", "ncu", "solutions"]))
            rows = {(r["task"], r["shape"]): r for r in ct.rows_of(read, tiers={"softmax": "T2", "topk-logits": "T2"})}
            self.assertEqual((rows["softmax", 0]["eager_us"], rows["softmax", 0]["sol_us"]), (1995.0, 512.3))
            self.assertAlmostEqual(rows["softmax", 1]["judge_vs_ncu_pct"], 100 * (513.0 - 511.9) / 511.9)

    def test_a_shape_ncu_saw_nothing_of_is_an_error_not_a_zero(self):
        recs = ct.marker_ncu_records("softmax", "0 0.000 0\n1 511.9 1\nncu: noise\n")
        self.assertIn("saw no kernel", recs[0]["error"])
        self.assertNotIn("ncu_us", recs[0])
        self.assertEqual(recs[1]["ncu_us"], 511.9)


class TargetBasis(unittest.TestCase):
    def test_a_row_without_torch_compile_says_its_target_is_the_roofline_alone(self):
        parts = {"compile": [{"kind": "compile", "task": "softmax", "shape_index": 0, "roofline_us": 400.0}],
                 "ncu": [{"kind": "ncu", "task": "softmax", "shape_index": 0, "ncu_us": 480.0}]}
        rows = ct.rows_of(parts, tiers={"softmax": "T2"})
        self.assertEqual((rows[0]["target_us"], rows[0]["target_basis"], rows[0]["met"]), (500.0, "roofline only", True))
        text, _ = ct.render({"commit": "abc"}, rows)
        self.assertIn("| 500.0 (roofline only) | yes |", text)


class Ceilings(unittest.TestCase):
    """A target faster than the fastest any kernel moves the task's bytes (ceiling.py) is marked so."""

    def parts(self):
        return {"compile": [{"kind": "compile", "task": "rmsnorm-residual", "shape_index": s, "roofline_us": 447.4,
                             "compile_us": c} for s, c in ((0, 507.1), (1, 560.0))],
                "ncu": [{"kind": "ncu", "task": "rmsnorm-residual", "shape_index": s, "ncu_us": 524.9} for s in (0, 1)]}

    def ceilings_file(self, lines):
        f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        f.write("\n".join(lines) + "\n")
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_a_target_below_the_ceiling_is_marked_and_counted(self):
        path = self.ceilings_file([
            json.dumps({"task": "rmsnorm-residual", "shape_index": 0, "ceiling_us": 504.5, "device": "NVIDIA H200",
                        "torch": "2.11"}),
            json.dumps({"task": "rmsnorm-residual", "shape_index": 1, "ceiling_us": 501.3, "device": "NVIDIA H200",
                        "torch": "2.11"}),
            json.dumps({"task": "cross-entropy", "shape_index": -1, "error": "tensor 'x' shape ..."})])
        ceilings, where = ct.read_ceilings(path)
        self.assertEqual(where, "NVIDIA H200, torch 2.11")
        rows = ct.rows_of(self.parts(), tiers={"rmsnorm-residual": "T1"}, ceilings=ceilings)
        # shape 0: torch.compile / 1.05 = 482.95 < 504.5, beyond; shape 1: 447.4 / 0.8 = 559.25 > 501.3, reachable
        self.assertEqual([(round(x["target_us"], 2), x["beyond_ceiling"]) for x in rows],
                         [(482.95, True), (533.33, False)])
        text, _ = ct.render({"commit": "abc"}, rows, ceilings_from="c.jsonl, NVIDIA H200, torch 2.11")
        self.assertIn("| 483.0 (beyond the ceiling, 504.5) | no |", text)
        self.assertIn("| 533.3 | yes |", text)
        self.assertIn("1 of 2 targets lie beyond them", text)

    def test_without_ceilings_the_table_is_as_before(self):
        text, _ = ct.render({"commit": "abc"}, ct.rows_of(self.parts(), tiers={"rmsnorm-residual": "T1"}))
        self.assertNotIn("ceiling", text)

    def test_a_malformed_line_is_refused_naming_the_file_and_line(self):
        path = self.ceilings_file([json.dumps({"task": "softmax", "shape_index": 0, "ceiling_us": 507.4}), "{not json"])
        with self.assertRaises(ct.TableError) as e:
            ct.read_ceilings(path)
        self.assertIn("%s:2" % path, str(e.exception))

    def test_a_file_with_no_ceiling_is_refused_saying_how_to_make_one(self):
        path = self.ceilings_file([json.dumps({"task": "softmax", "shape_index": -1, "error": "no GPU"})])
        with self.assertRaises(ct.TableError) as e:
            ct.read_ceilings(path)
        self.assertIn("ceiling.py", str(e.exception))

    def test_a_run_folders_own_ceiling_part_is_read_by_the_table_command(self):
        with tempfile.TemporaryDirectory() as d:
            write_part(d, "compile", "c1", self.parts()["compile"])
            write_part(d, "ncu", "c1", self.parts()["ncu"])
            with open(os.path.join(d, "ceiling.jsonl"), "w") as f:
                f.write(json.dumps({"run": {"part": "ceiling", "commit": "c0", "gpu": "GPU", "torch": "t"}}) + "\n")
                f.write(json.dumps({"task": "rmsnorm-residual", "shape_index": 0, "ceiling_us": 504.5,
                                    "device": "NVIDIA H200", "torch": "2.11"}) + "\n")
            out = os.path.join(d, "doc.md")
            with open(out, "w") as f:
                f.write("<!-- catalog_table begin -->\n<!-- catalog_table end -->\n")
            self.assertEqual(ct.main(["table", d, "--write", out]), 0)
            with open(out) as f:
                text = f.read()
        self.assertIn("(beyond the ceiling, 504.5)", text)
        self.assertIn("ceiling.jsonl, NVIDIA H200, torch 2.11", text)

    def test_the_session_22_ceilings_mark_the_three_torch_compile_targets(self):
        path = os.path.join(HERE, "..", "..", "docs", "catalog-runs", "session22", "ceiling_d375aaf.jsonl")
        ceilings, _ = ct.read_ceilings(path)
        self.assertEqual(len(ceilings), 24)
        # The run's files merged by hand, not by read_run: its two commits need git history, and a
        # checkout may be shallow.
        run_dir = os.path.join(HERE, "..", "..", "docs", "catalog-runs", "6b25edc")
        parts = {}
        for name in ("compile", "compile.2", "eager", "solutions", "ncu"):
            _, recs = ct.read_part(os.path.join(run_dir, name + ".jsonl"))
            key = lambda r: (r.get("task"), r.get("shape_index"))  # noqa: E731
            again = {key(r) for r in recs}
            part = name.split(".")[0]
            parts[part] = [r for r in parts.get(part, []) if key(r) not in again] + recs
        beyond = sorted({x["task"] for x in ct.rows_of(parts, ceilings=ceilings) if x["beyond_ceiling"]})
        self.assertEqual(beyond, ["layernorm", "rmsnorm-residual", "silu-and-mul"])


class LabLoading(unittest.TestCase):
    def test_each_source_imports_its_own_sibling_modules(self):
        # Two sources of one task in one process, each with its own `_ext` (a CUDA solution's
        # extension loader): the second must not be handed the first's from sys.modules.
        import types
        import catalog_helper
        task = types.SimpleNamespace(name="t", module="entry.py", entry_point="entry")
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            for d, value in ((a, "A"), (b, "B")):
                with open(os.path.join(d, "_ext.py"), "w") as f:
                    f.write("VALUE = %r\n" % value)
                with open(os.path.join(d, "entry.py"), "w") as f:
                    f.write("import _ext\n\ndef entry():\n    return _ext.VALUE\n")
            fa, fb = catalog_helper._load_solution(task, a), catalog_helper._load_solution(task, b)
            self.assertEqual((fa(), fb()), ("A", "B"))
            self.assertNotIn("_ext", sys.modules)


class CompileFix(unittest.TestCase):
    def test_the_reference_module_is_importable_for_dynamo(self):
        # torch.compile imports the traced function's module; a reference's is kzoo_reference, which no
        # import made ("No module named 'kzoo_reference'" on the GPU, 2026-12-01).
        import catalog_helper
        from kzoo_judge import reference, task as task_mod
        task = task_mod.load(os.path.join(HERE, "..", "..", "catalog", "tasks", "softmax", "task.json"))
        fn = reference.load(task)
        sys.modules.pop(fn.__module__, None)
        with self.assertRaises(ModuleNotFoundError):
            importlib.import_module(fn.__module__)
        catalog_helper._as_module(fn)
        mod = importlib.import_module(fn.__module__)
        self.assertIs(getattr(mod, task.entry_point), fn)
        self.assertIs(mod.torch, fn.__globals__["torch"])



class LabTable(unittest.TestCase):
    def test_each_source_is_a_column_and_an_incorrect_one_is_never_timed(self):
        lines = [
            {"task": "t", "src": "catalog/solutions/gpu/x/src", "correct": True, "max_measure": 0.0, "tolerance": 0.01},
            {"task": "t", "src": "lab/t/v1", "correct": False, "max_measure": 0.5, "tolerance": 0.01},
            {"task": "t", "src": "/r/catalog/kernel_data/x/src", "shape_index": 0, "events_us": 900.0, "pct_roofline": 50.0},
            {"task": "t", "src": "catalog/solutions/gpu/x/src", "shape_index": 0, "events_us": 450.0, "pct_roofline": 100.0},
            {"task": "t", "src": "lab/t/v1", "shape_index": 0, "events_us": 100.0, "pct_roofline": 450.0},
            {"task": "t", "src": "lab/t/v2", "error": "load: SyntaxError: x"},
            {"task": "t", "src": "lab/t/v3", "correct": False, "max_measure": 0.001, "tolerance": 0.01,
             "bound_ratio_max": 1.9},
            {"task": "t", "src": "lab/t/v3", "shape_index": 0, "events_us": 300.0, "pct_roofline": 150.0},
        ]
        text = ct.lab_table(lines)
        self.assertIn("| t | shape | eager | solution | v1 | v2 |", text)
        row = [l for l in text.splitlines() if l.startswith("| | 0 |")][0]
        self.assertIn("900.0 (50.0%)", row)
        self.assertIn("450.0 (100.0%)", row)
        self.assertIn("incorrect (0.5 > 0.01)", row)
        self.assertNotIn("100.0 (450.0%)", row)
        self.assertIn("failed: load: SyntaxError", row)
        # Inside the comparator's tolerance but past the board's elementwise bound: kzoo grade refuses it.
        self.assertIn("past the elementwise bound (1.90x)", row)
        self.assertNotIn("300.0", row)


if __name__ == "__main__":
    unittest.main()
