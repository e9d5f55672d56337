"""The judge end to end on the CPU: dtypes through the child, in-place and
read-only rules, gates in a real run, the package glue, the CLI, calibrate."""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

from kzoo_judge import entry, inputs
from kzoo_judge import task as taskmod
from tests import helpers as h
from tests.helpers import case0


def inplace_task():
    return {
        "name": "tiny-add-inplace", "family": "test",
        "definition": {
            "entry_point": "add_", "module": "kernel.py",
            "inputs": [{"name": "x", "shape": ["R", "C"], "dtype": "float32"},
                       {"name": "r", "shape": ["R", "C"], "dtype": "float32"}],
            "outputs": [{"name": "x", "shape": ["R", "C"], "dtype": "float32"}],
            "in_place_outputs": ["x"],
            "reference": {"language": "python/pytorch", "source": "def reference(x, r):\n    x.add_(r)\n"},
        },
        "workloads": {"synthetic": {"dims": ["R", "C"], "graded": [[1024, 1024]], "correctness": [[3, 5], [7, 33]],
                                    "measure": [[16, 64]]}},
        "grading": {"metric": "GB/s", "reward": {"canonical_work": "3*R*C*4"},
                    "tolerance": {"value": 0, "comparator": "exact"}},
    }


def quant_task():
    return {
        "name": "tiny-fp8-dequant", "family": "test",
        "definition": {
            "entry_point": "deq", "module": "kernel.py",
            "inputs": [{"name": "w", "shape": ["R", "C"], "dtype": "float8_e4m3fn",
                        "quantized": {"format": "float8_e4m3fn", "scale_granularity": "per-block", "block_size": 32}},
                       {"name": "w_scale", "shape": ["cdiv(R, 32)", "cdiv(C, 32)"], "dtype": "float32"}],
            "outputs": [{"name": "y", "shape": ["R", "C"], "dtype": "float32"}],
            "reference": {"language": "python/pytorch", "source": textwrap.dedent("""
                from kzoo_judge.dtypes import dequantize
                def reference(w, w_scale):
                    return dequantize(w, w_scale, "float8_e4m3fn", 32) * 2
            """)},
        },
        "workloads": {"synthetic": {"dims": ["R", "C"], "graded": [[4096, 4096]], "correctness": [[33, 70], [64, 64]],
                                    "measure": [[96, 128]]}},
        "grading": {"metric": "GB/s", "reward": {"canonical_work": "R*C*5"},
                    "tolerance": {"value": 0, "comparator": "exact"}},
    }


class DtypesThroughTheChild(unittest.TestCase):
    def test_bfloat16_task(self):
        doc = h.judge(h.softmax_task(dtype="bfloat16", tol=1e-2), h.GOOD_SOFTMAX)
        self.assertTrue(doc["overall"]["accept"], doc)

    def test_quantised_float8_inputs_dequantised_exactly(self):
        good = """
            from kzoo_judge.dtypes import to_float, expand_blocks
            def deq(w, w_scale):
                return to_float(w, "float8_e4m3fn") * expand_blocks(w_scale, tuple(w.shape), 32) * 2
        """
        doc = h.judge(quant_task(), good)
        self.assertTrue(doc["overall"]["accept"], doc)
        self.assertEqual(case0(doc)["error_abs_max"], 0.0)

    def test_ignoring_the_scales_is_caught(self):
        c = case0(h.judge(quant_task(), """
            from kzoo_judge.dtypes import to_float
            def deq(w, w_scale):
                return to_float(w, "float8_e4m3fn") * 2
        """))
        self.assertEqual(c["status"], "incorrect")
        self.assertIn("differs from the exact expected value", c["message"])


class InPlace(unittest.TestCase):
    def test_in_place_output_is_compared(self):
        doc = h.judge(inplace_task(), "def add_(x, r):\n    x.add_(r)\n")
        self.assertTrue(doc["overall"]["accept"], doc)

    def test_in_place_output_left_unchanged_is_incorrect(self):
        c = case0(h.judge(inplace_task(), "def add_(x, r):\n    return None\n"))
        self.assertEqual(c["status"], "incorrect")
        self.assertIn("'x'", c["message"])

    def test_mutating_the_read_only_input_of_an_in_place_task(self):
        c = case0(h.judge(inplace_task(), "def add_(x, r):\n    x.add_(r)\n    r.mul_(0)\n"))
        self.assertEqual(c["status"], "incorrect")
        self.assertIn("modified input 'r'", c["message"])

    def test_scratch_writes_allowed_when_inputs_are_not_read_only(self):
        t = inplace_task()
        t["definition"]["read_only_inputs"] = False
        doc = h.judge(t, "def add_(x, r):\n    x.add_(r)\n    r.mul_(0)\n")
        self.assertTrue(doc["overall"]["accept"], doc)


class Failures(unittest.TestCase):
    def test_import_failure_is_a_build_failure(self):
        doc = h.judge(h.softmax_task(), "def softmax(x):\n    return (\n")
        self.assertFalse(doc["overall"]["build_ok"])
        self.assertFalse(doc["overall"]["accept"])
        c = case0(doc)
        self.assertEqual(c["status"], "error")
        self.assertIn("importing the submission failed", c["message"])
        self.assertIn("SyntaxError", c["message"])

    def test_missing_entry_point(self):
        c = case0(h.judge(h.softmax_task(), "def other(x):\n    return x\n"))
        self.assertEqual(c["status"], "error")
        self.assertIn("no callable 'softmax'", c["message"])

    def test_submission_raising(self):
        c = case0(h.judge(h.softmax_task(), "def softmax(x):\n    raise ValueError('nope')\n"))
        self.assertEqual(c["status"], "error")
        self.assertIn("ValueError: nope", c["message"])


class GatesInARun(unittest.TestCase):
    def test_extra_gate_kernels_per_step(self):
        t = h.softmax_task(extra_gates=[{"name": "kernels-per-step", "limit": 2, "direction": "max"}])
        doc = h.judge(t, """
            import torch
            def softmax(x):
                m = x.max(dim=-1, keepdim=True).values
                e = (x - m).exp()
                return e / e.sum(dim=-1, keepdim=True)
        """)
        c = case0(doc)
        self.assertTrue(c["correct"], c)
        self.assertFalse(c["gates"]["kernels-per-step"]["pass"], c["gates"])
        self.assertFalse(doc["overall"]["accept"])
        self.assertIn("gate kernels-per-step failed", doc["overall"]["accept_reason"])
        self.assertIn("kernels per call, limit 2 kernels per call", doc["overall"]["accept_reason"])  # units

    def test_library_call_the_reference_does_not_make(self):
        doc = h.judge(h.softmax_task(), """
            import torch
            def softmax(x):
                eye = torch.eye(x.shape[-1], dtype=x.dtype)
                return torch.softmax(torch.mm(x, eye), dim=-1)
        """)
        c = case0(doc)
        self.assertTrue(c["correct"], c)
        self.assertFalse(c["gates"]["library-calls"]["pass"])
        self.assertIn("aten::mm", c["message"])
        self.assertFalse(doc["overall"]["accept"])

    def test_faster_than_the_roofline_is_impossible(self):
        d = tempfile.mkdtemp()
        try:
            path = os.path.join(d, "classes.json")
            with open(path, "w") as f:
                json.dump({"default": "slow", "classes": {"slow": {"bandwidth_GBps": 1e-6, "tflops": {}, "l2_bytes": 0}}}, f)
            os.environ["KZOO_DEVICE_CLASSES"] = path
            doc = h.judge(h.softmax_task(), h.GOOD_SOFTMAX)
        finally:
            os.environ.pop("KZOO_DEVICE_CLASSES", None)
            shutil.rmtree(d)
        c = case0(doc)
        self.assertFalse(c["gates"]["roofline"]["pass"])
        self.assertIn("below the roofline", c["message"])
        self.assertIn("GB/s", c["message"])
        self.assertFalse(doc["overall"]["accept"])


BENCHMARK_PY = """\
from kzoo_judge.entry import run_package_benchmark

KERNEL_ZOO_TEST_CASE_METAS = [
    {"test_case_id": "softmax-a", "params": {"workload": "synthetic", "shape": {"R": 4096, "C": 4096}},
     "primary_metric": "bandwidth",
     "metrics": [{"name": "bandwidth", "unit": "GB/s", "direction": "higher"}, {"name": "latency", "unit": "us", "direction": "lower"}],
     "tolerance": {"correctness_atol": 0, "correctness_rtol": 1e-5}},
    {"test_case_id": "softmax-b", "params": {"workload": "synthetic", "shape": {"R": 8192, "C": 2048}},
     "primary_metric": "bandwidth",
     "metrics": [{"name": "bandwidth", "unit": "GB/s", "direction": "higher"}],
     "tolerance": {"correctness_atol": 0, "correctness_rtol": 1e-5}},
]

if __name__ == "__main__":
    run_package_benchmark(KERNEL_ZOO_TEST_CASE_METAS)
"""


class Package(unittest.TestCase):
    """The package <-> judge contract of docs/ARCHITECTURE.md, through real harness files."""

    def setUp(self):
        self.w = tempfile.mkdtemp(prefix="kzoo-w-")
        os.makedirs(os.path.join(self.w, ".kernel_package"))
        os.makedirs(os.path.join(self.w, ".kzoo"))
        os.makedirs(os.path.join(self.w, "src"))
        t = h.softmax_task()
        t["workloads"]["synthetic"]["graded"].append([8192, 2048])
        t["workloads"]["synthetic"]["measure"].append([32, 128])
        with open(os.path.join(self.w, ".kzoo", "task.json"), "w") as f:
            json.dump(t, f)
        with open(os.path.join(self.w, ".kernel_package", "benchmark.py"), "w") as f:
            f.write(BENCHMARK_PY)
        with open(os.path.join(self.w, ".kernel_package", "build_test_env.py"), "w") as f:
            f.write("from kzoo_judge.entry import build_test_env\nbuild_test_env()\n")
        with open(os.path.join(self.w, "src", "kernel.py"), "w") as f:
            f.write(h.GOOD_SOFTMAX)

    def tearDown(self):
        shutil.rmtree(self.w, ignore_errors=True)

    def env(self, **extra):
        e = dict(os.environ)
        e.update({"PYTHONPATH": h.JUDGE_ROOT, "KZOO_TASK": os.path.join(self.w, ".kzoo", "task.json"),
                  "KZOO_DEVICE": "cpu", "KZOO_KERNEL_ID": "ops/softmax/eager", "KZOO_RUNNER_ID": "ci-1",
                  "KZOO_OPTIONS": json.dumps({"iterations": 4, "warmup": 1, "trials": 1, "batch": 2})})
        e.update(extra)
        return e

    def test_build_test_env_is_deterministic_and_writes_only_under_kzoo_run(self):
        before = sorted(os.path.relpath(os.path.join(r, f), self.w) for r, _, fs in os.walk(self.w) for f in fs)
        outs = []
        for _ in range(2):
            subprocess.run([sys.executable, ".kernel_package/build_test_env.py"], cwd=self.w, env=self.env(), check=True,
                           stderr=subprocess.DEVNULL)
            with open(os.path.join(self.w, ".kzoo", "run", "manifest.json"), "rb") as f:
                outs.append(f.read())
        self.assertEqual(outs[0], outs[1])
        after = sorted(os.path.relpath(os.path.join(r, f), self.w) for r, _, fs in os.walk(self.w) for f in fs)
        self.assertEqual(sorted(set(after) - set(before)), [".kzoo/run/manifest.json"])
        m = json.loads(outs[0])
        self.assertEqual([c["test_case_id"] for c in m["cases"]], ["softmax-a", "softmax-b"])
        self.assertEqual(m["cases"][1]["input_shapes"], {"x": [8192, 2048]})
        self.assertEqual(m["cases"][0]["canonical_work"], 2 * 4096 * 4096 * 4)
        self.assertTrue(m["module_present"])

    def test_the_build_step_reads_the_task_without_importing_torch(self):
        # a process of its own in every grade: torch's import cost seconds of each (docs/PERF.md)
        code = ("import sys, runpy; sys.argv = ['build_test_env.py']\n"
                "try:\n    runpy.run_path('.kernel_package/build_test_env.py', run_name='__main__')\n"
                "except SystemExit:\n    pass\n"
                "print('torch' in sys.modules)")
        p = subprocess.run([sys.executable, "-c", code], cwd=self.w, env=self.env(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(p.stdout.decode().strip().splitlines()[-1], "False", p.stderr.decode()[-2000:])
        self.assertTrue(os.path.isfile(os.path.join(self.w, ".kzoo", "run", "manifest.json")))

    def test_a_packages_build_step_runs_after_the_manifest_and_its_failure_fails_the_step(self):
        build = os.path.join(self.w, "src", "build.py")
        cache = os.path.join(self.w, ".kzoo", "run", "cache", "torch_extensions")
        try:
            with open(build, "w") as f:
                f.write("import os, kernel\n"  # src/ is importable
                        "d = os.environ['TORCH_EXTENSIONS_DIR']\n"
                        "open(os.path.join(d, 'built.so'), 'w').write('x')\n")
            p = subprocess.run([sys.executable, ".kernel_package/build_test_env.py"], cwd=self.w,
                               env=self.env(TORCH_EXTENSIONS_DIR=cache), stderr=subprocess.PIPE)
            self.assertEqual(p.returncode, 0, p.stderr.decode()[-2000:])
            self.assertTrue(os.path.isfile(os.path.join(cache, "built.so")))
            self.assertIn(b"build step (src/build.py) took", p.stderr)
            with open(build, "w") as f:
                f.write("raise SystemExit('nvcc: error: no such file')\n")
            p = subprocess.run([sys.executable, ".kernel_package/build_test_env.py"], cwd=self.w,
                               env=self.env(TORCH_EXTENSIONS_DIR=cache), stderr=subprocess.PIPE)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn(b"nvcc: error: no such file", p.stderr)
            self.assertIn(b"build step (src/build.py) failed", p.stderr)
        finally:
            os.unlink(build)
            shutil.rmtree(os.path.join(self.w, ".kzoo", "run", "cache"), ignore_errors=True)

    def test_the_judge_ends_with_its_document_not_after_the_interpreters_teardown(self):
        # The teardown (torch's modules, tensors, a GPU's context) ran after the verdict was out
        # and was 0.54 s of a 6.2 s CPU grade. An exit hook of the judge's process is where it
        # shows: it must not run, and the exit status is still the document's.
        hooks = tempfile.mkdtemp(prefix="kzoo-hooks-")
        marker = os.path.join(hooks, "teardown-ran")
        with open(os.path.join(hooks, "sitecustomize.py"), "w") as f:
            f.write("import atexit\natexit.register(lambda: open(%r, 'w').close())\n" % marker)
        key = os.urandom(32)
        r, wfd = os.pipe()
        os.write(wfd, key.hex().encode())
        os.close(wfd)
        try:
            p = subprocess.run([sys.executable, ".kernel_package/benchmark.py", "--cases", "softmax-b"], cwd=self.w,
                               env=self.env(KZOO_SEED_FD=str(r), PYTHONPATH=hooks + os.pathsep + h.JUDGE_ROOT),
                               pass_fds=(r,), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
            os.close(r)
            err = p.stderr.decode(errors="replace")
            doc = json.loads(p.stdout)
            self.assertEqual(p.returncode, 0 if doc["overall"]["accept"] else 1, err[-3000:])
            self.assertTrue(h.signature_ok(p.stdout, err, key))
            self.assertFalse(os.path.exists(marker), "the interpreter's exit hooks ran after the document")
        finally:
            shutil.rmtree(hooks, ignore_errors=True)

    def test_benchmark_prints_one_signed_document(self):
        key = os.urandom(32)
        r, wfd = os.pipe()
        os.write(wfd, key.hex().encode())
        os.close(wfd)
        p = subprocess.run([sys.executable, ".kernel_package/benchmark.py", "--cases", "softmax-b"], cwd=self.w,
                           env=self.env(KZOO_SEED_FD=str(r)), pass_fds=(r,), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=600)
        os.close(r)
        err = p.stderr.decode(errors="replace")
        doc = json.loads(p.stdout)
        self.assertEqual(p.returncode, 0, err[-3000:])
        self.assertTrue(h.signature_ok(p.stdout, err, key))
        self.assertFalse(h.signature_ok(p.stdout.replace(b"true", b"false"), err, key))
        # The stretch before the judge's clock, step by step (the timing row's unseen seconds).
        started = re.search(r"kzoo-judge: started ([0-9.]+) s before its clock: interpreter and kzoo_judge ([0-9.]+) s, "
                            r"the early children ([0-9.]+) s, torch and the seed ([0-9.]+) s, the device and provenance ([0-9.]+) s", err)
        self.assertIsNotNone(started, err[-3000:])
        total, *steps = (float(x) for x in started.groups())
        self.assertGreater(total, 0)
        self.assertAlmostEqual(sum(steps), total, delta=0.02)
        self.assertEqual(doc["schema_version"], "1")
        self.assertEqual(doc["kernel_id"], "ops/softmax/eager")
        self.assertEqual(doc["runner_id"], "ci-1")
        self.assertEqual(doc["arch"], "cpu")
        self.assertEqual(set(doc["overall"]), {"accept", "accept_reason", "build_ok"})
        self.assertEqual([c["test_case_id"] for c in doc["cases"]], ["softmax-b"])
        c = doc["cases"][0]
        self.assertEqual(set(c), {"test_case_id", "status", "correct", "error_rel", "error_abs_max", "metrics",
                                  "samples", "spread", "gates", "message", "guardrails", "top_kernels"})
        self.assertEqual(set(c["metrics"]), {"bandwidth"})
        self.assertEqual(c["samples"], 4)
        self.assertIn('measure shape {"C": 128, "R": 32}', c["message"])  # the second graded shape's measure twin
        self.assertEqual(doc["device_class"], "cpu")
        prov = doc["provenance"]
        self.assertEqual(prov["device"], "cpu")
        self.assertIsNone(prov["gpu_name"])
        with open(os.path.join(self.w, ".kzoo", "task.json"), "rb") as f:
            self.assertEqual(prov["task_sha256"], hashlib.sha256(f.read()).hexdigest())
        self.assertRegex(prov["judge"], r"^1\+[0-9a-f]{12}$")
        g = c["guardrails"]
        # on the CPU every call is compared: correctness trials, warm-ups, timed calls (a re-run batch
        # adds its own) and the profiler pass's two
        self.assertGreaterEqual(g["checked_calls"], g["random_inputs"] * g["correctness_shapes"] + g["warmup_runs"]
                                + g["timed_runs"] + 2)

    def test_the_signature_goes_on_the_verdict_channel_when_there_is_one(self):
        """What reaches stderr after the judge signed (torch's CUDA IPC warning at exit, a child's last
        words) must not hide the signature: with KZOO_VERDICT_FD it is the only thing written there."""
        key = os.urandom(32)
        r, wfd = os.pipe()
        os.write(wfd, key.hex().encode())
        os.close(wfd)
        vr, vw = os.pipe()
        p = subprocess.run([sys.executable, ".kernel_package/benchmark.py", "--cases", "softmax-b"], cwd=self.w,
                           env=self.env(KZOO_SEED_FD=str(r), KZOO_VERDICT_FD=str(vw)), pass_fds=(r, vw),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
        os.close(r)
        os.close(vw)
        verdict = os.read(vr, 4096).decode()
        os.close(vr)
        err = p.stderr.decode(errors="replace")
        self.assertEqual(p.returncode, 0, err[-3000:])
        self.assertNotIn("kzoo-judge-signature", err)
        self.assertTrue(h.signature_ok(p.stdout, verdict, key), verdict)
        self.assertNotIn("KZOO_VERDICT_FD", err)


class InternalError(unittest.TestCase):
    def test_the_judges_own_failure_is_signed_and_exits_3_never_1(self):
        """A judge that crashes is an infrastructure failure: the runner sees exit status 3 and a signed
        document saying so (runner/grade.cpp), and the worker retries the job instead of rejecting it."""
        from unittest import mock
        from kzoo_judge import judge as judgemod
        task = taskmod.Task(json.loads(json.dumps(h.softmax_task())))
        box = h.Sandbox(h.GOOD_SOFTMAX, task.module)
        try:
            with mock.patch.object(judgemod.Judge, "run", side_effect=RuntimeError("the judge tripped")):
                doc = entry.run_judge(task, entry.cases_from_workload(task), inputs.Secret(b"k" * 32), "cpu", box.src,
                                      {}, "test/kernel", "r")
        finally:
            box.close()
        self.assertTrue(doc["overall"]["judge_error"])
        self.assertFalse(doc["overall"]["accept"])
        self.assertIn("the judge tripped", doc["overall"]["accept_reason"])
        import io
        out = io.BytesIO()
        with mock.patch.object(sys, "stdout", mock.Mock(buffer=out)), mock.patch.object(sys, "stderr", io.StringIO()) as err:
            code = entry.emit(doc, inputs.Secret(b"k" * 32))
        self.assertEqual(code, entry.INTERNAL_ERROR_STATUS)
        self.assertTrue(h.signature_ok(out.getvalue(), err.getvalue(), b"k" * 32))


class Cli(unittest.TestCase):
    def test_run_cli_accepts_an_honest_module(self):
        rc, out, err, key, verdict = h.run_cli(h.softmax_task(), h.GOOD_SOFTMAX)
        self.assertEqual(rc, 0, err[-3000:])
        self.assertTrue(json.loads(out)["overall"]["accept"])
        self.assertTrue(h.signature_ok(out, verdict, key))

    def test_the_profile_option_logs_the_judges_busiest_functions_and_changes_no_verdict(self):
        rc, out, err, key, verdict = h.run_cli(h.softmax_task(), h.GOOD_SOFTMAX, ["--options", '{"profile": true}'])
        self.assertEqual(rc, 0, err[-3000:])
        self.assertTrue(json.loads(out)["overall"]["accept"])
        self.assertTrue(h.signature_ok(out, verdict, key))
        for key_name in ("tottime", "cumulative"):
            section = err.split("kzoo-judge: profile by %s:" % key_name, 1)
            self.assertEqual(len(section), 2, err[-3000:])
            self.assertIn("ncalls", section[1].splitlines()[1])
        self.assertRegex(err, r"judge\.py:\d+\(run\)")  # the profiled call itself is listed

    def test_the_trace_option_logs_every_timed_batch_and_the_harness_the_overhead_is_fitted_on(self):
        # scripts/gpu/trace_read.py reads these lines: a batch's clocks and flag, and the
        # calibration's trivial batches (the cross-check's overhead) with their harness per call.
        rc, out, err, key, verdict = h.run_cli(h.softmax_task(), h.GOOD_SOFTMAX, ["--options", '{"trace": true}'])
        self.assertEqual(rc, 0, err[-3000:])
        self.assertTrue(json.loads(out)["overall"]["accept"])
        cal = re.findall(r"trace: calibration, trivial batch of (\d+): harness (-?[\d.]+) us/call \(wall ([\d.]+) us/call\)", err)
        self.assertEqual(sorted({int(n) for n, _, _ in cal}), [2, 8], err[-3000:])
        self.assertTrue(all(float(w) > 0 for _, _, w in cal), cal)
        self.assertRegex(err, r"trace: t=[\d.]+ batch of \d+: child \[.*\] us; judge [\d.]+ us/call \(est\), wall [\d.]+ us/call, "
                              r"overhead \{.*\}; flagged (True|False)")

    def test_calibrate_measures_e_and_d_and_writes_them(self):
        d = tempfile.mkdtemp(prefix="kzoo-cal-")
        try:
            with open(os.path.join(d, "task.json"), "w") as f:
                json.dump(h.softmax_task(tol=1e-4), f)
            with open(os.path.join(d, "independent.py"), "w") as f:
                f.write("import torch\ndef independent(x):\n    e = (x.double() - x.double().max(-1, keepdim=True).values).exp()\n"
                        "    return e / e.sum(-1, keepdim=True)\n")
            with open(os.path.join(d, "drop.py"), "w") as f:
                f.write("import torch\ndef drop(x):\n    return torch.full_like(x, 1.0 / x.shape[-1])\n")
            env = dict(os.environ, PYTHONPATH=h.JUDGE_ROOT)
            p = subprocess.run([sys.executable, "-m", "kzoo_judge", "calibrate", "--task-dir", d, "--write", "--seeds", "2"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr.decode()[-2000:])
            res = json.loads(p.stdout)
            self.assertLess(res["measured_floor_E"], 1e-6)
            self.assertGreater(res["measured_drop_D"], 0.1)
            self.assertIn("seeds", res["basis"])
            with open(os.path.join(d, "task.json")) as f:
                text = f.read()
            tol = json.loads(text)["grading"]["tolerance"]
            self.assertEqual(tol["measured_floor_E"], res["measured_floor_E"])
            self.assertEqual(tol["value"], 1e-4)
            self.assertIn('\n  "name"', text)  # indent 2
        finally:
            shutil.rmtree(d)


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(__import__("torch").cuda.is_available(), "needs CUDA")
class OnTheGpu(unittest.TestCase):
    """The same pipeline through CUDA IPC, events, the L2 flush and native float8 (where torch has it)."""

    def test_softmax_bf16_graded_shape(self):
        doc = h.judge(h.softmax_task(dtype="bfloat16", tol=1e-2), h.GOOD_SOFTMAX, device="cuda")
        self.assertTrue(doc["overall"]["accept"], doc)
        self.assertTrue(doc["arch"].startswith("sm_"))
        self.assertNotIn("measure shape", case0(doc)["message"])

    def test_quantised_float8(self):
        doc = h.judge(quant_task(), """
            from kzoo_judge.dtypes import to_float, expand_blocks
            def deq(w, w_scale):
                return to_float(w, "float8_e4m3fn") * expand_blocks(w_scale, tuple(w.shape), 32) * 2
        """, device="cuda")
        self.assertTrue(doc["overall"]["accept"], doc)

    def test_in_place(self):
        self.assertTrue(h.judge(inplace_task(), "def add_(x, r):\n    x.add_(r)\n", device="cuda")["overall"]["accept"])
        c = case0(h.judge(inplace_task(), "def add_(x, r):\n    x.add_(r)\n    r.zero_()\n", device="cuda"))
        self.assertIn("modified input 'r'", c["message"])

    def test_aliasing_on_the_gpu(self):
        c = case0(h.judge(h.softmax_task(), "def softmax(x):\n    return x\n", device="cuda"))
        self.assertEqual(c["status"], "incorrect")

    def test_feedback_on_the_gpu(self):
        """Top kernels from the CUDA profiler events; the worst element of a failure."""
        c = case0(h.judge(h.softmax_task(dtype="bfloat16", tol=1e-2), h.GOOD_SOFTMAX, device="cuda"))
        top = c["top_kernels"]
        self.assertTrue(top and top[0]["time_us"] > 0 and top[0]["count"] > 0, top)
        self.assertAlmostEqual(sum(k["share"] for k in top), 1.0, delta=0.05 if len(top) < 8 else 1.0)
        bad = case0(h.judge(h.softmax_task(), "import torch\ndef softmax(x):\n    y = torch.softmax(x, dim=-1)\n"
                                              "    y[-1, 2] += 3.0\n    return y\n", device="cuda"))
        self.assertEqual(bad["status"], "incorrect")
        self.assertEqual(bad["worst"]["index"], [bad["worst"]["shape"]["R"] - 1, 2], bad["worst"])


@unittest.skipUnless(__import__("torch").cuda.is_available(), "needs CUDA")
class HardenedJudgeOnTheGpu(unittest.TestCase):
    """The CLI judge is non-dumpable (PR_SET_DUMPABLE 0): CUDA IPC must still work both ways."""

    def test_cli_in_place_and_returned_outputs(self):
        for task, code in ((inplace_task(), "def add_(x, r):\n    x.add_(r)\n"), (h.softmax_task(), h.GOOD_SOFTMAX)):
            rc, out, err, key, verdict = h.run_cli(task, code, extra_args=["--device", "cuda"])
            self.assertEqual(rc, 0, err[-3000:])
            self.assertTrue(h.signature_ok(out, verdict, key), (verdict, err[-2000:]))
            self.assertTrue(json.loads(out)["arch"].startswith("sm_"))


class GpuTimingOptions(unittest.TestCase):
    def choice(self, key, default, other, wrong_message):
        from kzoo_judge.judge import Options
        self.assertEqual(getattr(Options({}, "cuda"), key), default)
        self.assertEqual(getattr(Options({key: other}, "cuda"), key), other)
        with self.assertRaisesRegex(ValueError, wrong_message):
            Options({key: "host"}, "cuda")

    def test_the_tail_is_the_device_syncs_own_time_unless_the_events_are_asked_for(self):
        self.choice("tail", "sync", "events", "tail is \"events\" or \"sync\", not 'host'")

    def test_a_gpu_call_is_timed_by_its_device_span_unless_the_window_is_asked_for(self):
        self.choice("figure", "span", "window", "figure is \"span\" or \"window\", not 'host'")

    def test_spans_only_when_every_live_child_of_the_run_can_give_them(self):
        from types import SimpleNamespace
        from kzoo_judge.judge import Judge, Options
        j = Judge.__new__(Judge)
        j.device, j.opt, j.ab = "cuda", Options({}, "cuda"), None
        yes, no = SimpleNamespace(spans_ok=True), SimpleNamespace(spans_ok=False)
        j.child = yes
        self.assertTrue(j._use_spans(yes))
        j.ab = SimpleNamespace(child=no)  # the incumbent's child cannot: both sides by events
        self.assertFalse(j._use_spans(yes))
        j.ab, j.opt = None, Options({"figure": "window"}, "cuda")
        self.assertFalse(j._use_spans(yes))
        j.device, j.opt = "cpu", Options({}, "cpu")
        self.assertFalse(j._use_spans(yes))


class DrainSync(unittest.TestCase):
    """The drain's timed sync is the driver's own call, and torch's when that is missing or fails."""

    class Done:
        def query(self):
            return True

    def harness(self, driver_rc):
        from kzoo_judge.child import Harness
        hs = Harness(None)
        hs.torch_syncs, hs.driver_calls = 0, 0

        def torch_sync():
            hs.torch_syncs += 1

        def driver():
            hs.driver_calls += 1
            return driver_rc
        hs._device_sync = torch_sync
        hs._ctx_sync = driver if driver_rc is not None else None
        return hs

    def test_the_driver_sync_is_timed_alone_when_it_answers_success(self):
        hs = self.harness(0)
        self.assertIsInstance(hs._drain(self.Done()), int)
        self.assertEqual((hs.driver_calls, hs.torch_syncs), (1, 0))

    def test_a_failing_driver_sync_hands_over_to_torch_which_raises_the_error(self):
        hs = self.harness(700)  # CUDA_ERROR_ILLEGAL_ADDRESS
        hs._drain(self.Done())
        self.assertEqual((hs.driver_calls, hs.torch_syncs), (1, 1))

    def test_without_the_driver_entry_point_torch_syncs(self):
        hs = self.harness(None)
        hs._drain(self.Done())
        self.assertEqual(hs.torch_syncs, 1)

    def test_the_gpu_loop_reports_the_tail_it_was_asked_for_traced_or_not(self):
        # The CUDA branch of Harness.go driven on the CPU with stand-in events (elapsed 0.5 ms
        # each): "sync" reports the drain's own blocked time and records no device-end event,
        # "events" the end event's elapsed time.
        made = []

        class Event:
            def __init__(self, **kw):
                made.append(self)

            def record(self):
                pass

            def query(self):
                return True

            def elapsed_time(self, other):
                return 0.5
        for tail in ("sync", "events"):
            for trace in (False, True):
                made.clear()
                hs = self.harness(0)
                hs.device, hs._event, hs.fn, hs.sets = "cuda", Event, (lambda x: None), [[1], [2]]
                kind, stream, _, tails = hs.go("submission", {"tail": tail, "trace": trace})
                self.assertEqual((kind, stream), ("done", [500000, 500000]), (tail, trace))
                if tail == "sync":
                    self.assertTrue(all(isinstance(t, int) and 0 <= t < 500000 for t in tails), tails)
                    self.assertEqual(len(made), 4, "start and stream end a call, no device end")
                else:
                    self.assertEqual(tails, [500000, 500000])
                    self.assertEqual(len(made), 6)
                self.assertEqual(hs.driver_calls, 2)

    def test_no_driver_library_means_no_driver_sync(self):
        from kzoo_judge import child
        if os.path.exists("/dev/nvidiactl"):
            self.skipTest("a CUDA driver is here")
        self.assertIsNone(child._driver_sync())


class Bound(unittest.TestCase):
    def test_the_cases_own_bound_wins_the_boards_fills_in_and_zero_is_none(self):
        from kzoo_judge.judge import Case, Options, elementwise_bound
        board = Options({"atol": 0.01, "rtol": 0.01}, "cuda")
        fp8 = [Case("a", "w", {}, atol=0.01, rtol=0.125), Case("b", "w", {}, atol=0.01, rtol=0.125)]
        self.assertEqual(elementwise_bound(fp8, board), (0.01, 0.125))
        self.assertEqual(elementwise_bound([Case("a", "w", {})], board), (0.01, 0.01))
        self.assertEqual(elementwise_bound([Case("a", "w", {}, atol=0.02, rtol=0.01), Case("b", "w", {}, atol=0.01, rtol=0.03)],
                                           Options({}, "cuda")), (0.01, 0.01))  # the strictest of the cases
        self.assertIsNone(elementwise_bound([Case("a", "w", {})], Options({}, "cuda")))
        self.assertIsNone(elementwise_bound([Case("a", "w", {}, atol=0.0, rtol=0.0)], Options({}, "cuda")))

    def test_a_failed_case_names_its_worst_element_and_the_shape_it_ran(self):
        doc = h.judge(h.softmax_task(), """
            import torch
            def softmax(x):
                y = torch.softmax(x, dim=-1)
                y[-1, 2] += 3.0
                return y
        """)
        c = case0(doc)
        self.assertEqual(c["status"], "incorrect", c["message"])
        w = c["worst"]
        self.assertEqual(w["output"], "y")
        self.assertEqual(w["index"][1], 2)
        self.assertEqual(w["index"][0], w["shape"]["R"] - 1, w)  # the last row of that shape
        self.assertAlmostEqual(w["out"] - w["expected"], 3.0, places=4)
        json.dumps(doc, allow_nan=False)  # the document stays strict JSON
        # One failure ends every case: the reason says it once, naming them all.
        self.assertEqual(doc["overall"]["accept_reason"].count("correctness trials"), 1, doc["overall"]["accept_reason"])
        self.assertTrue(doc["overall"]["accept_reason"].startswith(", ".join(c["test_case_id"] for c in doc["cases"]) + ": "))

    def test_a_correct_case_reports_its_top_kernels_and_no_worst_element(self):
        c = case0(h.judge(h.softmax_task(), "import torch\ndef softmax(x):\n    return torch.softmax(x, dim=-1)\n"))
        self.assertTrue(c["correct"], c["message"])
        self.assertNotIn("worst", c)
        top = c["top_kernels"]
        self.assertTrue(top, c)
        self.assertTrue(any("softmax" in k["name"] for k in top), top)
        self.assertAlmostEqual(sum(k["share"] for k in top), 1.0, delta=0.05 if len(top) < 8 else 1.0)
        self.assertEqual([k["time_us"] for k in top], sorted((k["time_us"] for k in top), reverse=True))

    def test_a_call_outside_the_bound_is_incorrect_with_the_element_named(self):
        task = taskmod.Task(json.loads(json.dumps(h.softmax_task(tol=0.5))))
        box = h.Sandbox("""
            import torch
            def softmax(x):
                y = torch.softmax(x, dim=-1)
                y[0, 0] += 0.2
                return y
        """, task.module)
        try:
            cases = entry.cases_from_workload(task)
            for c in cases:
                c.atol, c.rtol = 0.01, 0.01
            from kzoo_judge.judge import Options
            doc = entry.run_judge(task, cases, inputs.Secret(b"k" * 32), "cpu", box.src, Options(dict(h.FAST), "cpu"),
                                  "test/kernel", "r")
        finally:
            box.close()
        c = case0(doc)
        self.assertEqual(c["status"], "incorrect", c["message"])
        self.assertIn("index [0, 0]", c["message"])
        self.assertIn("at shape", c["message"])
        self.assertEqual(c["guardrails"]["correctness_atol"], 0.01)


class FloorCalibrationInputs(unittest.TestCase):
    """Judge._calibrate_floors (GPU only in a run, driven here with the CPU's tensors): every
    floor call gets a fresh input set of the task's shapes and dtypes, allocated for it, and only
    one set a shape is drawn from the generator (drawing each cost 0.5 s of a GPU grade)."""

    def test_each_call_gets_fresh_tensors_and_one_set_is_drawn(self):
        from types import SimpleNamespace
        from kzoo_judge import timing
        from kzoo_judge.judge import Judge
        task = taskmod.Task(h.softmax_task())
        dims = {"R": 8, "C": 16}
        handed = []

        def one_by_one(child, n, make_set, out_slot, go, opts):
            sets = [make_set(k) for k in range(n)]
            handed.extend(sets)
            return sets, [1000] * n, [10] * n, [], 0
        stub = SimpleNamespace(task=task, device="cpu", secret=inputs.Secret(b"k" * 32),
                               phases=timing.Phases(None), _one_by_one=one_by_one,
                               _check_tails=Judge._check_tails, opt=SimpleNamespace(trace=True))
        stub._fresh_sets = lambda dims_, key, label: Judge._fresh_sets(stub, dims_, key, label)
        drawn = []
        real = inputs.make_inputs
        inputs.make_inputs = lambda *a, **k: drawn.append(a) or real(*a, **k)
        try:
            Judge._calibrate_floors(stub, SimpleNamespace(sleep_rate=1.0), dims, "key", {}, 0, timing.TailFloors())
        finally:
            inputs.make_inputs = real
        self.assertEqual(len(drawn), 1)
        self.assertEqual(len(handed), len(timing.FLOOR_LEVELS_US) * timing.FLOOR_CALLS)
        want = real(task, dims, 0, "cpu")
        for st in handed:
            self.assertEqual([(tuple(t.shape), t.dtype) for t in st], [(tuple(t.shape), t.dtype) for t in want])
        ptrs = [t.data_ptr() for st in handed for t in st]
        self.assertEqual(len(set(ptrs)), len(ptrs), "every call's tensors are its own allocation")


class FloorCalibrationOnceAChild(unittest.TestCase):
    """Judge._calibrate_cases on a GPU (driven here with stubs): the levels that spin the device
    are measured once a child, at its first shape, and every shape's floors are those levels
    beside its own trivial level; a second child (the other side of an A/B run, a restart) is
    calibrated anew, and a shape calibrated already is not calibrated again."""

    def _judge(self, calibrated):
        from types import SimpleNamespace
        from kzoo_judge import timing
        from kzoo_judge.judge import Judge
        task = taskmod.Task(h.softmax_task())
        trivial_tail = iter(range(10_000, 10_000_000, 1000))  # each shape's trivial tails its own
        made = self.made = []
        handed = self.handed = []

        def one_by_one(child, n, make_set, out_slot, go, opts):
            handed.extend(make_set(k) for k in range(n))
            return [], [0] * n, [next(trivial_tail)] * n, [], 0

        def fresh_sets(dims, key, label):
            made.append((key, label))
            return lambda k: ["set %d of %s" % (k, label)]

        def calibrate_floors(child, dims, key, trivial, out_slot, floors, make_set=None):
            calibrated.append((id(child), key, make_set))
            for us in timing.FLOOR_LEVELS_US:
                floors.add([us * 1000] * 3, [us * 10] * 3)
        return SimpleNamespace(task=task, device="cuda", opt=SimpleNamespace(pad_us=1000.0, warm_us=2000.0, tail="events", trace=False),
                               timing_dims=lambda case: (case.dims, ""), _dims_key=Judge._dims_key,
                               _arena_bytes=lambda dims, n: (0, 0), _arenas=lambda child, dims, n: None,
                               _paced=lambda: True, _one_by_one=one_by_one, _check_tails=Judge._check_tails,
                               _calibrate_floors=calibrate_floors, _fresh_sets=fresh_sets,
                               _spans_own=lambda child: getattr(child, "spans_ok", False))

    def test_the_levels_are_measured_once_a_child_and_shared_by_its_shapes(self):
        from types import SimpleNamespace
        from kzoo_judge import timing
        from kzoo_judge.judge import Judge
        calibrated = []
        judge = self._judge(calibrated)
        cases = [SimpleNamespace(dims={"R": r, "C": 16}) for r in (8, 16, 32)]
        child = SimpleNamespace(sleep_rate=1.0, tail_floors={}, level_floors=None)
        overheads = {}
        Judge._calibrate_cases(judge, child, cases, overheads)
        self.assertEqual(len(calibrated), 1, "one child, one calibration of the levels")
        self.assertEqual(calibrated[0][1], Judge._dims_key(cases[0].dims))
        # Every trivial call got an input set like a timed call's, one drawn set a shape, and
        # the levels calls are made from the first shape's.
        self.assertEqual(self.made, [(Judge._dims_key(c.dims), "overhead") for c in cases])
        self.assertTrue(self.handed and all(hs and hs[0].endswith("of overhead") for hs in self.handed), self.handed)
        self.assertEqual(calibrated[0][2](5), ["set 5 of overhead"])
        keys = [Judge._dims_key(c.dims) for c in cases]
        self.assertEqual(sorted(child.tail_floors), sorted(keys))
        trivial = set()
        for key in keys:
            levels = child.tail_floors[key].levels
            self.assertEqual(len(levels), 1 + len(timing.FLOOR_LEVELS_US), key)
            self.assertEqual(levels[1:], [(us * 1000, us * 10) for us in timing.FLOOR_LEVELS_US], key)
            self.assertEqual(levels[0][0], 0, "the trivial level leads")
            trivial.add(levels[0][1])
        self.assertEqual(len(trivial), 3, "each shape keeps its own trivial level")
        self.assertEqual(set(overheads), set(keys))

        Judge._calibrate_cases(judge, child, cases, overheads)
        self.assertEqual(len(calibrated), 1, "a shape calibrated already is not calibrated again")
        other = SimpleNamespace(sleep_rate=1.0, tail_floors={}, level_floors=None)
        Judge._calibrate_cases(judge, other, cases, overheads)
        self.assertEqual([c for c, *_ in calibrated], [id(child), id(other)], "a second child is calibrated anew")
        self.assertEqual(sorted(other.tail_floors), sorted(keys))

    def test_the_floors_are_measured_with_the_tail_the_timed_calls_use(self):
        from types import SimpleNamespace
        from kzoo_judge.judge import Judge
        seen, calibrated = [], []
        judge = self._judge(calibrated)
        judge.opt.tail = "sync"
        trivial_calls, levels = judge._one_by_one, judge._calibrate_floors

        def one_by_one(child, n, make_set, out_slot, go, opts):
            seen.append(("trivial", opts.get("tail")))
            return trivial_calls(child, n, make_set, out_slot, go, opts)

        def calibrate_floors(child, dims, key, trivial, out_slot, floors, make_set=None):
            seen.append(("levels", trivial.get("tail")))
            return levels(child, dims, key, trivial, out_slot, floors, make_set)
        judge._one_by_one, judge._calibrate_floors = one_by_one, calibrate_floors
        child = SimpleNamespace(sleep_rate=1.0, tail_floors={}, level_floors=None)
        Judge._calibrate_cases(judge, child, [SimpleNamespace(dims={"R": 8, "C": 16})], {})
        self.assertIn(("levels", "sync"), seen)
        self.assertEqual({tail for _, tail in seen}, {"sync"}, seen)

    def test_a_child_timed_by_device_spans_needs_no_levels(self):
        # Its figures come from the device's records, which see side-stream work themselves.
        from types import SimpleNamespace
        from kzoo_judge.judge import Judge
        calibrated = []
        judge = self._judge(calibrated)
        child = SimpleNamespace(sleep_rate=1.0, tail_floors={}, level_floors=None, spans_ok=True)
        overheads = {}
        Judge._calibrate_cases(judge, child, [SimpleNamespace(dims={"R": 8, "C": 16})], overheads)
        self.assertEqual(calibrated, [])
        self.assertEqual([len(f.levels) for f in child.tail_floors.values()], [1])
        self.assertEqual(len(overheads), 1, "the harness's overhead is still measured")

    def test_a_device_without_a_sleep_rate_gets_the_trivial_level_only(self):
        from types import SimpleNamespace
        from kzoo_judge.judge import Judge
        calibrated = []
        judge = self._judge(calibrated)
        child = SimpleNamespace(sleep_rate=0.0, tail_floors={}, level_floors=None)
        Judge._calibrate_cases(judge, child, [SimpleNamespace(dims={"R": 8, "C": 16})], {})
        self.assertEqual(calibrated, [])
        self.assertEqual([len(f.levels) for f in child.tail_floors.values()], [1])
