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
    sys.path.insert(0, os.path.abspath(judge_dir))
    from kzoo_judge import channel, entry, inputs, judge as judge_mod, task as task_mod, timing

    task = task_mod.load(task_path)
    cases = entry.cases_from_workload(task, None)[:1]
    seen = []
    window_ns = timing.window_ns

    def recording(stream, tails, floor):
        seen.append((list(stream), list(tails), floor or 0.0))
        return window_ns(stream, tails, floor)

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
        elif v != "base":
            print("unknown variant %s" % v)
            continue
        del seen[:]
        doc = entry.run_judge(task, cases, inputs.Secret(os.urandom(32)), "cuda", os.path.abspath(src_dir),
                              {"iterations": 100}, "diag", "diag") if os.environ.get("DIAG_DEVICE", "cuda") == "cuda" else \
            entry.run_judge(task, cases, inputs.Secret(os.urandom(32)), "cpu", os.path.abspath(src_dir), {"iterations": 20}, "diag", "diag")
        c = doc["cases"][0]
        # the last 100 calls are the timed ones (warm-up batches come first)
        calls = [(s, t, f, pos) for stream, tails, f in seen for pos, (s, t) in enumerate(zip(stream, tails))][-100:]
        if not calls:
            print("%-8s %s" % (v, c["message"]))
            continue
        med = lambda xs: statistics.median(xs) / 1e3  # noqa: E731
        byp = {}
        for s, t, f, pos in calls:
            byp.setdefault(pos, []).append(s + max(0.0, t - f))
        print("%-8s %s | stream %.1f, window %.1f, tail-floor %.1f us (floor %.1f), batches of %s; by position: %s"
              % (v, c["message"], med([s for s, _, _, _ in calls]), med([s + max(0.0, t - f) for s, t, f, _ in calls]),
                 med([max(0.0, t - f) for _, t, f, _ in calls]), calls[-1][2] / 1e3, max(byp) + 1,
                 " ".join("%d:%.1f" % (p, med(xs)) for p, xs in sorted(byp.items())[:8])), flush=True)


if __name__ == "__main__":
    main()
