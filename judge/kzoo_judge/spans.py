"""Each timed GPU call's device span, read from the device's own activity records (CUPTI, through
torch's Kineto profiler): from the first kernel, copy or memset the call put on the device, on any
stream, to the last one's end (docs/JUDGE.md, "The device span").

Why: Nsight Compute, the measure the judge's figures must agree with, times kernels on the
device's clock; CUDA events around a call also hold the device's step from the pad to the call's
first kernel and from its last kernel to the event, and the window's tail (the work a call left on
another stream) had to be estimated from the host's sync against calibrated floors. On an H200,
single-kernel solutions whose judge figures read 1-2.4% above Nsight Compute had kernel records
within 0.4% of it (scripts/gpu/kernel_span.py, session 22), and the sync tail's charge jittered
with the host. The records see every stream of the context, so work left on a side stream is in
the span without a tail to estimate; the gaps between a call's own kernels stay in it (they are
its cost; Nsight Compute's sum leaves them out).

Attribution needs no host clock: the child's pad kernel (pad.py) opens each call on the device and
a one-warp mark kernel, launched after the call's device sync, closes it; what ran between the
pad's end and the mark's start is the call's. Everything here but `session` is plain Python on
(name, start_ns, end_ns) records, so it is tested without a GPU (tests/test_spans.py).
"""
from . import pad

# Device records that are no work: Kineto's synchronisation records (a wait spans the whole
# sync) and the GPU track of host ranges.
_NOT_WORK_SUFFIXES = (" Sync",)
_NOT_WORK_NAMES = ("Stream Wait Event",)


def is_work(name):
    return not (name.endswith(_NOT_WORK_SUFFIXES) or name in _NOT_WORK_NAMES)


def session():
    """A started profiler session recording the device's activity only (no host ops: their
    callbacks would add host time to every op of the call). Stop it with `stop`."""
    from torch.autograd import profiler
    prof = profiler.profile(use_kineto=True, use_cpu=False, use_device="cuda")
    prof.__enter__()
    return prof


def stop(prof):
    """Stop a session; its device records [(name, start_ns, end_ns)]."""
    prof.__exit__(None, None, None)
    out = []
    for e in prof.kineto_results.events():
        if not str(e.device_type()).endswith("CUDA"):
            continue
        if hasattr(e, "start_ns"):
            s = int(e.start_ns())
            t = s + int(e.duration_ns())
        else:  # an older Kineto binding: microseconds
            s = int(e.start_us() * 1000)
            t = s + int(e.duration_us() * 1000)
        out.append((str(e.name()), s, t))
    return out


def per_call(records, calls):
    """Each of `calls` calls' span in ns, or -1 where the records cannot say: the call's work runs
    from the end of the n-th pad to the start of the n-th mark (both in device order). A record
    begun before its pad ended (a copy engine's, beside the pad) counts from the pad's end; one
    still running when the mark started counts to its own end. Pads and marks that do not pair
    up one to one with the calls leave every call at -1 (the judge then times by events)."""
    recs = sorted(records, key=lambda r: (r[1], r[2]))
    pads = [r for r in recs if r[0] == pad.PAD_NAME]
    marks = [r for r in recs if r[0] == pad.MARK_NAME]
    if len(pads) != calls or len(marks) != calls:
        return [-1] * calls
    work = [r for r in recs if r[0] not in (pad.PAD_NAME, pad.MARK_NAME) and is_work(r[0])]
    out = []
    for p, m in zip(pads, marks):
        lo, hi = p[2], m[1]
        if hi < lo:
            return [-1] * calls  # a mark before its own pad's end: the pairing is broken
        mine = [r for r in work if r[2] > lo and r[1] < hi]
        if not mine:
            out.append(-1)
            continue
        out.append(max(r[2] for r in mine) - max(lo, min(r[1] for r in mine)))
    return out
