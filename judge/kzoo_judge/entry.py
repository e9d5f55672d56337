"""Glue between a kernel package's trusted harness files and the judge.

`benchmark.py` calls run_package_benchmark(KERNEL_ZOO_TEST_CASE_METAS);
`build_test_env.py` calls build_test_env(). Both run in the workdir W laid out
by the runner (docs/ARCHITECTURE.md, "The package <-> judge contract").
"""

import ast
import ctypes
import json
import os
import sys

from . import spawn
from . import task as taskmod

PR_SET_DUMPABLE = 4

# (what, seconds since the process started) at the steps of benchmark.py before the judge's own
# clock starts (Judge.phases), logged when it does: on an H200 that stretch was 3.8 s of a
# 13.4 s grade, and the judge's phases do not see it.
_STARTUP = []


def _process_age_s():
    """Seconds since this process started (its start time in /proc/self/stat against
    /proc/uptime, to a clock tick); None where unreadable."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        return uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
    except (OSError, ValueError, IndexError):
        return None


# A judge started before its job (warm.py): (its pool, its verdict channel) from the job's
# hand-over on, and the marks of its own start with the process's age at the hand-over.
_WARM = None
_WARM_START = None


def _mark(what):
    age = _process_age_s()
    if age is not None:
        _STARTUP.append((what, age))


def _went(pool, verdict_fd):
    """warm.py: the job was handed over now. The startup marks from here on count from now."""
    global _WARM, _WARM_START
    _WARM = (pool, verdict_fd)
    age = _process_age_s()
    _WARM_START = (list(_STARTUP), age)
    del _STARTUP[:]


def _steps(marks, origin):
    parts, last = [], origin
    for what, age in marks:
        parts.append("%s %.2f s" % (what, age - last))
        last = age
    return parts, last


def _startup_summary():
    """"started 3.75 s before its clock: interpreter and kzoo_judge 0.08 s, ...": the stretch
    before the judge's clock, step by step; for a judge started before its job, counted from
    the job's hand-over, its own start said apart. None without marks."""
    if not _STARTUP:
        return None
    origin, prefix = 0.0, ""
    if _WARM_START is not None and _WARM_START[1] is not None:
        own, origin = _WARM_START
        parts, last = _steps(own, 0.0)
        prefix = "a judge started ahead (%s; handed the job %.2f s after its start); " % (", ".join(parts), origin)
    parts, last = _steps(_STARTUP, origin)
    return "%sstarted %.2f s before its clock: %s%s" % (prefix, last - origin, ", ".join(parts), _bytecode_note())


def _bytecode_note():
    """"; torch's bytecode: current (kzoo's cache /x)": whether torch's import could load compiled
    modules or compiled them all (bytecode.py: seconds of every start where it could not)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return ""
    from . import bytecode
    where = "kzoo's cache %s" % sys.pycache_prefix if sys.pycache_prefix else "beside its sources"
    return "; torch's bytecode: %s (%s)" % (bytecode.state(torch), where)


def harden_judge():
    """Non-dumpable: /proc/<judge>/{mem,environ,fd} become unreadable to the
    child (same uid, no CAP_SYS_PTRACE), and no core dump holds the seed."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            print("kzoo-judge: warning: prctl(PR_SET_DUMPABLE, 0) failed", file=sys.stderr)
    except OSError as e:
        print("kzoo-judge: warning: cannot make the judge non-dumpable: %s" % e, file=sys.stderr)


def take_verdict_fd():
    """The verdict channel (KZOO_VERDICT_FD, a pipe the runner reads after the run), taken
    before any child is started: removed from the environment and made non-inheritable, so
    no child can write on it. None when the judge runs without a runner (the CLI)."""
    fd = os.environ.pop("KZOO_VERDICT_FD", None)
    if fd is None:
        return None
    try:
        n = int(fd)
        os.set_inheritable(n, False)
        return n
    except (ValueError, OSError) as e:
        raise SystemExit("kzoo-judge: KZOO_VERDICT_FD=%s is not an open descriptor: %s" % (fd, e))


def read_secret():
    """The seed from KZOO_SEED_FD (hex; the fd is closed), else a random one with a warning."""
    from .inputs import Secret  # torch comes with it: not needed by build_test_env
    fd = os.environ.pop("KZOO_SEED_FD", None)
    if fd is None:
        print("kzoo-judge: warning: KZOO_SEED_FD is not set; using a random seed (the signature cannot be verified by anyone)",
              file=sys.stderr)
        return Secret(os.urandom(32))
    try:
        n = int(fd)
        chunks = []
        while True:
            b = os.read(n, 4096)
            if not b:
                break
            chunks.append(b)
        os.close(n)
        key = bytes.fromhex(b"".join(chunks).decode("ascii").strip())
    except (ValueError, OSError, UnicodeDecodeError) as e:
        raise SystemExit("kzoo-judge: KZOO_SEED_FD=%s does not hold a hex seed: %s" % (fd, e))
    return Secret(key)


def _catalog_path():
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return os.environ.get("KZOO_DEVICE_CLASSES") or os.path.join(here, "catalog", "device_classes.json")


# Used only when catalog/device_classes.json is not reachable from the sandbox.
_FALLBACK_CLASSES = {"default": "h200", "classes": {"h200": {
    "bandwidth_GBps": 4800, "l2_bytes": 52428800,
    "tflops": {"float64": 67, "float32": 67, "bfloat16": 989, "float16": 989,
               "float8_e4m3fn": 1979, "float8_e5m2": 1979, "int8": 1979}}}}


def device_class(name=None):
    try:
        with open(_catalog_path(), encoding="utf-8") as f:
            table = json.load(f)
    except (OSError, ValueError):
        print("kzoo-judge: warning: %s not readable, using built-in h200 figures" % _catalog_path(), file=sys.stderr)
        table = _FALLBACK_CLASSES
    name = name or os.environ.get("KZOO_DEVICE_CLASS") or table.get("default", "h200")
    if name not in table["classes"]:
        raise SystemExit("kzoo-judge: device class %r is not in %s (known: %s)" % (name, _catalog_path(), ", ".join(table["classes"])))
    return name, table["classes"][name]


def l2_bytes(device, dev_class):
    if device == "cuda":
        import torch
        p = torch.cuda.get_device_properties(0)
        real = getattr(p, "L2_cache_size", None) or getattr(p, "l2_cache_size", None)
        if real:
            return int(real)
    return int(dev_class.get("l2_bytes", 0))


def default_device():
    d = os.environ.get("KZOO_DEVICE")
    if d:
        return d
    import torch
    return "cuda" if torch.cuda.is_available() else "cpu"


# The judge's exit status when it failed itself (runner/grade.hpp kJudgeInternalErrorStatus):
# an infrastructure error that the worker retries, never a verdict on the submission.
INTERNAL_ERROR_STATUS = 3


def emit(doc, secret, verdict_fd=None):
    """The one document on stdout, then its signature: on the verdict channel when the runner
    gave one (nothing printed on stderr afterwards -- torch's exit-time warnings, a child's last
    words -- can then hide it), else as the LAST line of stderr (the CLI). Returns the exit
    status: 0 accepted, 1 rejected, INTERNAL_ERROR_STATUS when the judge itself failed."""
    data = (json.dumps(doc, indent=2, sort_keys=False) + "\n").encode()
    sys.stderr.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    line = "kzoo-judge-signature: %s\n" % secret.sign(data)
    if verdict_fd is not None:
        os.write(verdict_fd, line.encode())
        os.close(verdict_fd)
    else:
        sys.stderr.write(line)
        sys.stderr.flush()
    if doc.get("overall", {}).get("judge_error"):
        return INTERNAL_ERROR_STATUS
    return 0 if doc["overall"]["accept"] else 1


def cases_from_metas(task, metas, only=None):
    Case = taskmod.Case
    out = []
    for m in metas:
        if only and m["test_case_id"] not in only:
            continue
        p = m.get("params") or {}
        wname, w = task.workload(p.get("workload"))
        dims = task.bind(w, p.get("shape", {}))
        graded = [task.bind(w, s) for s in w.get("graded", [])]
        idx = next((i for i, g in enumerate(graded) if taskmod.same_dims(g, dims)), 0)
        tol = m.get("tolerance") if isinstance(m.get("tolerance"), dict) else {}
        num = lambda v: float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 else None  # noqa: E731
        out.append(Case(m["test_case_id"], wname, dims, m.get("metrics"), idx,
                        num(tol.get("correctness_atol")), num(tol.get("correctness_rtol"))))
    return out


def cases_from_workload(task, workload=None):
    Case = taskmod.Case
    wname, w = task.workload(workload)
    return [Case("%s-%d" % (wname, i), wname, task.bind(w, s), None, i) for i, s in enumerate(w.get("graded", []))]


def judge_version():
    """kzoo_judge.__version__ and the first 12 hex digits of the SHA-256 of its sources."""
    import hashlib
    from . import __version__
    here = os.path.dirname(os.path.abspath(__file__))
    h = hashlib.sha256()
    for name in sorted(os.listdir(here)):
        if name.endswith(".py"):
            with open(os.path.join(here, name), "rb") as f:
                h.update(name.encode() + b"\0" + f.read())
    return "%s+%s" % (__version__, h.hexdigest()[:12])


def _driver_version():
    """The NVIDIA driver's version, from NVML where the judge's Python has it, else the
    kernel module's own report; None when neither is readable."""
    try:
        import pynvml
        pynvml.nvmlInit()
        try:
            v = pynvml.nvmlSystemGetDriverVersion()
            return v.decode() if isinstance(v, bytes) else str(v)
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - optional: NVML may be absent or refuse in a sandbox
        pass
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8", errors="replace") as f:
            import re
            m = re.search(r"Kernel Module\s+(?:for \S+\s+)?([0-9][0-9.]+)", f.read())
            return m.group(1) if m else None
    except OSError:
        return None


def provenance(device, task_path=None, rules_commit=None):
    """What produced a result (schemas/benchmark_output.schema.json: provenance)."""
    import hashlib
    import platform
    import re
    import torch
    sha = None
    if task_path:
        try:
            with open(task_path, "rb") as f:
                sha = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            sha = None
    cuda = device == "cuda" and torch.cuda.is_available()
    rules = rules_commit if isinstance(rules_commit, str) and re.fullmatch(r"[0-9a-f]{7,64}", rules_commit) else None
    return {
        "device": "cuda" if device == "cuda" else "cpu",
        "gpu_name": torch.cuda.get_device_name(0)[:200] if cuda else None,
        "driver": (_driver_version() or None) if cuda else None,
        "cuda": str(torch.version.cuda) if cuda and torch.version.cuda else None,
        "torch": str(torch.__version__)[:64],
        "python": platform.python_version(),
        "judge": judge_version(),
        "task_sha256": sha,
        "rules_commit": rules,
    }


def _profiled(fn, *args, top=35):
    """fn(*args) under cProfile; the functions that took the most time, by their own time and by
    their cumulative time, are logged on stderr (the judge's option "profile")."""
    import cProfile
    import io
    import pstats
    prof = cProfile.Profile()
    try:
        return prof.runcall(fn, *args)
    finally:
        for key in ("tottime", "cumulative"):
            text = io.StringIO()
            pstats.Stats(prof, stream=text).strip_dirs().sort_stats(key).print_stats(top)
            body = text.getvalue()
            body = body[body.find("   ncalls"):] if "   ncalls" in body else body
            print("kzoo-judge: profile by %s:\n%s" % (key, body.rstrip()), file=sys.stderr, flush=True)


def run_judge(task, cases, secret, device, module_dir, options, kernel_id, runner_id, task_path=None, early=None):
    from .judge import Judge, Options
    class_name, dev_class = device_class()
    opt = options if isinstance(options, Options) else Options(options, device)
    module_path = os.path.join(module_dir, task.module)
    rules = (options or {}).get("rules_commit") if isinstance(options, dict) else None
    j = None
    try:
        prov = provenance(device, task_path, rules or os.environ.get("KZOO_RULES_COMMIT"))
        if _STARTUP:
            _mark("the device and provenance")
            print("kzoo-judge: %s" % _startup_summary(), file=sys.stderr, flush=True)
        j = Judge(task, secret, device, module_path, module_dir, opt, dev_class, l2_bytes(device, dev_class), kernel_id, runner_id,
                  device_class_name=class_name, provenance=prov, early=early)
        if not opt.profile:
            return j.run(cases)
        return _profiled(j.run, cases)
    except Exception as e:  # noqa: BLE001 - the judge still owes the runner one document
        import traceback
        traceback.print_exc(file=sys.stderr)
        return internal_error_document(cases, kernel_id, runner_id, device, "judge internal error: %s: %s" % (type(e).__name__, e))
    finally:
        if j is not None:
            j._drop_all()


def internal_error_document(cases, kernel_id, runner_id, device, message):
    import time
    from .judge import arch
    return {
        "schema_version": "1", "kernel_id": kernel_id, "ran_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runner_id": runner_id, "arch": arch(device),
        "overall": {"accept": False, "accept_reason": message, "build_ok": True, "judge_error": True},
        "cases": [{"test_case_id": c.id, "status": "error", "correct": False, "error_rel": None, "error_abs_max": None,
                   "metrics": {}, "samples": 0, "spread": None, "gates": {}, "message": message} for c in cases],
    }


def run_package_benchmark(metas, argv=None):
    """benchmark.py's whole job: judge the package in the current workdir, print one document."""
    if _WARM is not None:
        # Started before its job (warm.py): hardened, its channel taken, its children up.
        early, verdict_fd = _WARM
        if early is not None:
            early.fit(os.path.join(os.getcwd(), "src"), _incumbent_src())
        return _run_package_benchmark(metas, argv, early, verdict_fd)
    _mark("interpreter and kzoo_judge")
    harden_judge()
    verdict_fd = take_verdict_fd()
    # The first child starts now, before this process imports torch (read_secret does): the
    # two imports run at once (spawn.py). Its environment has neither the seed's descriptor
    # nor the verdict channel's, and it inherits no descriptor but its socket. So does the
    # incumbent's, in an A/B run.
    early = spawn.early(os.path.join(os.getcwd(), "src"), os.environ.get("KZOO_DEVICE"), _incumbent_src())
    return _run_package_benchmark(metas, argv, early, verdict_fd)


def _run_package_benchmark(metas, argv, early, verdict_fd):
    try:
        code = _judge_package(metas, argv, early, verdict_fd)
    finally:
        if early is not None:
            early.kill()  # a no-op once the judge took it
    _leave(code)


def _leave(code):
    """Ends the judge's process the moment its document is out, without the interpreter's
    teardown. Why: that teardown (torch's modules, the tensors and arenas still referenced,
    on a GPU the CUDA context) took 0.54 s of a 6.2 s `kzoo grade` on the CPU, after the
    verdict and inside the time a user waits for it. Nothing after the document is the judge's
    to wait for: its children are killed (run_judge, above), the sandbox's /tmp and /dev/shm
    go with the sandbox, and torch's shared-memory manager removes a client's files when its
    connection closes."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _incumbent_src():
    """The A/B run's incumbent folder from KZOO_OPTIONS, read before torch's import only to start
    its child early; None when there is none or the options do not parse (the judge reports
    what is wrong with them)."""
    try:
        options = json.loads(os.environ.get("KZOO_OPTIONS") or "{}")
        src = options.get("incumbent_src") if isinstance(options, dict) else None
    except ValueError:
        return None
    return os.path.abspath(src) if isinstance(src, str) and src else None


def _judge_package(metas, argv, early, verdict_fd):
    _mark("the early children")
    secret = read_secret()
    _mark("torch and the seed")
    argv = sys.argv[1:] if argv is None else argv
    only = None
    if argv:
        if len(argv) == 2 and argv[0] == "--cases":
            only = [c for c in argv[1].split(",") if c]
        else:
            print("usage: benchmark.py [--cases id,id]", file=sys.stderr)
            return 2
    options = json.loads(os.environ.get("KZOO_OPTIONS") or "{}")
    if options.get("cases") and only is None:
        only = list(options["cases"])
    task_path = os.environ.get("KZOO_TASK") or os.path.join(".kzoo", "task.json")
    task = taskmod.load(task_path)
    device = default_device()
    cases = cases_from_metas(task, metas, only)
    doc = run_judge(task, cases, secret, device, os.path.join(os.getcwd(), "src"), options,
                    os.environ.get("KZOO_KERNEL_ID", "unknown"), os.environ.get("KZOO_RUNNER_ID", os.uname().nodename),
                    task_path, early=early)
    return emit(doc, secret, verdict_fd)


def _literal_metas(path):
    """KERNEL_ZOO_TEST_CASE_METAS from a harness file, read as a literal (never executed)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "KERNEL_ZOO_TEST_CASE_METAS" for t in node.targets):
            return ast.literal_eval(node.value)
    return []


def build_test_env(metas=None, workdir=None):
    """Deterministic preparation: W/.kzoo/run/manifest.json with the cases and resolved shapes. Touches nothing else."""
    w = workdir or os.getcwd()
    task = taskmod.load(os.environ.get("KZOO_TASK") or os.path.join(w, ".kzoo", "task.json"))
    if metas is None:
        bp = os.path.join(w, ".kernel_package", "benchmark.py")
        metas = _literal_metas(bp) if os.path.exists(bp) else []
    cases = cases_from_metas(task, metas) if metas else cases_from_workload(task)
    manifest = {
        "task": task.name,
        "module": os.path.join("src", task.module),
        "module_present": os.path.isfile(os.path.join(w, "src", task.module)),
        "entry_point": task.entry_point,
        "cases": [{
            "test_case_id": c.id,
            "workload": c.workload,
            "shape": c.dims,
            "input_shapes": {s.name: list(sh) for s, sh in zip(task.inputs, task.input_shapes(c.dims))},
            "output_shapes": {s.name: list(sh) for s, sh in zip(task.outputs, task.output_shapes(c.dims))},
            "canonical_work": task.work(c.dims) if task.canonical_work else None,
        } for c in cases],
    }
    run_dir = os.path.join(w, ".kzoo", "run")
    os.makedirs(run_dir, exist_ok=True)
    tmp = os.path.join(run_dir, "manifest.json.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(run_dir, "manifest.json"))
    print("kzoo-judge: wrote %s (%d cases)" % (os.path.join(run_dir, "manifest.json"), len(cases)), file=sys.stderr)
    return run_build_step(w)


def run_build_step(w):
    """The package's own build step, `src/build.py`, when it has one (docs/TASKS.md): run from W
    with src/ importable, in this step's sandbox (no network, no secret; the runner points every
    compiler cache into W/.kzoo/run/cache so that benchmark.py finds what it built). A failed
    build ends the step (SystemExit), which rejects the run with the build's stderr."""
    script = os.path.join(w, "src", "build.py")
    if not os.path.isfile(script):
        return 0
    import subprocess
    import time
    src = os.path.join(w, "src")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    for var in ("TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "TORCHINDUCTOR_CACHE_DIR", "CUDA_CACHE_PATH", "XDG_CACHE_HOME"):
        if env.get(var):
            os.makedirs(env[var], exist_ok=True)
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, script], cwd=w, env=env, stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(),
                       stderr=sys.stderr.fileno())
    if p.returncode != 0:
        # Raised, not returned: a harness that ignores build_test_env()'s value still fails the step.
        raise SystemExit("kzoo-judge: the package's build step (src/build.py) failed with exit status %d after %.1f s"
                         % (p.returncode, time.monotonic() - t0))
    print("kzoo-judge: the package's build step (src/build.py) took %.1f s" % (time.monotonic() - t0), file=sys.stderr)
    return 0
