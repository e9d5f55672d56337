"""Shared by the judge tests: tiny tasks written on the fly, submissions in temp dirs."""

import json
import os
import shutil
import tempfile
import textwrap

from kzoo_judge import entry, inputs
from kzoo_judge import task as taskmod
from kzoo_judge.judge import Options

SOFTMAX_REF = '''
import torch
def reference(x):
    return torch.softmax(x.to(torch.float64), dim=-1).to(x.dtype)
'''


def softmax_task(dtype="float32", tol=1e-5, comparator="relative-frobenius", extra_gates=None, **over):
    t = {
        "name": "tiny-softmax",
        "family": "test",
        "definition": {
            "entry_point": "softmax",
            "module": "kernel.py",
            "inputs": [{"name": "x", "shape": ["R", "C"], "dtype": dtype}],
            "outputs": [{"name": "y", "shape": ["R", "C"], "dtype": dtype}],
            "reference": {"language": "python/pytorch", "source": SOFTMAX_REF},
        },
        "workloads": {"synthetic": {
            "dims": ["R", "C"],
            "graded": [[4096, 4096]],
            "correctness": [[3, 17], [8, 64], [5, 129]],
            "measure": [[64, 256]],
        }},
        "grading": {"metric": "GB/s", "reward": {"kind": "absolute-uncapped", "canonical_work": "2*R*C*4"},
                    "tolerance": {"value": tol, "comparator": comparator}},
    }
    if extra_gates:
        t["grading"]["extra_gates"] = extra_gates
    t["definition"].update(over)
    return t


GOOD_SOFTMAX = '''
import torch
def softmax(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
'''


class Sandbox:
    """A temp workdir with src/<module>; cleans itself up."""

    def __init__(self, module_code, module="kernel.py"):
        self.dir = tempfile.mkdtemp(prefix="kzoo-judge-test-")
        self.src = os.path.join(self.dir, "src")
        os.makedirs(self.src)
        with open(os.path.join(self.src, module), "w") as f:
            f.write(textwrap.dedent(module_code))

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


FAST = {"iterations": 6, "warmup": 1, "trials": 2, "batch": 3, "call_timeout_s": 60}


def judge(task_raw, module_code, options=None, device="cpu", key=b"k" * 32, kernel_id="test/kernel"):
    """Run the judge in this process (the child is still a separate process). Returns the document."""
    task = taskmod.Task(json.loads(json.dumps(task_raw)))
    box = Sandbox(module_code, task.module)
    try:
        opts = dict(FAST)
        # KZOO_TEST_OPTIONS: KZOO_OPTIONS keys under which to run the suite's judges (a GPU run of
        # the tricks under a judge option before it becomes the default: docs/GPU.md, session 19)
        opts.update(json.loads(os.environ.get("KZOO_TEST_OPTIONS") or "{}"))
        opts.update(options or {})
        cases = entry.cases_from_workload(task)
        return entry.run_judge(task, cases, inputs.Secret(key), device, box.src, Options(opts, device), kernel_id, "test-runner")
    finally:
        box.close()


def case0(doc):
    return doc["cases"][0]


JUDGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_cli(task_raw, module_code, extra_args=(), key=None, timeout=600, env_extra=None):
    """Run `python3 -m kzoo_judge run` as a separate judge process with a seed on an fd and a
    verdict channel (KZOO_VERDICT_FD), as the runner does.

    Returns (returncode, stdout bytes, stderr text, key, what the verdict channel held)."""
    import subprocess
    import sys
    key = key or os.urandom(32)
    box = Sandbox(module_code, task_raw["definition"].get("module", "kernel.py"))
    try:
        tpath = os.path.join(box.dir, "task.json")
        with open(tpath, "w") as f:
            json.dump(task_raw, f)
        r, w = os.pipe()
        os.write(w, key.hex().encode())
        os.close(w)
        vr, vw = os.pipe()
        env = dict(os.environ)
        env["KZOO_SEED_FD"] = str(r)
        env["KZOO_VERDICT_FD"] = str(vw)
        env["PYTHONPATH"] = JUDGE_ROOT
        env.update(env_extra or {})
        args = [sys.executable, "-m", "kzoo_judge", "run", "--task", tpath, "--module-dir", box.src, "--device", "cpu",
                "--iterations", "6", "--warmup", "1", "--trials", "2"] + list(extra_args)
        try:
            p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(r, vw), env=env,
                               cwd=box.dir, timeout=timeout)
        finally:
            os.close(r)
            os.close(vw)
        os.set_blocking(vr, False)
        try:
            verdict = os.read(vr, 1 << 16).decode(errors="replace")
        except BlockingIOError:
            verdict = ""
        os.close(vr)
        return p.returncode, p.stdout, p.stderr.decode(errors="replace"), key, verdict
    finally:
        box.close()


def signature_ok(stdout, stderr, key):
    """The last non-empty line of `stderr` (or of a verdict channel's text) signs `stdout` under `key`."""
    import hashlib
    import hmac
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if not lines or not lines[-1].startswith("kzoo-judge-signature: "):
        return False
    sig = lines[-1].split(": ", 1)[1].strip()
    return hmac.compare_digest(sig, hmac.new(key, stdout, hashlib.sha256).hexdigest())


_HOST_BUILDS = {}


def host_build(test_case, source):
    """A kernel source of the judge's (compare_narrow.cu, draw_normal.cu) built for the host with
    KZOO_HOST, as a ctypes library: built once a process. The same flags as scripts/gen_ptx.sh's
    where they bear on the arithmetic (no fused multiply-add), so it computes what the PTX does."""
    if source not in _HOST_BUILDS:
        import ctypes
        import subprocess
        cxx = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
        if cxx is None:
            why = "no C++ compiler to build %s for the host" % os.path.basename(source)
            if test_case is None:
                raise RuntimeError(why)
            test_case.fail(why)
        d = tempfile.mkdtemp(prefix="kzoo-host-build-")
        so = os.path.join(d, os.path.basename(source) + ".so")
        subprocess.run([cxx, "-x", "c++", "-std=c++20", "-O2", "-ffp-contract=off", "-fno-strict-aliasing", "-fPIC",
                        "-shared", "-DKZOO_HOST", "-o", so, source], check=True)
        _HOST_BUILDS[source] = ctypes.CDLL(so)
        shutil.rmtree(d)  # the library stays mapped
    return _HOST_BUILDS[source]


def check_ptx_module(test_case, source, module, gen_name, kernels, banned):
    """A judge PTX module (compare_ptx.py, draw_ptx.py) against its source: it names the source's
    SHA-256 and holds each kernel and none of `banned` ({word: why}); where clang is (CI installs
    it: there its absence fails) it is what scripts/gen_ptx.sh makes of the source."""
    import hashlib
    import subprocess
    with open(source, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    name = os.path.basename(module.__file__)
    test_case.assertEqual(module.SOURCE_SHA256, sha, "%s changed: run scripts/gen_ptx.sh %s" % (os.path.basename(source), gen_name))
    for k in kernels:
        test_case.assertTrue(".entry %s(" % k in module.PTX, "no kernel %s in %s" % (k, name))
    for word, why in banned.items():
        test_case.assertFalse(word in module.PTX, "%s in %s: %s" % (word, name, why))
    if shutil.which("clang") is None:
        if os.environ.get("CI"):
            test_case.fail("clang is missing: scripts/install-deps.sh installs it")
        return
    d = tempfile.mkdtemp(prefix="kzoo-ptx-")
    try:
        made = os.path.join(d, name)
        script = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "gen_ptx.sh")
        subprocess.run(["bash", script, gen_name], env=dict(os.environ, DST=made), check=True, stdout=subprocess.DEVNULL)
        with open(made) as f, open(module.__file__) as g:
            test_case.assertTrue(g.read() == f.read(), "%s is not what scripts/gen_ptx.sh makes: run it" % name)
    finally:
        shutil.rmtree(d)


def input_task(specs, dims=("R", "C")):
    """A task whose inputs are `specs` (tensorSpecs) over `dims`, for the inputs' tests."""
    return taskmod.Task({
        "name": "t", "family": "f",
        "definition": {"entry_point": "f", "inputs": specs, "outputs": [{"name": "y", "shape": ["R"], "dtype": "float32"}],
                       "reference": {"language": "python/pytorch", "source": "def reference(*a): pass"}},
        "workloads": {"synthetic": {"dims": list(dims), "graded": [], "correctness": []}},
        "grading": {"metric": "GB/s", "tolerance": {"value": 0, "comparator": "exact"}},
    })
