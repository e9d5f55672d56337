"""`python3 -m kzoo_judge calibrate`: measure a task's E (floor) and D (drop).

E = the comparator's measure between the reference and `independent.py`'s
`independent(*inputs)` (an independent correct implementation): the largest
seen. D = the measure between the reference and `drop.py`'s `drop(*inputs)`
(a variant that ignores the task's distinguishing feature): the smallest
seen. Both over several seeds at every correctness shape plus one timing
shape (graded on a GPU, measure on the CPU). A sound tolerance sits well
above E and far below D. Trusted catalog code only; no child process.
"""

import hashlib
import json
import math
import os
import sys

import torch

from . import compare, inputs, reference
from . import task as taskmod


def _load_fn(path, name):
    ns = {"__name__": "kzoo_calibration_" + name}
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), ns)  # trusted: the catalog's own calibration helpers
    fn = ns.get(name)
    if not callable(fn):
        raise SystemExit("kzoo-judge calibrate: %s defines no function %r" % (path, name))
    return fn


def _run(fn, task, pristine):
    args = [t.clone() for t in pristine]
    with torch.no_grad():
        ret = reference.as_list(fn(*args))
    return [t.detach() for t in ret] + [args[task.input_index(n)] for n in task.in_place]


def calibrate(task_dir, device="cpu", seeds=4, workload=None):
    task = taskmod.load(os.path.join(task_dir, "task.json"))
    ref = reference.load(task)
    indep = _load_fn(os.path.join(task_dir, "independent.py"), "independent")
    drop = _load_fn(os.path.join(task_dir, "drop.py"), "drop")
    wname, w = task.workload(workload)
    shapes = [task.bind(w, s) for s in w.get("correctness", [])]
    extra = w.get("graded" if device != "cpu" else "measure") or []
    if extra:
        shapes.append(task.bind(w, extra[0]))
    secret = inputs.Secret(hashlib.sha256(("kzoo-calibrate/" + task.name).encode()).digest())
    specs = reference.expected_specs(task)
    E, D = 0.0, math.inf
    for si, dims in enumerate(shapes):
        for k in range(seeds):
            x = inputs.make_inputs(task, dims, secret.derive("calibrate", si, k), device)
            exp = reference.run(ref, task, x)
            e = compare.measure(_run(indep, task, x), exp, specs, task.comparator, task.row_pass)
            d = compare.measure(_run(drop, task, x), exp, specs, task.comparator, task.row_pass)
            E = max(E, e)
            D = min(D, d)
    basis = ("%d seeds x %d shapes of workload %s (correctness shapes + one %s shape), device %s, torch %s; "
             "E = largest %s measure of independent.py vs the reference, D = smallest of drop.py vs the reference"
             % (seeds, len(shapes), wname, "graded" if device != "cpu" else "measure", device, torch.__version__, task.comparator))
    return task, {"measured_floor_E": E, "measured_drop_D": D, "basis": basis}


def main(args):
    task, res = calibrate(args.task_dir, args.device, args.seeds, args.workload)
    for k in ("measured_floor_E", "measured_drop_D"):
        if not math.isfinite(res[k]):
            print("kzoo-judge calibrate: %s is not finite (%r): check independent.py / drop.py" % (k, res[k]), file=sys.stderr)
            return 1
    print(json.dumps(res, indent=2))
    if args.write:
        path = os.path.join(args.task_dir, "task.json")
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
        raw["grading"]["tolerance"].update(res)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(raw, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.replace(path + ".tmp", path)
        print("kzoo-judge calibrate: wrote %s" % path, file=sys.stderr)
    tol = task.tolerance
    if not (res["measured_floor_E"] < tol < res["measured_drop_D"]):
        print("kzoo-judge calibrate: warning: tolerance %g is not between E=%.3g and D=%.3g"
              % (tol, res["measured_floor_E"], res["measured_drop_D"]), file=sys.stderr)
    return 0
