"""Reading a KBench task: workloads, shapes bound to dims, tensor specs, work.

A task is trusted (it comes from the catalog, never from a submission), but
it is still checked here so a malformed one fails with a message that names
the field instead of a stack trace deep in the judge.
"""

import json
import os

from . import dtype_names, expr

COMPARATORS = ("relative-frobenius", "relative-frobenius-tuple-max", "rowwise", "exact")


class TaskError(ValueError):
    pass


class TensorSpec:
    def __init__(self, raw, where):
        if not isinstance(raw, dict) or "name" not in raw or "shape" not in raw or "dtype" not in raw:
            raise TaskError("%s: a tensorSpec needs name, shape and dtype" % where)
        self.name = raw["name"]
        self.shape = raw["shape"]
        self.dtype = raw["dtype"]
        if self.dtype not in dtype_names.ALL:
            raise TaskError("%s: dtype %r is not one of %s" % (where, self.dtype, ", ".join(dtype_names.ALL)))
        self.quantized = raw.get("quantized")
        self.meaning = raw.get("meaning", "")
        self.raw = raw

    def resolve(self, dims):
        try:
            return tuple(expr.shape_entry(e, dims) for e in self.shape)
        except expr.ExprError as e:
            raise TaskError("tensor %r shape %r: %s" % (self.name, self.shape, e))


class Task:
    def __init__(self, raw, path="task.json"):
        if not isinstance(raw, dict):
            raise TaskError("%s: a task is a JSON object" % path)
        self.raw = raw
        self.path = path
        try:
            self.name = raw["name"]
            d = raw["definition"]
            self.entry_point = d["entry_point"]
            self.module = d.get("module") or "kernel.py"
            self.inputs = [TensorSpec(s, "definition.inputs[%d]" % i) for i, s in enumerate(d["inputs"])]
            self.outputs = [TensorSpec(s, "definition.outputs[%d]" % i) for i, s in enumerate(d["outputs"])]
            self.reference_source = d["reference"]["source"]
            self.read_only_inputs = bool(d.get("read_only_inputs", True))
            self.in_place = list(d.get("in_place_outputs", []))
            self.workloads = raw["workloads"]
            g = raw["grading"]
            self.metric = g["metric"]
            self.canonical_work = g.get("reward", {}).get("canonical_work")
            tol = g["tolerance"]
            self.comparator = tol["comparator"]
            self.tolerance = float(tol["value"])
            self.row_pass = float(tol.get("row_pass", 1.0))
            self.extra_gates = list(g.get("extra_gates", []))
        except (KeyError, TypeError) as e:
            raise TaskError("%s: missing or malformed field %s" % (path, e))
        if self.comparator not in COMPARATORS:
            raise TaskError("%s: grading.tolerance.comparator %r is not one of %s" % (path, self.comparator, ", ".join(COMPARATORS)))
        names = [s.name for s in self.inputs]
        for n in self.in_place:
            if n not in names:
                raise TaskError("%s: in_place_outputs names %r, which is not an input (inputs: %s)" % (path, n, ", ".join(names)))
        if os.path.isabs(self.module) or ".." in self.module.replace("\\", "/").split("/"):
            raise TaskError("%s: definition.module %r must be a relative path inside src/" % (path, self.module))
        for s in self.inputs:
            if s.quantized is not None and s.name + "_scale" not in names:
                raise TaskError("%s: quantised input %r needs its scales in an input named %r" % (path, s.name, s.name + "_scale"))

    # --- shapes -----------------------------------------------------------
    def workload(self, name=None):
        if name is None:
            name = "synthetic" if "synthetic" in self.workloads else sorted(self.workloads)[0]
        if name not in self.workloads:
            raise TaskError("workload %r is not in the task (workloads: %s)" % (name, ", ".join(sorted(self.workloads))))
        return name, self.workloads[name]

    def bind(self, workload, shape):
        """dims dict of one shape: a list in the workload's dims order, or already a dict."""
        names = workload["dims"]
        if isinstance(shape, dict):
            missing = [n for n in names if n not in shape]
            if missing:
                raise TaskError("shape %r lacks dims %s" % (shape, ", ".join(missing)))
            return {n: shape[n] for n in names}
        if not isinstance(shape, (list, tuple)) or len(shape) != len(names):
            raise TaskError("shape %r must list %d values for dims %s" % (shape, len(names), ", ".join(names)))
        return dict(zip(names, shape))

    def shapes(self, workload_name, kind):
        _, w = self.workload(workload_name)
        return [self.bind(w, s) for s in w.get(kind, [])]

    def input_shapes(self, dims):
        return [s.resolve(dims) for s in self.inputs]

    def output_shapes(self, dims):
        return [s.resolve(dims) for s in self.outputs]

    def work(self, dims):
        if not self.canonical_work:
            raise TaskError("%s: grading.reward.canonical_work is missing" % self.path)
        try:
            return expr.work(self.canonical_work, dims)
        except expr.ExprError as e:
            raise TaskError("canonical_work %r at %s: %s" % (self.canonical_work, dims, e))

    def returned_outputs(self):
        """Outputs the entry point returns, in order (in-place outputs are read from their inputs)."""
        return [s for s in self.outputs if s.name not in self.in_place]

    def input_index(self, name):
        return [s.name for s in self.inputs].index(name)


def load(path):
    try:
        with open(path, "r", encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise TaskError("cannot read task %s: %s" % (path, e))
    return Task(raw, path)


def same_dims(a, b):
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


class Case:
    """One graded test case: a workload shape, and the metrics its meta asks for."""

    def __init__(self, test_case_id, workload, dims, metrics=None, graded_index=0, atol=None, rtol=None):
        self.id = test_case_id
        self.workload = workload
        self.dims = dims
        self.metrics = metrics  # [{name, unit, direction}] or None for the defaults
        self.graded_index = graded_index
        # The case's elementwise bound (its meta's correctness_atol / correctness_rtol: the
        # board's guardrail), held on every compared call; None where it declares none.
        self.atol = atol
        self.rtol = rtol
