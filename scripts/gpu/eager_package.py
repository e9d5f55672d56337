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


def from_argv(default_calls, seed, n_sets):
    """The scripts' common command line, TASK.json SRC_DIR SHAPE_INDEX [CALLS]: (task, dims, the
    entry point, n_sets input sets made on the GPU by the judge's generator from `seed` on, calls)."""
    from kzoo_judge import inputs
    task_path, src_dir, shape_index = sys.argv[1], sys.argv[2], int(sys.argv[3])
    calls = int(sys.argv[4]) if len(sys.argv) > 4 else default_calls
    task, _, dims, fn = load(task_path, src_dir, shape_index)
    return task, dims, fn, [inputs.make_inputs(task, dims, seed + i, "cuda") for i in range(n_sets)], calls


def l2_buffer():
    """Twice the device's L2, for flushing it between calls (read: buf.sum(); zero: buf.zero_())."""
    import torch
    return torch.zeros(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, dtype=torch.int32, device="cuda")


def sleep_cycles_per_us():
    """torch.cuda._sleep's cycles per microsecond on this GPU now, to size a pad or a probe's busy
    kernel. Timed twice after a warm-up spin (the first runs at the idle clock); the faster."""
    import torch
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rates = []
    for cycles in (1_000_000, 4_000_000, 4_000_000):
        a.record()
        torch.cuda._sleep(cycles)
        b.record()
        b.synchronize()
        rates.append(cycles / (a.elapsed_time(b) * 1e3))
    return max(rates[1:])


def timed_call(fn, args, flush=None, end_after_sync=False, tail=None, pad_cycles=0):
    """(microseconds, result) of one call between CUDA events, after a device sync and `flush`.
    The window ends on the call's stream, or with end_after_sync after a device-wide sync
    (the judge's window before 2026-11-30). With `tail` (a list), the judge's drain follows the
    stream end (spin on it, device sync, one more event) and its length is appended. With
    `pad_cycles` the device spins that long before the start event, so that the host's launch
    of the call overlaps it instead of opening the window on an idle device (as the judge's
    launch pad: docs/JUDGE.md)."""
    import torch
    torch.cuda.synchronize()
    if flush is not None:
        flush()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    if pad_cycles:
        torch.cuda._sleep(pad_cycles)
    a.record()
    r = fn(*args)
    if end_after_sync:
        torch.cuda.synchronize()
    b.record()
    if tail is not None:
        c = torch.cuda.Event(enable_timing=True)
        while not b.query():
            pass
        torch.cuda.synchronize()
        c.record()
        c.synchronize()
        tail.append(b.elapsed_time(c) * 1e3)
    b.synchronize()
    torch.cuda.synchronize()
    return a.elapsed_time(b) * 1e3, r
