"""The catalog's GPU figures that kzoo grade does not give (scripts/gpu/catalog_bench.sh).

  catalog_helper.py time TASK_DIR [--shape I ...] [--warm-only] [--calls N] [--task-timeout S]
      For the task, at each graded shape I (default 0): torch.compile(mode="max-autotune") of the reference,
      the reference itself run eagerly (the fp32 maths, the catalog's baseline before issue 18), the
      vendor library where the task names one (bf16-gemm: cuBLAS through torch.matmul), and the
      roofline (canonical work / the device class's peak). Times are CUDA events around one call, L2
      flushed before each and the device kept busy ~1 ms before the start event (PAD_CYCLES), the
      median of N calls over a ring of fresh input sets. One JSON line per
      shape on stdout. --warm-only compiles (and autotunes) without timing, to fill
      TORCHINDUCTOR_CACHE_DIR ahead of a quiet timing run.
  catalog_helper.py events TASK_DIR SRC_DIR [--shape I] [--calls N]
      A package's entry point (an eager package's src/, or a solution's) timed the same way, in this
      process: the figure that stands in for a grade the part's deadline skipped. One JSON line.
  catalog_helper.py lab TASK_DIR SRC_DIR... [--calls N] [--seeds N] [--baseline SRC] [--deadline-s S]
      A kernel's lab bench: each SRC_DIR (a solution's src/, or a candidate's) checked against the
      reference at every correctness shape (--seeds seeds each) and every graded shape, then timed at
      every graded shape as `events` does; the task's eager package (catalog/kernel_data, or
      --baseline) timed the same way at each graded shape, with the roofline. One JSON line per
      (source, graded shape), then one per source with its correctness: `max_measure` against
      `tolerance`, and `bound_ratio_max` (the board's elementwise guardrail) against 1. Stops starting new work at --deadline-s.
  catalog_helper.py fastmath TASK_DIR SOLUTION_SRC [--seeds N]
      Does the task's tolerance admit honest fast-math kernels? The comparator's measure, largest over
      seeds at every correctness shape and graded shape 0, of (a) the solution (exp2 approximations,
      bf16 probabilities, tensor-core accumulation orders) and (b) the reference itself run with
      reduced-precision float32 matmuls (bf16 internally) and TF32; against the tolerance. One JSON line.
"""
import argparse
import importlib.util
import json
import math
import os
import signal
import statistics
import sys
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "judge"))

import torch  # noqa: E402

from kzoo_judge import compare, gates, inputs, reference  # noqa: E402
from kzoo_judge import task as task_mod  # noqa: E402
from kzoo_judge.entry import device_class  # noqa: E402

sys.path.insert(0, HERE)
from eager_package import l2_buffer, timed_call  # noqa: E402

VENDOR = {
    # T4 tasks: the vendor library's call for the same maths.
    "bf16-gemm": lambda A, B: torch.matmul(A, B.t()),
}


class Timeout(Exception):
    pass


def _alarm(seconds):
    def fire(*_):
        raise Timeout("ran past %d s" % seconds)
    signal.signal(signal.SIGALRM, fire)
    signal.alarm(int(seconds))


def _reset_dynamo():
    dynamo = getattr(torch, "_dynamo", None)  # absent before torch 2.0
    if dynamo is not None:
        dynamo.reset()


def _graded(task, index=0):
    name, w = task.workload(None)
    return name, task.bind(w, w["graded"][index])


# The device spins about 1 ms (2e6 cycles at the H200's ~2 GHz; longer at a lower clock,
# which only widens the margin) before each timed call's start event: the host's launch
# overlaps it, so the window holds the call's kernels as Nsight Compute counts them, not
# a Triton launch's 50-70 us of Python on an idle device (2026-12-02, docs/PERF.md).
PAD_CYCLES = 2_000_000


def _median_us(fn, sets, calls, flush):
    times = []
    for i in range(calls):
        us, _ = timed_call(fn, sets[i % len(sets)], flush=flush, pad_cycles=PAD_CYCLES)
        times.append(us)
    return statistics.median(times)


def _ring(task, dims):
    """(input sets, the L2 flush): enough sets that the ring is larger than L2, at most 6 (the biggest
    tasks hold GBs each)."""
    per_set = sum(t.numel() * t.element_size() for t in inputs.make_inputs(task, dims, 0, "cuda"))
    n_sets = max(2, min(6, math.ceil(2 * torch.cuda.get_device_properties(0).L2_cache_size / max(per_set, 1))))
    sets = [inputs.make_inputs(task, dims, 1000 + i, "cuda") for i in range(n_sets)]
    return sets, l2_buffer().zero_


def _as_module(fn):
    """Registers the module `fn` was defined in (a reference runs in a namespace named kzoo_reference
    that no import made) in sys.modules: dynamo imports a function's module while it traces, and
    without it every torch.compile of a reference fails with "No module named 'kzoo_reference'"."""
    mod = types.ModuleType(fn.__module__)
    mod.__dict__.update(fn.__globals__)
    sys.modules[fn.__module__] = mod


def time_task(task_dir, calls, warm_only, per_task_s, shape=0):
    task = task_mod.load(os.path.join(task_dir, "task.json"))
    out = {"task": task.name, "shape_index": shape}
    t0 = time.time()
    try:
        _alarm(per_task_s)
        wname, dims = _graded(task, shape)
        out["shape"] = dims
        _, dc = device_class()
        roof_s, how = gates.roofline_seconds(task, dims, dc)
        out["roofline_us"] = roof_s * 1e6 if roof_s else None
        ref = reference.load(task)
        _as_module(ref)
        sets, flush = _ring(task, dims)
        n_sets = len(sets)
        with torch.no_grad():
            # mode="max-autotune" runs the kernels in a CUDA graph, which copies inputs at new
            # addresses (every set of the ring) into its own pool on each call; the same kernels
            # without the graph are timed too, and the faster of the two is the bar.
            for mode in ("max-autotune", "max-autotune-no-cudagraphs"):
                try:
                    compiled = torch.compile(ref, mode=mode)
                    c0 = time.time()
                    compiled(*sets[0])  # compile (and autotune) here, not in the timed calls
                    compiled(*sets[1 % n_sets])
                    torch.cuda.synchronize()
                    out["compile_s " + mode] = round(time.time() - c0, 1)
                    if not warm_only:
                        out["compile_us " + mode] = _median_us(compiled, sets, calls, flush)
                except Timeout:
                    raise
                except Exception as e:  # noqa: BLE001 - the other mode may still work
                    out["error " + mode] = "%s: %s" % (type(e).__name__, str(e).strip()[-300:])
                    traceback.print_exc(file=sys.stderr)
                finally:
                    _reset_dynamo()
            if not warm_only:
                got = [out[k] for k in ("compile_us max-autotune", "compile_us max-autotune-no-cudagraphs") if k in out]
                if got:
                    out["compile_us"] = min(got)
                out["reference_us"] = _median_us(ref, sets, max(3, calls // 4), flush)
                if task.name in VENDOR:
                    out["vendor_us"] = _median_us(VENDOR[task.name], sets, calls, flush)
    except Exception as e:  # noqa: BLE001 - one task's failure must not stop the others
        out["error"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1][:300] if str(e).strip() else "")
        traceback.print_exc(file=sys.stderr)
    finally:
        signal.alarm(0)
        _reset_dynamo()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    out["wall_s"] = round(time.time() - t0, 1)
    return out


def events_task(task_dir, src, calls, shape=0):
    task = task_mod.load(os.path.join(task_dir, "task.json"))
    out = {"task": task.name, "shape_index": shape}
    t0 = time.time()
    try:
        _, dims = _graded(task, shape)
        out["shape"] = dims
        fn = _load_solution(task, src)
        sets, flush = _ring(task, dims)
        with torch.no_grad():
            for s in sets[:2]:  # first calls: lazy initialisation, a Triton or extension build, autotuning
                fn(*[t.clone() for t in s])
            torch.cuda.synchronize()
            out["events_us"] = _median_us(fn, sets, calls, flush)
    except Exception as e:  # noqa: BLE001 - the part records the failure and goes on
        out["error"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1][:300] if str(e).strip() else "")
        traceback.print_exc(file=sys.stderr)
    out["wall_s"] = round(time.time() - t0, 1)
    return out


def _load_solution(task, src):
    """The entry point of the package source `src`. The modules it imports from its own folder (a
    CUDA solution's `_ext`) leave sys.modules once it is loaded: `lab` loads several sources of one
    task into one process, and a second `import _ext` would otherwise get the first source's module
    (the loaded entry point keeps its own through its globals)."""
    sys.path.insert(0, src)
    before = set(sys.modules)
    spec = importlib.util.spec_from_file_location("solution_" + task.name.replace("-", "_"), os.path.join(src, task.module))
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    finally:
        root = os.path.realpath(src) + os.sep
        for name in set(sys.modules) - before:
            f = getattr(sys.modules[name], "__file__", None) or ""
            if os.path.realpath(f).startswith(root):
                del sys.modules[name]
        sys.path.remove(src)
    return getattr(mod, task.entry_point)


def _outputs(fn, ref, task, dims, seed):
    """(what `fn` returned, with its in-place inputs; what the reference returned) on one fresh input set."""
    x = inputs.make_inputs(task, dims, seed, "cuda")
    exp = reference.run(ref, task, x)
    args = [t.clone() for t in x]
    with torch.no_grad():
        got = reference.as_list(fn(*args)) + [args[task.input_index(n)] for n in task.in_place]
    torch.cuda.synchronize()
    return got, exp


def _measure(fn, ref, task, dims, seed, specs):
    got, exp = _outputs(fn, ref, task, dims, seed)
    return compare.measure(got, exp, specs, task.comparator, task.row_pass)


def fastmath(task_dir, src, seeds):
    task = task_mod.load(os.path.join(task_dir, "task.json"))
    out = {"task": task.name, "comparator": task.comparator, "tolerance": task.tolerance}
    try:
        ref = reference.load(task)
        specs = reference.expected_specs(task)
        name, w = task.workload(None)
        shapes = [task.bind(w, s) for s in w["correctness"]] + [_graded(task)[1]]
        sol = _load_solution(task, src)

        def fast_ref(*a):
            prev = (torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision(),
                    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
            torch.set_float32_matmul_precision("medium")
            try:
                return ref(*a)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = prev[0]
                torch.set_float32_matmul_precision(prev[1])
                torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = prev[2]

        worst = {"solution": 0.0, "fast_reference": 0.0}
        for si, dims in enumerate(shapes):
            for k in range(seeds if si < len(shapes) - 1 else 1):
                seed = 7919 * (si + 1) + k
                worst["solution"] = max(worst["solution"], _measure(sol, ref, task, dims, seed, specs))
                worst["fast_reference"] = max(worst["fast_reference"], _measure(fast_ref, ref, task, dims, seed, specs))
        out.update(worst)
        out["admits"] = all(v <= task.tolerance for v in worst.values())
    except Exception as e:  # noqa: BLE001
        out["error"] = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[-1][:300] if str(e).strip() else "")
        traceback.print_exc(file=sys.stderr)
    return out


def _eager_src(task):
    """The task's eager package's src/ in catalog/kernel_data (the one whose src/ holds the task's module)."""
    base = os.path.join(ROOT, "catalog", "kernel_data")
    for dirpath, _dirs, files in os.walk(base):
        if os.path.basename(dirpath) == "src" and task.module in files and "_eager" in dirpath:
            with open(os.path.join(os.path.dirname(dirpath), ".kernel_package", "desc.yaml")) as f:
                if "ref: %s\n" % task.name in f.read():
                    return dirpath
    return None


def _error_line(e):
    text = str(e).strip()
    return "%s: %s" % (type(e).__name__, text.splitlines()[-1][:300] if text else "")


def _board_bound(task_dir):
    """(atol, rtol) of the board's elementwise guardrail for this task: the task's declared
    `elementwise_atol` where it has one, else the seed's 1e-2; rtol 1e-2 (judge.elementwise_bound)."""
    with open(os.path.join(task_dir, "task.json")) as f:
        tol = json.load(f).get("grading", {}).get("tolerance", {})
    return float(tol.get("elementwise_atol", 0.01)), 0.01


def _measure_bounded(fn, ref, task, dims, seed, specs, bound):
    """(the comparator's measure, the largest |out - exp| / (atol + rtol |exp|)) of one call."""
    got, exp = _outputs(fn, ref, task, dims, seed)
    m = compare.measure(got, exp, specs, task.comparator, task.row_pass)
    v = compare.compare(got, exp, specs, task.comparator, math.inf, task.row_pass, strict_dtype=False, bound=bound)
    return m, (v.bound_ratio or 0.0)


def lab(task_dir, srcs, calls, seeds, baseline, deadline_s):
    t_start = time.time()
    task = task_mod.load(os.path.join(task_dir, "task.json"))
    bound = _board_bound(task_dir)
    ref = reference.load(task)
    specs = reference.expected_specs(task)
    name, w = task.workload(None)
    correctness = [task.bind(w, s) for s in w["correctness"]]
    graded = [task.bind(w, s) for s in w["graded"]]
    _, dc = device_class()
    baseline = baseline or _eager_src(task)
    fns = {}
    for src in ([baseline] if baseline else []) + list(srcs):
        try:
            fns[src] = _load_solution(task, src)
        except Exception as e:  # noqa: BLE001 - a candidate that fails to load is a line, not a stop
            print(json.dumps({"task": task.name, "src": src, "error": "load: " + _error_line(e)}), flush=True)
            traceback.print_exc(file=sys.stderr)
    for src in srcs:
        if src not in fns:
            continue
        out = {"task": task.name, "src": src, "tolerance": task.tolerance, "comparator": task.comparator,
               "elementwise_bound": bound}
        worst, where, ratio, ratio_where = 0.0, None, 0.0, None
        try:
            for si, dims in enumerate(correctness + graded):
                for k in range(seeds if si < len(correctness) else 1):
                    if time.time() - t_start > deadline_s:
                        raise Timeout("deadline before correctness shape %s" % dims)
                    m, r = _measure_bounded(fns[src], ref, task, dims, 7919 * (si + 1) + k, specs, bound)
                    if not (m <= worst):
                        worst, where = m, dims
                    if not (r <= ratio):
                        ratio, ratio_where = r, dims
            out["max_measure"], out["worst_shape"] = worst, where
            # The board holds every element to its bound too (judge.elementwise_bound): a kernel
            # inside the comparator's tolerance but past the bound is refused by kzoo grade.
            out["bound_ratio_max"], out["bound_worst_shape"] = ratio, ratio_where
            out["correct"] = worst <= task.tolerance and ratio <= 1.0
        except Exception as e:  # noqa: BLE001
            out["error"] = _error_line(e)
            traceback.print_exc(file=sys.stderr)
        print(json.dumps(out), flush=True)
    for gi, dims in enumerate(graded):
        roof_s, _how = gates.roofline_seconds(task, dims, dc)
        try:
            sets, flush = _ring(task, dims)
        except Exception as e:  # noqa: BLE001
            print(json.dumps({"task": task.name, "shape_index": gi, "error": "inputs: " + _error_line(e)}), flush=True)
            continue
        for src, fn in fns.items():
            out = {"task": task.name, "src": src, "shape_index": gi, "shape": dims,
                   "roofline_us": roof_s * 1e6 if roof_s else None, "baseline": src == baseline}
            try:
                if time.time() - t_start > deadline_s:
                    raise Timeout("deadline before timing")
                with torch.no_grad():
                    for s in sets[:2]:  # first calls: builds, autotuning
                        fn(*[t.clone() for t in s])
                    torch.cuda.synchronize()
                    out["events_us"] = _median_us(fn, sets, calls, flush)
                if out["roofline_us"]:
                    out["pct_roofline"] = round(100 * out["roofline_us"] / out["events_us"], 1)
            except Exception as e:  # noqa: BLE001
                out["error"] = _error_line(e)
                traceback.print_exc(file=sys.stderr)
            print(json.dumps(out), flush=True)
        del sets
        torch.cuda.empty_cache()
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("time")
    t.add_argument("task_dirs", nargs="+")
    t.add_argument("--calls", type=int, default=20)
    t.add_argument("--warm-only", action="store_true")
    t.add_argument("--task-timeout", type=int, default=240)
    t.add_argument("--shape", type=int, action="append", help="graded shape index (again for more: one process "
                   "times one task at each, its reference registered once)")
    e = sub.add_parser("events")
    e.add_argument("task_dir")
    e.add_argument("src")
    e.add_argument("--calls", type=int, default=20)
    e.add_argument("--shape", type=int, default=0, help="graded shape index")
    f = sub.add_parser("fastmath")
    f.add_argument("task_dir")
    f.add_argument("src")
    f.add_argument("--seeds", type=int, default=2)
    lb = sub.add_parser("lab")
    lb.add_argument("task_dir")
    lb.add_argument("srcs", nargs="+")
    lb.add_argument("--calls", type=int, default=20)
    lb.add_argument("--seeds", type=int, default=2)
    lb.add_argument("--baseline", default=None)
    lb.add_argument("--deadline-s", type=float, default=300)
    a = p.parse_args()
    if a.cmd == "lab":
        return lab(a.task_dir, a.srcs, a.calls, a.seeds, a.baseline, a.deadline_s)
    if a.cmd == "time":
        # One process per task: every reference's module is named kzoo_reference, and dynamo, once it
        # has traced one task's, looked the next task's globals up in it ("module 'kzoo_reference'
        # has no attribute 'EPS'", H200, 2026-12-03). Several tasks in one process are refused.
        if len(a.task_dirs) > 1:
            p.error("time: one TASK_DIR per process (each reference's module is kzoo_reference); got %d" % len(a.task_dirs))
        for shape in a.shape or [0]:
            print(json.dumps(time_task(a.task_dirs[0], a.calls, a.warm_only, a.task_timeout, shape)), flush=True)
    elif a.cmd == "events":
        print(json.dumps(events_task(a.task_dir, a.src, a.calls, a.shape)), flush=True)
    else:
        print(json.dumps(fastmath(a.task_dir, a.src, a.seeds)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
