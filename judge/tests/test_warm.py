"""The judge started before its job (kzoo_judge.warm): handed the job later, it judges it as a
judge started with it would, and it never runs what it was not handed."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import unittest

import torch

from kzoo_judge import freezer
from tests import helpers as h

BENCHMARK = '''
METAS = [{"test_case_id": "c0", "params": {"workload": "synthetic", "shape": {"R": 64, "C": 256}}}]
from kzoo_judge.entry import run_package_benchmark
run_package_benchmark(METAS)
'''


class Warm:
    """`python3 -m kzoo_judge.warm` on a skeleton W (empty folders) with a control socket and a
    verdict channel, as runner/warm_judge.cpp starts it; the test fills W and hands it a job."""

    def __init__(self, judge_root=h.JUDGE_ROOT, ab=True):
        self.dir = tempfile.mkdtemp(prefix="kzoo-warm-test-")
        for d in (".kernel_package", "src", ".kzoo/run", ".kzoo/incumbent/src"):
            os.makedirs(os.path.join(self.dir, d))
        self.ours, theirs = socket.socketpair()
        self.verdict_r, verdict_w = os.pipe()
        env = {k: v for k, v in os.environ.items() if not k.startswith("KZOO_")}
        env.update(PYTHONPATH=judge_root, KZOO_DEVICE="cpu", KZOO_CONTROL_FD=str(theirs.fileno()),
                   KZOO_VERDICT_FD=str(verdict_w), KZOO_WARM_AB="1" if ab else "0")
        self.proc = subprocess.Popen([sys.executable, "-m", "kzoo_judge.warm"], cwd=self.dir, env=env,
                                     pass_fds=(theirs.fileno(), verdict_w), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, start_new_session=True)
        theirs.close()
        os.close(verdict_w)
        self.ready = self.proc.stderr.readline().decode(errors="replace")

    def fill(self, module_code, task_raw):
        with open(os.path.join(self.dir, "src", task_raw["definition"]["module"]), "w") as f:
            f.write(textwrap.dedent(module_code))
        with open(os.path.join(self.dir, ".kernel_package", "benchmark.py"), "w") as f:
            f.write(BENCHMARK)
        with open(os.path.join(self.dir, ".kzoo", "task.json"), "w") as f:
            json.dump(task_raw, f)

    def go(self, message, timeout=600):
        if message is not None:
            self.ours.sendall(message)
        self.ours.close()
        out, err = self.proc.communicate(timeout=timeout)
        os.set_blocking(self.verdict_r, False)
        try:
            verdict = os.read(self.verdict_r, 1 << 16).decode(errors="replace")
        except BlockingIOError:
            verdict = ""
        return self.proc.returncode, out, self.ready + err.decode(errors="replace"), verdict

    def job(self, key, **env):
        env = dict({"KZOO_TASK": os.path.join(self.dir, ".kzoo", "task.json"), "KZOO_KERNEL_ID": "test/warm",
                    "KZOO_OPTIONS": json.dumps(h.FAST)}, **env)
        return json.dumps({"env": env, "seed": key.hex()}).encode()

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        self.ours.close()
        os.close(self.verdict_r)
        shutil.rmtree(self.dir, ignore_errors=True)


class WarmJudge(unittest.TestCase):
    def setUp(self):
        self.warm = None

    def tearDown(self):
        if self.warm is not None:
            self.warm.close()

    def test_it_is_ready_before_the_job_and_judges_the_job_it_is_handed_later(self):
        self.warm = w = Warm(ab=False)  # the submission's child alone, as for a run without an incumbent
        self.assertIn("kzoo-judge: warm: ready, waiting for the job", w.ready)
        # torch's import and the device's start, each timed (on a GPU the driver's context is made
        # beside the import: cuda_early.py, and "the device" is what is left of it after)
        self.assertRegex(w.ready, r"torch [0-9.]+ s, the device [0-9.]+ s")
        # torch's shared-memory manager is up before the job (0.54 s of a CPU judge's clock), a
        # child of the judge's process, which names it one of its own helpers.
        self.assertIn("the shared-memory manager", w.ready)
        kids = freezer.children_map().get(w.proc.pid, [])
        self.assertIn("torch_shm_manager", [freezer.cmdline(p) for p in kids])
        w.fill(h.GOOD_SOFTMAX, h.softmax_task())
        key = os.urandom(32)
        rc, out, err, verdict = w.go(w.job(key))
        self.assertEqual(rc, 0, err[-3000:])
        doc = json.loads(out)
        self.assertTrue(doc["overall"]["accept"], doc["overall"])
        self.assertEqual(doc["kernel_id"], "test/warm")  # the job's environment, not the start's
        self.assertTrue(h.signature_ok(out, verdict, key))  # signed with the seed of the hand-over
        self.assertFalse(h.signature_ok(out, verdict, os.urandom(32)))
        self.assertRegex(err, r"a judge started ahead \(.*handed the job [0-9.]+ s after its start\); started [0-9.]+ s before its clock")

    def test_a_wrong_submission_handed_over_is_refused_as_it_would_be_cold(self):
        self.warm = w = Warm()
        w.fill("import torch\ndef softmax(x):\n    return x * 0\n", h.softmax_task())
        rc, out, err, verdict = w.go(w.job(os.urandom(32)))
        self.assertEqual(rc, 1, err[-3000:])
        self.assertFalse(json.loads(out)["overall"]["accept"])

    def test_an_ab_job_handed_over_times_the_incumbent_it_finds_in_the_skeleton(self):
        self.warm = w = Warm()
        w.fill(h.GOOD_SOFTMAX, h.softmax_task())
        with open(os.path.join(w.dir, ".kzoo", "incumbent", "src", "kernel.py"), "w") as f:
            f.write(textwrap.dedent(h.GOOD_SOFTMAX))
        opts = dict(h.FAST, incumbent_src=os.path.join(w.dir, ".kzoo", "incumbent", "src"))
        rc, out, err, verdict = w.go(w.job(os.urandom(32), KZOO_OPTIONS=json.dumps(opts)))
        self.assertIn(rc, (0, 1), err[-3000:])
        doc = json.loads(out)
        self.assertIn("incumbent", h.case0(doc), doc)  # both sides timed, one after the other
        self.assertIn("speedup", h.case0(doc), doc)

    def test_no_job_ends_it_quietly_with_nothing_run(self):
        self.warm = w = Warm()
        rc, out, err, verdict = w.go(None)
        self.assertEqual((rc, out, verdict), (0, b"", ""), err[-3000:])

    def test_a_message_that_does_not_parse_is_refused_before_anything_runs(self):
        self.warm = w = Warm()
        w.fill(h.GOOD_SOFTMAX, h.softmax_task())
        for bad in (b"{not json", json.dumps({"env": {"A": 1}, "seed": "00"}).encode(),
                    json.dumps({"env": {}, "seed": "zz"}).encode()):
            if self.warm is not w:
                self.warm = w = Warm()
                w.fill(h.GOOD_SOFTMAX, h.softmax_task())
            rc, out, err, verdict = w.go(bad)
            self.assertEqual(rc, 4, err[-3000:])
            self.assertEqual(out, b"")
            self.assertIn("refusing the run", err)
            w.close()
            self.warm = None

    def test_a_judge_changed_since_its_start_refuses_the_job(self):
        root = tempfile.mkdtemp(prefix="kzoo-warm-judge-")
        try:
            shutil.copytree(os.path.join(h.JUDGE_ROOT, "kzoo_judge"), os.path.join(root, "kzoo_judge"))
            self.warm = w = Warm(judge_root=root)
            with open(os.path.join(root, "kzoo_judge", "timing.py"), "a") as f:
                f.write("\n# updated\n")
            w.fill(h.GOOD_SOFTMAX, h.softmax_task())
            rc, out, err, verdict = w.go(w.job(os.urandom(32)))
            self.assertEqual(rc, 4, err[-3000:])
            self.assertEqual(out, b"")
            self.assertIn("the judge's files changed since this process started", err)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()


class CudaEarly(unittest.TestCase):
    """The driver's context made in a thread beside torch's import (cuda_early.py)."""

    def test_without_a_driver_it_says_why_and_raises_nothing(self):
        import ctypes
        try:
            ctypes.CDLL("libcuda.so.1")
            self.skipTest("a CUDA driver is here: CudaEarlyOnTheGpu covers it")
        except OSError:
            pass
        from kzoo_judge import cuda_early
        why = cuda_early.Early().join()
        self.assertIsNotNone(why)
        self.assertRegex(why, "no CUDA driver|cuInit failed")


@unittest.skipUnless(torch.cuda.is_available(), "needs a CUDA device")
class CudaEarlyOnTheGpu(unittest.TestCase):
    def test_torch_takes_the_context_made_beside_its_import(self):
        # a fresh process, so that the import really runs beside the thread
        code = ("from kzoo_judge import compare_ptx, cuda_early, draw_ptx, ptx_module\n"
                "e = cuda_early.Early(preload=(compare_ptx.PTX, draw_ptx.PTX))\n"
                "import torch\n"
                "assert e.join() is None, e.join()\n"
                "import ctypes\n"
                "lib = ctypes.CDLL('libcuda.so.1')\n"
                "early = ctypes.c_void_p(); dev = ctypes.c_int()\n"
                "assert lib.cuDeviceGet(ctypes.byref(dev), 0) == 0\n"
                "assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(early), dev) == 0\n"
                "torch.cuda.init(); x = torch.ones(4, device='cuda') * 2\n"
                "cur = ctypes.c_void_p(); assert lib.cuCtxGetCurrent(ctypes.byref(cur)) == 0\n"
                "assert cur.value == early.value, (cur.value, early.value)\n"
                "assert [c for c, _, _ in ptx_module._LOADED.values()] == [cur.value] * 2\n"
                "from kzoo_judge import compare_fused, draw_fused\n"
                "loads = []\n"
                "real = ptx_module._module_for\n"
                "ptx_module._module_for = lambda lib, ptx: (loads.append(ptx), real(lib, ptx))[1]\n"
                "assert compare_fused.Kernel.load()[0] is not None and draw_fused.Kernel.load()[0] is not None\n"
                "assert len(loads) == 2 and len(ptx_module._LOADED) == 2\n"
                "out = torch.empty(4099, dtype=torch.bfloat16, device='cuda')\n"
                "fused = draw_fused.Lazy(print)\n"
                "assert fused.usable('cuda', torch.bfloat16)\n"
                "print(float(x.sum()))\n")
        r = subprocess.run([sys.executable, "-c", code], cwd=os.path.join(os.path.dirname(__file__), ".."),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "8.0")
