"""A/B timing: the incumbent's module and the submission's, side by side in one run.

Why: a speed-up measured against a stored figure from another day, another
machine state or another driver is mostly noise. Timing both in the same run,
on the same fresh input sets, in alternating batches, cancels the slow drifts
(clock boost, thermal state, neighbours) that dominate run-to-run noise, and
the per-pair ratios give an honest spread for the verdict.

How (KZOO_OPTIONS {"incumbent_src": DIR}):
- The incumbent gets its own child process (channel.Child), spawned and
  loaded BEFORE the submission is imported, with its own harness-cost
  calibration; both sides' flagged batches are then charged through the least
  of the two (timing.Overhead.least). Its module is the task's definition.module under DIR.
- Each timed (and warm-up) step is a PAIR of batches with the SAME labels, so
  both modules see bit-identical fresh input sets (the seeds derive from the
  labels). Pairs alternate their order (A B, B A, A B, ...), so a linear drift
  within the run weighs on both sides equally.
- While one side runs, the other side's process group is SIGSTOPped: neither
  can steal the CPU from, or signal-starve, the batch being timed.
- Both sides' outputs are checked. Only the submission must be correct: an
  incorrect incumbent is reported (`incumbent.status: "incorrect"`) and its
  times still count, since they are still the cost of the incumbent's work.
  An incumbent that raises, dies or times out stops the comparison for the
  rest of the run (never respawned: the submission has run meanwhile); the
  case then carries no `speedup` and the verdict decides what that means.

Case document fields added (only with the option):
  incumbent: {status, correct, median_us, spread, samples, metrics, message}
  speedup:   {value: incumbent median / submission median,
              ratio_median, spread: (p90 - p10) / median of the per-pair ratios,
              pairs, faster_pairs (pairs in which the submission was faster)} | null
"""

import math
import os

from . import timing
from .channel import Child, ChildFailure


def _clean(x):
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


def _median(xs):
    return timing.quantile(sorted(xs), 0.5)


class Incumbent:
    def __init__(self, judge, src_dir):
        self.j = judge
        self.src_dir = os.path.abspath(src_dir)
        self.module_path = os.path.join(self.src_dir, judge.task.module)
        self.child = None
        self.spawned = False
        self.overheads = {}
        self.error = None    # why the incumbent cannot be timed (any more)
        self.results = {}    # case id -> {"status", "samples", "ratios", "messages"}

    # --- the incumbent's child -------------------------------------------------
    def ensure(self, cases, starting=()):
        """Spawn and load the incumbent once; a failure is remembered, not raised. `starting`:
        children spawned but not yet up (Judge._start_child); they come up together with the
        incumbent's, and the incumbent is calibrated only once they are. Why: a child coming up
        does GPU work of its own (its CUDA context, its sleep-rate measure); calibrated beside
        it, the incumbent's tail floors came out higher than the submission's, its figures lower,
        and identical code measured 0.963x against itself in one case on an H200."""
        if self.spawned:
            return
        self.spawned = True
        if not os.path.isfile(self.module_path):
            self.error = "the incumbent has no %s under %s" % (self.j.task.module, self.src_dir)
            return
        try:
            early = self.j.early.take(self.src_dir, self.j.device) if self.j.early is not None else None
            self.child = Child(self.src_dir, self.j.device, self.j.l2_bytes, wait=False, spawned=early)
            for other in starting:
                other.finish_setup()
            self.child.finish_setup()
            self.j._calibrate(self.child, cases, self.overheads)
            r = self.child.request(("load", self.module_path, self.j.task.entry_point, self.src_dir),
                                   self.j.opt.load_timeout_s)
            if r[0] != "ok":
                self._lose("importing the incumbent failed: %s" % (r[1],))
        except ChildFailure as e:
            self._lose("the incumbent's child failed: %s" % e)

    def usable(self):
        return self.error is None and self.child is not None and self.child.proc.poll() is None

    def _lose(self, why):
        self.error = why
        self.drop()

    def drop(self):
        if self.child is not None:
            self.child.kill()
            self.child = None

    def close(self):
        if self.child is not None:
            self.child.close()
            self.child = None

    # --- interleaved timing ----------------------------------------------------
    def timed(self, case, dims, verdicts, bsize, overhead):
        """Warm-up and timed pairs. Returns the submission's (samples, flagged, figures, overhead)
        exactly as Judge.timed does; the incumbent's figures are kept for case_fields."""
        from .judge import CaseFailure
        j = self.j
        res = {"status": "ok", "samples": [], "ratios": [], "messages": [], "flagged": 0}
        self.results[case.id] = res
        # One harness overhead for both sides (timing.Overhead.least): it is the same judge-owned
        # harness on the same CPU or GPU, and each child's own line carried the load of the moment
        # it was calibrated into every flagged batch of its side.
        key = j._dims_key(dims)
        if key in self.overheads and key in j.overheads:
            overhead = timing.Overhead.least([j.overheads[key], self.overheads[key]])

        # While one side runs, the other -- and every process either left behind -- is stopped
        # (Judge._batch, freezer.py).
        def submission(labels, checked):
            return j._batch(dims, labels, "timed", verdicts.append, checked=checked)

        def incumbent(labels, checked):
            if res["status"] not in ("ok", "incorrect") or not self.usable():
                return None
            wrong = []
            try:
                out = j._batch(dims, labels, "timed", lambda v: None, child=self.child, lenient=wrong, checked=checked)
            except (CaseFailure, ChildFailure) as e:
                res["status"] = getattr(e, "status", None) or ("timeout" if getattr(e, "kind", "") == "timeout" else "error")
                res["messages"].append("the incumbent failed: %s" % e)
                self._lose("the incumbent failed in case %s: %s" % (case.id, e))
                return None
            if wrong:
                if res["status"] == "ok":
                    res["messages"].append("the incumbent is incorrect: %s" % wrong[0])
                res["status"] = "incorrect"
            return out

        warm = j.checked_calls(case, "warmup", j.opt.warmup)
        timed = j.checked_calls(case, "timed", j.opt.iterations)

        def pair(kind, start, n, index, attempt=0):
            labels = timing.timed_labels(case.id, start, n, attempt) if kind == "timed" else \
                [(kind, case.id, start + k) for k in range(n)]
            checked = timing.in_batch(timed if kind == "timed" else warm, start, n)
            if index % 2 == 0:
                a = submission(labels, checked)
                b = incumbent(labels, checked)
            else:
                b = incumbent(labels, checked)
                a = submission(labels, checked)
            return a, b

        done = 0
        index = 0
        while done < j.opt.warmup:
            n = min(bsize, j.opt.warmup - done)
            pair("warmup", done, n, index)
            done += n
            index += 1
        samples, flagged, figures = [], 0, []
        done = 0
        while done < j.opt.iterations:
            n = min(bsize, j.opt.iterations - done)
            # A pair in which either side's clocks disagree is run again, both sides on
            # fresh inputs (timing.FLAG_RETRIES): a noise flag on one side alone would
            # inflate that side's figure and bias the ratio.
            def attempt(k):
                (child_ns, wall, check_ns), inc = pair("timed", done, n, index, k)
                f = j.figure(child_ns, wall, overhead, check_ns)
                i = j.figure(inc[0], inc[1], overhead, inc[2]) if inc is not None else None
                return (f, i), f.flagged or (i is not None and i.flagged)
            fig, ifig = j._rerun_while_flagged(attempt)
            figures.append(fig)
            flagged += fig.flagged
            samples.extend(fig.samples_ns)
            if ifig is not None:
                res["flagged"] += ifig.flagged
                res["samples"].extend(ifig.samples_ns)
                a_med, b_med = _median(fig.samples_ns), _median(ifig.samples_ns)
                if a_med > 0 and math.isfinite(b_med):
                    res["ratios"].append(b_med / a_med)
            done += n
            index += 1
        return samples, flagged, figures, overhead

    # --- the document ---------------------------------------------------------------
    def case_fields(self, case, med_ns=None, work=None):
        """`incumbent` and `speedup` for one case document."""
        res = self.results.get(case.id)
        inc = {"status": "error", "correct": False, "median_us": None, "spread": None, "samples": 0,
               "metrics": {}, "message": ""}
        if res is None:
            inc["status"] = "error" if self.error else "skipped"
            inc["message"] = self.error or "not timed: the submission failed this case before its timed batches"
            return {"incumbent": inc, "speedup": None}
        inc["status"] = res["status"]
        inc["correct"] = res["status"] == "ok"
        msgs = list(res["messages"])
        if not res["samples"] and res["status"] == "ok":
            inc["status"], inc["correct"] = "skipped", False
            msgs.append("not timed: the submission failed this case during its warm-up or timed batches")
        if res["flagged"]:
            msgs.append("%d timed batches of the incumbent used the judge-derived time" % res["flagged"])
        speedup = None
        if res["samples"]:
            imed, ispread = timing.summarise(res["samples"])
            inc["median_us"] = _clean(imed / 1e3)
            inc["spread"] = _clean(ispread)
            inc["samples"] = len(res["samples"])
            if work is not None and imed > 0:
                value = timing.metric_value(self.j.task.metric, work, imed / 1e9)
                inc["metrics"] = {k: _clean(v) for k, v in self.j._metrics(case, value, imed).items()}
            if res["status"] in ("ok", "incorrect") and med_ns and med_ns > 0 and res["ratios"]:
                rmed, rspread = timing.summarise(res["ratios"])
                speedup = {"value": _clean(imed / med_ns), "ratio_median": _clean(rmed),
                           "spread": _clean(rspread), "pairs": len(res["ratios"]),
                           "faster_pairs": sum(1 for r in res["ratios"] if r > 1.0)}
                msgs.append("speed-up over the incumbent %.3fx (per-pair ratios: median %.3f, spread %.3f, %d pairs)"
                            % (imed / med_ns, rmed, rspread if math.isfinite(rspread) else float("nan"), len(res["ratios"])))
        inc["message"] = "; ".join(msgs)
        return {"incumbent": inc, "speedup": speedup}
