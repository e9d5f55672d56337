"""Shared by the GPU measurement scripts: a package's entry point and a graded shape of its task."""
import importlib.util
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "judge"))

from kzoo_judge import task as task_mod  # noqa: E402


def load(task_path, src_dir, shape_index):
    """(task, workload name, dims of graded shape `shape_index`, the package's entry point)."""
    task = task_mod.load(task_path)
    name, workload = task.workload(None)
    dims = task.bind(workload, workload["graded"][shape_index])
    spec = importlib.util.spec_from_file_location("submission", os.path.join(src_dir, task.module))
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, src_dir)
    spec.loader.exec_module(mod)
    return task, name, dims, getattr(mod, task.entry_point)
