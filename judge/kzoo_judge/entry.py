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

from . import task as taskmod
from .inputs import Secret

PR_SET_DUMPABLE = 4


def harden_judge():
    """Non-dumpable: /proc/<judge>/{mem,environ,fd} become unreadable to the
    child (same uid, no CAP_SYS_PTRACE), and no core dump holds the seed."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            print("kzoo-judge: warning: prctl(PR_SET_DUMPABLE, 0) failed", file=sys.stderr)
    except OSError as e:
        print("kzoo-judge: warning: cannot make the judge non-dumpable: %s" % e, file=sys.stderr)


def read_secret():
    """The seed from KZOO_SEED_FD (hex; the fd is closed), else a random one with a warning."""
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


def emit(doc, secret):
    """The one document on stdout, then the signature as the LAST line of stderr."""
    data = (json.dumps(doc, indent=2, sort_keys=False) + "\n").encode()
    sys.stderr.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    sys.stderr.write("kzoo-judge-signature: %s\n" % secret.sign(data))
    sys.stderr.flush()
    return 0 if doc["overall"]["accept"] else 1


def cases_from_metas(task, metas, only=None):
    from .judge import Case
    out = []
    for m in metas:
        if only and m["test_case_id"] not in only:
            continue
        p = m.get("params") or {}
        wname, w = task.workload(p.get("workload"))
        dims = task.bind(w, p.get("shape", {}))
        graded = [task.bind(w, s) for s in w.get("graded", [])]
        idx = next((i for i, g in enumerate(graded) if taskmod.same_dims(g, dims)), 0)
        out.append(Case(m["test_case_id"], wname, dims, m.get("metrics"), idx))
    return out


def cases_from_workload(task, workload=None):
    from .judge import Case
    wname, w = task.workload(workload)
    return [Case("%s-%d" % (wname, i), wname, task.bind(w, s), None, i) for i, s in enumerate(w.get("graded", []))]


def run_judge(task, cases, secret, device, module_dir, options, kernel_id, runner_id):
    from .judge import Judge, Options
    _, dev_class = device_class()
    opt = options if isinstance(options, Options) else Options(options, device)
    module_path = os.path.join(module_dir, task.module)
    j = None
    try:
        j = Judge(task, secret, device, module_path, module_dir, opt, dev_class, l2_bytes(device, dev_class), kernel_id, runner_id)
        return j.run(cases)
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
        "overall": {"accept": False, "accept_reason": message, "build_ok": True},
        "cases": [{"test_case_id": c.id, "status": "error", "correct": False, "error_rel": None, "error_abs_max": None,
                   "metrics": {}, "samples": 0, "spread": None, "gates": {}, "message": message} for c in cases],
    }


def run_package_benchmark(metas, argv=None):
    """benchmark.py's whole job: judge the package in the current workdir, print one document."""
    harden_judge()
    secret = read_secret()
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
    task = taskmod.load(os.environ.get("KZOO_TASK") or os.path.join(".kzoo", "task.json"))
    device = default_device()
    cases = cases_from_metas(task, metas, only)
    doc = run_judge(task, cases, secret, device, os.path.join(os.getcwd(), "src"), options,
                    os.environ.get("KZOO_KERNEL_ID", "unknown"), os.environ.get("KZOO_RUNNER_ID", os.uname().nodename))
    code = emit(doc, secret)
    sys.exit(code)


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
    return 0
