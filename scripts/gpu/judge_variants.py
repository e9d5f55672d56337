#!/usr/bin/env python3
"""Where the judge's GPU figure parts from a plain loop: the judge itself (no sandbox), graded
shape 0 only, with one part of its structure taken away per variant, each in a fresh judge.

Usage (on the GPU machine, from the repository root):
  python3 scripts/gpu/judge_variants.py JUDGE_DIR TASK.json SRC_DIR VARIANT...

  base      the judge as it is
  nocheck   outputs not checked between batches (no float64 compares, no reference)
  nostop    the child is not stopped (SIGSTOP) while the judge checks
  whole     the timed batches handed over whole (one "go" per batch), not one call per "go"
  samein    every call gets the same input tensors (no fresh allocation, no fresh IPC mapping)
  tailparts the judge run from a copy of JUDGE_DIR whose child records two more events in each
            call's tail (after its spin sees the stream end, after the device sync): the tail
            split into spin, sync and the end's own record, on the GPU's timeline (stderr: TAIL)

For each variant: the median of the judge's figures (what it reports), of the stream windows
alone, and of the tails it adds (tail less the calibrated floor), and the figures by position
in their batch. A diagnostic, not a grader: nothing here is trusted or kept.
"""
import os
import statistics
import sys


def main():
    judge_dir, task_path, src_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    variants = sys.argv[4:] or ["base"]
    if "tailparts" in variants:
        judge_dir = _tail_parts_copy(judge_dir)
    sys.path.insert(0, os.path.abspath(judge_dir))
    from kzoo_judge import channel, entry, inputs, judge as judge_mod, task as task_mod, timing

    task = task_mod.load(task_path)
    cases = entry.cases_from_workload(task, None)[:1]
    seen = []
    window_ns = timing.window_ns

    def recording(stream, tails, floors):
        at = floors.at if hasattr(floors, "at") else (lambda s, f=floors or 0.0: f)
        seen.append((list(stream), list(tails), [at(s) for s in stream]))
        return window_ns(stream, tails, floors)

    timing.window_ns = recording
    originals = {"verify": judge_mod.Judge._verify_batch, "stop": channel.Child.stop, "cont": channel.Child.cont,
                 "paced": judge_mod.Judge._paced, "make": inputs.make_inputs}
    for v in variants:
        judge_mod.Judge._verify_batch = originals["verify"]
        channel.Child.stop, channel.Child.cont = originals["stop"], originals["cont"]
        judge_mod.Judge._paced = originals["paced"]
        inputs.make_inputs = originals["make"]
        if v == "nocheck":
            judge_mod.Judge._verify_batch = lambda self, *a, **k: None
        elif v == "nostop":
            channel.Child.stop = lambda self, *a, **k: None
            channel.Child.cont = lambda self, *a, **k: None
        elif v == "whole":
            judge_mod.Judge._paced = lambda self: self.device == "cpu"
        elif v == "samein":
            memo = {}

            def same(task_, dims, seed, device, _m=memo):
                key = repr(sorted(dims.items()))
                if key not in _m:
                    _m[key] = originals["make"](task_, dims, seed, device)
                return _m[key]
            inputs.make_inputs = same
        elif v not in ("base", "tailparts"):
            print("unknown variant %s" % v)
            continue
        del seen[:]
        doc = entry.run_judge(task, cases, inputs.Secret(os.urandom(32)), "cuda", os.path.abspath(src_dir),
                              {"iterations": 100}, "diag", "diag")[0] if os.environ.get("DIAG_DEVICE", "cuda") == "cuda" else \
            entry.run_judge(task, cases, inputs.Secret(os.urandom(32)), "cpu", os.path.abspath(src_dir), {"iterations": 20}, "diag", "diag")[0]
        c = doc["cases"][0]
        # the last 100 calls are the timed ones (warm-up batches come first)
        calls = [(s, t, f, pos) for stream, tails, fl in seen for pos, (s, t, f) in enumerate(zip(stream, tails, fl))][-100:]
        if not calls:
            print("%-8s %s" % (v, c["message"]))
            continue
        med = lambda xs: statistics.median(xs) / 1e3  # noqa: E731
        byp = {}
        for s, t, f, pos in calls:
            byp.setdefault(pos, []).append(s + max(0.0, t - f))
        print("%-8s %s | stream %.1f, window %.1f, tail-floor %.1f us (floor %.1f at the median), batches of %s; by position: %s"
              % (v, c["message"], med([s for s, _, _, _ in calls]), med([s + max(0.0, t - f) for s, t, f, _ in calls]),
                 med([max(0.0, t - f) for _, t, f, _ in calls]), med([f for _, _, f, _ in calls]), max(byp) + 1,
                 " ".join("%d:%.1f" % (p, med(xs)) for p, xs in sorted(byp.items())[:8])), flush=True)


def _tail_parts_copy(judge_dir):
    """A copy of the judge whose child splits each call's tail with two more events."""
    import shutil
    import tempfile
    dst = os.path.join(tempfile.mkdtemp(prefix="kzoo-tailparts-"), "judge")
    shutil.copytree(judge_dir, dst, ignore=shutil.ignore_patterns("__pycache__"))
    p = os.path.join(dst, "kzoo_judge", "child.py")
    s = open(p).read()
    old = """                    self._drain(mids[i])
                    ends[i].record()
"""
    new = """                    _a, _b = self._event(enable_timing=True), self._event(enable_timing=True)
                    while not mids[i].query():
                        pass
                    _a.record()
                    self._device_sync()
                    _b.record()
                    ends[i].record()
                    ends[i].synchronize()
                    print("TAIL %.1f %.1f %.1f" % (mids[i].elapsed_time(_a) * 1e3, _a.elapsed_time(_b) * 1e3,
                                                    _b.elapsed_time(ends[i]) * 1e3), file=sys.stderr)
"""
    if old not in s:
        raise SystemExit("tailparts: the child's drain is not where this script expects it")
    open(p, "w").write(s.replace(old, new))
    return dst


if __name__ == "__main__":
    main()
