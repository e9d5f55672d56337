"""The profiler session behind the gates' profiler pass (child.py) and the reference's profile
(judge.py): torch.autograd.profiler.profile on Kineto, not torch.profiler.profile.

Why: on torch 2.x, torch.profiler.profile's start_trace asks `hasattr(torch, "_inductor")`,
which imports TorchInductor (and torch.distributed for its metadata) the first time a process
profiles anything. On the H200 that made the first session of each process take 6.5-7.6 s to
enter, CPU-only or not, where later sessions took 2 ms (scripts/gpu/profiler_probe.py,
docs/PERF.md): the first case of every GPU grade paid it twice, in the child and in the judge.
The autograd profiler is the same Kineto session (same events, same FunctionEvent list) without
that metadata step. It also keeps Inductor out of the child's process, where the submission
would otherwise find it imported by the judge's harness.
"""

import inspect


def session(device):
    """A context manager recording the aten ops (CPU) and, on a GPU, the kernels (CUPTI) run
    inside it; `.function_events` afterwards (see events())."""
    from torch.autograd import profiler
    kw = {"use_kineto": True}
    if device == "cuda":
        params = inspect.signature(profiler.profile.__init__).parameters
        # torch 2.x names the device; 1.x (CPU CI's Debian torch) has only use_cuda.
        kw.update({"use_device": "cuda"} if "use_device" in params else {"use_cuda": True})
    return profiler.profile(**kw)


def events(prof, device):
    """[(name, kind, device_time_us)] of a finished session: kernels ("kernel", device time) on a
    GPU, ops ("op", CPU time) otherwise; on torch 1.13 and 2.x."""
    out = []
    for ev in prof.function_events:
        dev_type = str(getattr(ev, "device_type", ""))
        is_kernel = "CUDA" in dev_type or "cuda" in dev_type
        t = getattr(ev, "device_time_total", None)
        if t is None:
            t = getattr(ev, "cuda_time_total", 0)
        if device == "cuda" and is_kernel:
            out.append((ev.name, "kernel", float(t)))
        else:
            out.append((ev.name, "op", float(getattr(ev, "cpu_time_total", 0.0))))
    return out


def names(prof):
    """Every event's name (ops and kernels) of a finished session."""
    return [ev.name for ev in prof.function_events]
