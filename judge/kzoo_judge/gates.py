"""Gates: the task's extra_gates, the library-call rule and the roofline.

The profiler pass that feeds the first two runs in the child (torch.profiler
can only see its own process), untimed and separate from the timed batches;
the reference's profile runs in the judge. A submission can tamper with its
own profile, so these two gates raise the bar rather than seal it (see
docs/JUDGE.md, residual risks); the roofline gate uses only the judge's
figures.
"""

import re

# Vendor-library families, matched on profiler op/kernel names. A family the
# submission uses but the reference does not is refused: the task asks for
# a kernel, not for a call into the library that the reference avoids.
GPU_FAMILIES = {
    "gemm library (cuBLAS/CUTLASS/xmma)": re.compile(r"cublas|cutlass|xmma|gemm|nvjet|magma|sgemm|hgemm|wgmma_sm90_lib", re.I),
    "cuDNN": re.compile(r"cudnn|implicit_convolve|conv2d_|winograd", re.I),
}
CPU_FAMILIES = {
    "BLAS-backed aten op": re.compile(r"^aten::(mm|addmm|bmm|baddbmm|addbmm|matmul|linear|dot|vdot|mv|addmv|einsum|tensordot|_mkldnn\w*|mkldnn\w*)$"),
    "convolution": re.compile(r"^aten::(conv\w*|_convolution\w*|convolution\w*|cudnn\w*|mkldnn_convolution)$"),
}


def families(names, device):
    table = GPU_FAMILIES if device == "cuda" else CPU_FAMILIES
    found = {}
    for n in names:
        for fam, pat in table.items():
            if pat.search(n):
                found.setdefault(fam, set()).add(n)
    # On the GPU the host-side aten names count too (a cuBLAS call shows as aten::mm).
    if device == "cuda":
        for fam, ns in families(names, "cpu").items():
            found.setdefault(fam, set()).update(ns)
    return found


def library_gate(sub_names, ref_names, device):
    sub = families(sub_names, device)
    ref = families(ref_names, device)
    extra = {fam: sorted(ns) for fam, ns in sub.items() if fam not in ref}
    n = sum(len(v) for v in extra.values())
    msg = ""
    if extra:
        msg = "library calls the reference does not make: " + "; ".join(
            "%s (%s)" % (fam, ", ".join(ns[:5])) for fam, ns in sorted(extra.items()))
    return {"value": n, "limit": 0, "pass": n == 0}, msg


def profile_figures(events, calls, device):
    """kernels-per-step and dominant-share from child profiler events [(name, kind, time)]."""
    if device == "cuda":
        ks = [(n, t) for n, kind, t in events if kind == "kernel"]
    else:
        ks = [(n, t) for n, kind, t in events if n.startswith("aten::")]
    per_step = len(ks) / max(calls, 1)
    by_name = {}
    for n, t in ks:
        by_name[n] = by_name.get(n, 0.0) + t
    total = sum(by_name.values())
    share = (max(by_name.values()) / total) if total > 0 else (1.0 if by_name else 0.0)
    return {"kernels-per-step": per_step, "dominant-share": share}


def top_kernels(events, calls, device, n=8):
    """The kernels that took the most device time in the profiler pass, for the submitter:
    [{name, count, time_us, share}], count and time_us per call, share of the pass's kernel
    time. On the CPU, aten ops and their CPU time. Feedback only: the child reports these
    events, so no verdict rests on them."""
    if device == "cuda":
        ks = [(name, t) for name, kind, t in events if kind == "kernel"]
    else:
        ks = [(name, t) for name, kind, t in events if name.startswith("aten::")]
    by_name = {}
    for name, t in ks:
        c, total = by_name.get(name, (0, 0.0))
        by_name[name] = (c + 1, total + t)
    total = sum(t for _, t in by_name.values())
    per = max(calls, 1)
    top = sorted(by_name.items(), key=lambda kv: (-kv[1][1], kv[0]))[:n]
    return [{"name": str(name)[:200], "count": round(c / per, 3), "time_us": t / per,
             "share": (t / total) if total > 0 else 0.0} for name, (c, t) in top]


# The unit of each gate's value and limit (the service's verdict uses the same: verdict.cpp gate_unit).
GATE_UNITS = {
    "roofline": "us",
    "library-calls": "vendor-library calls the reference does not make",
    "kernels-per-step": "kernels per call",
    "dominant-share": "share of kernel time in the largest kernel",
}


def gate_failure(name, g):
    """Why gate `name` failed, its figures in their unit."""
    unit = GATE_UNITS.get(name, "")
    u = (" " + unit) if unit else ""
    fmt = lambda x: ("%.4g" % x) if isinstance(x, (int, float)) else str(x)  # noqa: E731
    return "gate %s failed: %s%s, limit %s%s" % (name, fmt(g.get("value")), u, fmt(g.get("limit")), u)


def extra_gates(task, figures):
    out, msgs = {}, []
    for g in task.extra_gates:
        name = g.get("name")
        limit = g.get("limit")
        direction = g.get("direction", "max")
        if name not in figures or limit is None:
            out[name] = {"value": None, "limit": limit, "pass": False}
            msgs.append("gate %r cannot be measured by this judge (known: %s)" % (name, ", ".join(sorted(figures))))
            continue
        v = figures[name]
        ok = v <= limit if direction == "max" else v >= limit
        out[name] = {"value": v, "limit": limit, "pass": bool(ok)}
        if not ok:
            msgs.append("gate %s = %.4g, %s %g" % (name, v, "limit" if direction == "max" else "minimum", limit))
    return out, msgs


def dominant_dtype(task, dims):
    """dtype of the largest floating input at `dims` (the dominant operands); scales do not count."""
    from . import dtypes
    best, best_n = None, -1
    for s, shape in zip(task.inputs, task.input_shapes(dims)):
        if not dtypes.is_floating(s.dtype) or any(s.name == q.name + "_scale" for q in task.inputs if q.quantized):
            continue
        n = 1
        for x in shape:
            n *= x
        if n > best_n:
            best, best_n = s.dtype, n
    return best or "float32"


def roofline_seconds(task, dims, device_class, graded_dims=None, roofline_us=None):
    """(fastest possible seconds at `dims` on the device class, how) or (None, why not)."""
    work = task.work(dims)
    if task.metric == "GB/s" and device_class.get("bandwidth_GBps"):
        bw = device_class["bandwidth_GBps"]
        return work / (bw * 1e9), "%.4g bytes at %g GB/s" % (work, bw)
    if task.metric == "TFLOP/s":
        dt = dominant_dtype(task, dims)
        tf = (device_class.get("tflops") or {}).get(dt)
        if tf:
            return work / (tf * 1e12), "%.4g FLOP at %g TFLOP/s (%s)" % (work, tf, dt)
    if graded_dims and roofline_us:
        ref_work = max(task.work(d) for d in graded_dims)
        return roofline_us * 1e-6 * work / ref_work, "workload roofline_us %g scaled by work" % roofline_us
    return None, "no roofline for metric %s on this device class" % task.metric


def roofline_gate(measured_s, roof_s, how):
    if roof_s is None:
        return None, ""
    ok = measured_s >= roof_s
    g = {"value": measured_s * 1e6, "limit": roof_s * 1e6, "pass": bool(ok)}
    msg = "" if ok else ("measured %.3f us is below the roofline %.3f us (%s): impossible, refused"
                         % (measured_s * 1e6, roof_s * 1e6, how))
    return g, msg
