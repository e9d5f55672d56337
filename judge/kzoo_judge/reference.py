"""The task's reference: trusted catalog source, run only in the judge process."""

import torch

from . import dtypes


class ReferenceError_(RuntimeError):
    pass


def load(task):
    """The reference callable: `reference` if the source defines it, else the entry point's name."""
    ns = {"__name__": "kzoo_reference", "torch": torch}
    try:
        code = compile(task.reference_source, "<reference of %s>" % task.name, "exec")
        exec(code, ns)  # trusted: definition.reference.source from the catalog, never from a submission
    except Exception as e:  # noqa: BLE001
        raise ReferenceError_("the reference source of %s does not load: %s: %s" % (task.name, type(e).__name__, e))
    fn = ns.get("reference") or ns.get(task.entry_point)
    if not callable(fn):
        raise ReferenceError_("the reference source of %s defines neither `reference` nor `%s`" % (task.name, task.entry_point))
    return fn


def expected_specs(task):
    """Specs of what is compared, in order: returned outputs, then in-place inputs."""
    return task.returned_outputs() + [task.inputs[task.input_index(n)] for n in task.in_place]


def as_list(r):
    if r is None:
        return []
    if isinstance(r, (tuple, list)):
        return list(r)
    return [r]


def run(fn, task, pristine):
    """Expected outputs for `pristine` inputs (cloned first, so pristine stays pristine)."""
    args = [t.clone() for t in pristine]
    with torch.no_grad():
        try:
            ret = as_list(fn(*args))
        except Exception as e:  # noqa: BLE001
            raise ReferenceError_("the reference raised %s: %s" % (type(e).__name__, e))
    want = task.returned_outputs()
    if len(ret) != len(want):
        raise ReferenceError_("the reference returned %d outputs, the task declares %d returned outputs" % (len(ret), len(want)))
    for t, s in zip(ret, want):
        if not isinstance(t, torch.Tensor) or t.dtype != dtypes.torch_dtype(s.dtype):
            raise ReferenceError_("the reference's output %r is %s, the task declares %s"
                                  % (s.name, getattr(t, "dtype", type(t).__name__), s.dtype))
    return [t.detach() for t in ret] + [args[task.input_index(n)] for n in task.in_place]
