"""A/B timing: the incumbent and the submission timed side by side in one run (kzoo_judge.ab)."""

import json
import os
import unittest

from kzoo_judge import channel, entry, inputs, spawn, timing
from kzoo_judge import task as taskmod
from kzoo_judge.judge import Judge, Options

from . import helpers as h

# Does the same softmax many times over: clearly slower, still correct.
SLOW_SOFTMAX = '''
import torch
def softmax(x):
    y = None
    for _ in range(40):
        y = torch.softmax(x.to(torch.float64), dim=-1)
    return y.to(x.dtype)
'''

WRONG_SOFTMAX = '''
import torch
def softmax(x):
    return torch.softmax(x.float() * 1.5, dim=-1).to(x.dtype)
'''

BROKEN_IMPORT = "def softmax(x):\n    return (\n"

# Right in the correctness trials and the warm-up (its first three calls at the shape the CPU
# times, helpers' measure shape), wrong from then on: first in the pair of index 1, where the
# incumbent's side runs first (ab.py).
WRONG_WHEN_TIMED = '''
import torch
timed = [0]
def softmax(x):
    y = torch.softmax(x.float(), dim=-1)
    if tuple(x.shape) == (64, 256):
        timed[0] += 1
        if timed[0] > 3:
            y = y * 1.5
    return y.to(x.dtype)
'''


CATALOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "catalog")


def catalog_softmax_task():
    with open(os.path.join(CATALOG, "tasks", "softmax", "task.json")) as f:
        return json.load(f)


def judge_ab(candidate, incumbent, options=None, task_raw=None, device="cpu", early=False):
    """One judge run of `candidate` with `incumbent` as the A/B baseline. Returns the document.
    early: both children started ahead of the judge, as entry.py starts them (spawn.early);
    then returns (the document, the pool)."""
    task = taskmod.Task(json.loads(json.dumps(task_raw or h.softmax_task())))
    cand, inc = h.Sandbox(candidate, task.module), h.Sandbox(incumbent, task.module)
    pool = spawn.early(cand.src, device, incumbent=inc.src) if early else None
    try:
        opts = dict(h.FAST, iterations=24, warmup=3, batch=4)
        opts.update(options or {})
        opts["incumbent_src"] = inc.src
        cases = entry.cases_from_workload(task)
        doc = entry.run_judge(task, cases, inputs.Secret(b"a" * 32), device, cand.src, Options(opts, device),
                              "test/kernel", "test-runner", early=pool)
        return (doc, pool) if early else doc
    finally:
        cand.close()
        inc.close()


# The options of the tests that hold identical code to the band 0.8-1.25: 32 timed pairs.
AB_PAIRS_32 = {"iterations": 128, "warmup": 2, "batch": 4}
# The tests that hold identical code to that band time a 256x1024 softmax (~0.35-0.6 ms a call
# here), not the task's 64x256 (~0.06-0.11 ms): with the smaller call one run's figure is mostly
# harness noise. Measured on this 2-core VM, 2026-12-04 (scripts/ab_noise_cpu.py, docs/PERF.md):
# at 64x256 the per-call spread read 1.5-2.7; identical code read 0.89-1.11 alone and 0.93-1.14
# beside a CPU hog, and the orphan saboteur beside the hog 0.86-1.01 at 32 pairs and 0.84-1.06 at
# 64 (more pairs did not narrow it); CI's run of the orphan test once fell outside 0.8-1.25. At
# 256x1024 the spread read 0.26-0.94, identical code 0.96-1.05 alone and the orphan saboteur beside
# the hog 0.94-1.01. (glibc's mmap threshold, which once made one child 1.6x slower, no longer
# shows at either size with the children's fixed thresholds removed: 0.91-1.06 at 64x256,
# 0.97-1.03 at 256x1024.)
IDENTICAL_TASK = h.softmax_task()
IDENTICAL_TASK["workloads"]["synthetic"]["measure"] = [[256, 1024]]


class ChildrenStartedAhead(unittest.TestCase):
    """Every child of an A/B run is started ahead of its turn, before the judge imports torch
    (entry.py, spawn.early): the submission's, the incumbent's and the submission's timing child
    (a fresh one after the correctness trials); none is left running untaken."""

    def _run(self, candidate, early=True):
        started, used, self.calibrated = [], [], []
        real_start, real_init, real_cal = spawn.Pool.start, channel.Child.__init__, Judge._calibrate

        def calibrate(judge, child, cases, overheads):
            self.calibrated.append(child.pid)
            return real_cal(judge, child, cases, overheads)

        def start(pool, workdir, **kw):
            ok = real_start(pool, workdir, **kw)
            if ok:
                started.append(pool.members[-1].proc)
            return ok

        def init(child, *a, **k):
            real_init(child, *a, **k)
            used.append(child.pid)
        spawn.Pool.start, channel.Child.__init__, Judge._calibrate = start, init, calibrate
        try:
            if early:
                doc, pool = judge_ab(candidate, h.GOOD_SOFTMAX, early=True)
            else:
                doc, pool = judge_ab(candidate, h.GOOD_SOFTMAX), None
        finally:
            spawn.Pool.start, channel.Child.__init__, Judge._calibrate = real_start, real_init, real_cal
        return doc, pool, started, used

    def test_an_accepted_run_takes_every_child_it_started_and_starts_none_late(self):
        doc, pool, started, used = self._run(h.GOOD_SOFTMAX)
        self.assertIn("speedup", h.case0(doc), doc)
        self.assertEqual(len(started), 3, "the submission's, the incumbent's, its timing child: all by entry.py")
        self.assertEqual(sorted(used), sorted(p.pid for p in started), "every child came from the pool")
        self.assertEqual(pool.members, [])
        for p in started:
            self.assertIsNotNone(p.poll(), "no child outlives the run")
        # Calibrated: the incumbent's child and the submission's timing child (the standby, the
        # last started); never the child of the correctness trials, which times nothing.
        self.assertEqual(sorted(self.calibrated), sorted([used[1], started[-1].pid]))
        self.assertNotIn(used[0], self.calibrated)

    def test_without_entry_py_the_judge_starts_the_timing_child_when_the_trials_begin(self):
        doc, _, started, used = self._run(h.GOOD_SOFTMAX, early=False)
        self.assertIn("speedup", h.case0(doc), doc)
        self.assertEqual(len(started), 1, "the standby (Judge._start_standby), nothing else")
        self.assertEqual(used[-1], started[0].pid, "the submission was timed in it")
        self.assertIsNotNone(started[0].poll())

    def test_failed_trials_leave_no_standby_running(self):
        doc, pool, started, used = self._run(WRONG_SOFTMAX)
        self.assertEqual(h.case0(doc)["status"], "incorrect")
        self.assertEqual(len(started), 3)
        self.assertEqual(len(used), 2, "the standby was never taken")
        for p in started:
            self.assertIsNotNone(p.poll(), "the untaken standby was killed")


class ReferenceOncePerPair(unittest.TestCase):
    """Both sides of a pair are checked against the same pristine inputs and expected outputs:
    the reference never runs twice on one input set, and a wrong submission is still refused."""

    def _references(self, candidate):
        import hashlib
        from kzoo_judge import reference
        seen = []
        real = reference.run

        def run(ref, task, args):
            seen.append(hashlib.sha256(b"".join(a.detach().cpu().contiguous().numpy().tobytes() for a in args)).hexdigest())
            return real(ref, task, args)
        reference.run = run
        try:
            doc = judge_ab(candidate, h.GOOD_SOFTMAX)
        finally:
            reference.run = real
        return doc, seen

    def test_the_reference_runs_once_per_input_set(self):
        doc, seen = self._references(h.GOOD_SOFTMAX)
        c = h.case0(doc)
        self.assertIn("speedup", c, doc)
        self.assertEqual(c["incumbent"]["status"], "ok")
        self.assertGreater(len(seen), 10)
        self.assertEqual(len(seen), len(set(seen)), "an input set's reference ran twice")

    def test_a_submission_wrong_only_in_its_timed_calls_is_still_refused(self):
        # Wrong from its first timed call on, in a pair whose incumbent side ran first: its
        # compared calls are checked against the expected outputs that side computed.
        doc, _ = self._references(WRONG_WHEN_TIMED)
        c = h.case0(doc)
        self.assertEqual(c["status"], "incorrect", c["message"])
        self.assertIn("at shape", c["message"])
        self.assertFalse(doc["overall"]["accept"])


class Interleaved(unittest.TestCase):
    def test_a_faster_submission_shows_a_stable_speedup_above_one(self):
        doc = judge_ab(h.GOOD_SOFTMAX, SLOW_SOFTMAX)
        self.assertTrue(doc["overall"]["accept"], doc["overall"]["accept_reason"])
        c = h.case0(doc)
        self.assertEqual(c["incumbent"]["status"], "ok")
        self.assertTrue(c["incumbent"]["correct"])
        self.assertEqual(c["incumbent"]["samples"], 24)
        self.assertGreater(c["incumbent"]["median_us"], 0)
        self.assertEqual(set(c["incumbent"]["metrics"]), set(c["metrics"]))
        s = c["speedup"]
        self.assertEqual(s["pairs"], 6)
        # 40 float64 softmaxes against one float32: far above any noise.
        self.assertGreater(s["value"], 2.0, c["message"])
        self.assertGreater(s["ratio_median"], 2.0)
        self.assertIsNotNone(s["spread"])
        # The incumbent's median over the submission's is what `value` says.
        self.assertAlmostEqual(s["value"], c["incumbent"]["median_us"] / c["metrics"]["time_us"], places=6)

    def test_a_slower_submission_shows_a_speedup_below_one(self):
        c = h.case0(judge_ab(SLOW_SOFTMAX, h.GOOD_SOFTMAX))
        self.assertLess(c["speedup"]["value"], 0.5, c["message"])

    def test_a_fast_incumbent_is_not_penalised_when_the_harness_costs_more_than_its_calls(self):
        # Regression: at a CPU measure shape the fused softmax takes tens of microseconds,
        # less than sharing one output tensor used to cost. The cross-check took that
        # harness noise for a lying timer and replaced the fast side's samples with the
        # judge's clock, and the six-times-slower submission measured ~1.9x FASTER.
        raw = catalog_softmax_task()
        raw["workloads"]["synthetic"]["measure"] = [[64, 1024]]
        raw["workloads"]["synthetic"]["graded"] = raw["workloads"]["synthetic"]["graded"][:1]
        with open(os.path.join(CATALOG, "samples", "softmax_fused.py")) as f:
            fused = f.read()
        with open(os.path.join(CATALOG, "samples", "softmax_six_passes.py")) as f:
            slow = f.read()
        opts = {"iterations": 40, "batch": 10}
        c = h.case0(judge_ab(slow, fused, opts, task_raw=raw))
        self.assertLess(c["speedup"]["value"], 1.0, c["message"])
        self.assertLess(c["speedup"]["ratio_median"], 1.0, c["message"])
        c = h.case0(judge_ab(fused, slow, opts, task_raw=raw))
        self.assertGreater(c["speedup"]["value"], 1.0, c["message"])
        self.assertGreater(c["speedup"]["ratio_median"], 1.0, c["message"])

    def test_identical_code_measures_the_same_in_either_slot(self):
        # Regression: glibc's history-dependent mmap threshold made the submission's
        # child (which ran the correctness trials) time the same softmax ~1.6x slower
        # than the incumbent's in about half the runs. Two runs, each must be close.
        # 32 pairs a run: with 16, the median per-pair ratio of honest identical code drew
        # 0.75-1.26 on this 2-core machine while two builds ran beside it, and once left the
        # band on CI's otherwise idle VM; a systematic 1.6x stays far outside it either way.
        # At 256x1024 (IDENTICAL_TASK): the smaller call's figures are mostly harness noise.
        for _ in range(2):
            c = h.case0(judge_ab(h.GOOD_SOFTMAX, h.GOOD_SOFTMAX, AB_PAIRS_32, task_raw=IDENTICAL_TASK))
            self.assertGreater(c["speedup"]["ratio_median"], 0.8, c["message"])
            self.assertLess(c["speedup"]["ratio_median"], 1.25, c["message"])

    def test_the_submission_is_timed_in_a_fresh_child_like_the_incumbent(self):
        # The child that ran the correctness trials carries their history; timing the
        # submission there gave its slot a few percent on a loaded CPU. Three children:
        # the incumbent's, the submission's for correctness, the submission's for timing.
        started = []
        real_init = channel.Child.__init__

        def counting_init(child, workdir, *a, **kw):
            started.append(workdir)
            real_init(child, workdir, *a, **kw)
        channel.Child.__init__ = counting_init
        try:
            c = h.case0(judge_ab(h.GOOD_SOFTMAX, SLOW_SOFTMAX))
        finally:
            channel.Child.__init__ = real_init
        self.assertEqual(c["status"], "ok", c["message"])
        self.assertEqual(len(started), 3, started)
        # the submission's source twice (its correctness child, its timing child), the incumbent's once
        self.assertEqual(sorted(started.count(d) for d in set(started)), [1, 2], started)
        self.assertNotEqual(started[0], started[1], "the incumbent has a child of its own")

    def test_both_sides_are_figured_through_one_harness_overhead(self):
        # Regression: each side's flagged batches were charged wall - its own child's calibrated
        # overhead; the child calibrated while the machine was busier was charged less in every
        # flagged batch, and identical code came out faster than itself in 10 of 10 pairs on a
        # loaded CPU. The calibrations are made to differ here, as load makes them.
        lines = iter(timing.Overhead(f * 1000.0, f * 400.0) for f in range(1, 100))
        real_fit, real_figure = timing.Overhead.fit, Judge.figure
        seen = []

        def fit(samples):
            return next(lines)

        def figure(judge, child_ns, wall, overhead, check_ns=None):
            seen.append(overhead.as_dict())
            return real_figure(judge, child_ns, wall, overhead, check_ns)
        timing.Overhead.fit = staticmethod(fit)
        Judge.figure = figure
        try:
            c = h.case0(judge_ab(h.GOOD_SOFTMAX, h.GOOD_SOFTMAX))
        finally:
            timing.Overhead.fit = real_fit
            Judge.figure = real_figure
        self.assertEqual(c["status"], "ok", c["message"])
        self.assertIsNotNone(c["speedup"], c["message"])
        self.assertGreaterEqual(len(seen), 2 * c["speedup"]["pairs"], seen)
        self.assertEqual(len({json.dumps(d, sort_keys=True) for d in seen}), 1, seen)

    def test_an_incorrect_submission_is_rejected_even_against_a_slow_incumbent(self):
        doc = judge_ab(WRONG_SOFTMAX, SLOW_SOFTMAX)
        self.assertFalse(doc["overall"]["accept"])
        c = h.case0(doc)
        self.assertEqual(c["status"], "incorrect")
        self.assertIsNone(c["speedup"])
        self.assertEqual(c["incumbent"]["status"], "skipped")

    def test_an_incorrect_incumbent_is_reported_and_does_not_block_a_correct_submission(self):
        doc = judge_ab(h.GOOD_SOFTMAX, WRONG_SOFTMAX)
        self.assertTrue(doc["overall"]["accept"], doc["overall"]["accept_reason"])
        c = h.case0(doc)
        self.assertEqual(c["incumbent"]["status"], "incorrect")
        self.assertFalse(c["incumbent"]["correct"])
        self.assertIn("incorrect", c["incumbent"]["message"])
        # Its times still count: the comparison is still made.
        self.assertIsNotNone(c["speedup"])
        self.assertEqual(c["incumbent"]["samples"], 24)

    def test_an_incumbent_that_cannot_be_imported_gives_no_speedup(self):
        doc = judge_ab(h.GOOD_SOFTMAX, BROKEN_IMPORT)
        self.assertTrue(doc["overall"]["build_ok"])
        c = h.case0(doc)
        self.assertEqual(c["status"], "ok")
        self.assertEqual(c["incumbent"]["status"], "error")
        self.assertIn("importing the incumbent failed", c["incumbent"]["message"])
        self.assertIsNone(c["speedup"])

    def test_an_incumbent_that_raises_stops_the_comparison(self):
        raising = "def softmax(x):\n    raise RuntimeError('old kernel broke')\n"
        c = h.case0(judge_ab(h.GOOD_SOFTMAX, raising))
        self.assertEqual(c["status"], "ok")
        self.assertEqual(c["incumbent"]["status"], "error")
        self.assertIn("old kernel broke", c["incumbent"]["message"])
        self.assertIsNone(c["speedup"])

    def test_both_sides_see_the_same_inputs(self):
        # A submission that records a fingerprint of every input it sees, and an
        # incumbent that does the same into another file: the lists must match.
        import os
        import tempfile
        d = tempfile.mkdtemp(prefix="kzoo-ab-")
        rec = '''
import torch
def softmax(x):
    with open(%r, "a") as f:
        f.write("%%.17g\\n" %% float(x.double().sum()))
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
'''
        try:
            judge_ab(rec % os.path.join(d, "a"), rec % os.path.join(d, "b"), {"iterations": 8, "warmup": 0})
            with open(os.path.join(d, "a")) as fa, open(os.path.join(d, "b")) as fb:
                a, b = fa.read().split(), fb.read().split()
            # The submission also ran correctness trials and a profiler pass; the timed calls are the
            # ones the incumbent saw too, in the same order. (More than 8 when a pair was re-run:
            # writing a file in the timed call can make the clocks disagree.)
            self.assertGreaterEqual(len(b), 8)
            self.assertLessEqual(len(b), 8 * (1 + timing.FLAG_RETRIES))
            timed = [x for x in a if x in set(b)]
            self.assertEqual(timed, b)
        finally:
            import shutil
            shutil.rmtree(d, ignore_errors=True)

    def test_without_the_option_the_document_has_no_ab_fields(self):
        c = h.case0(h.judge(h.softmax_task(), h.GOOD_SOFTMAX))
        self.assertNotIn("incumbent", c)
        self.assertNotIn("speedup", c)


# A saboteur (issue 10): the honest softmax, plus a helper process that escapes the
# submission's process group and works whenever the submission is stopped -- that is,
# while the incumbent is timed. HELPER picks how it escapes: "session" (a session of its
# own, still the child's child) or "orphan" (a double fork: re-parented away from the child).
# WORK is what it does: "cpu" burns the CPU it inherited (the timing CPU), "gpu" keeps the
# device busy from a CUDA context of its own.
SABOTEUR = '''
import os, select, subprocess, sys, torch
_LOOP = r"""
import os, sys, time
parent, work, ready = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
if work == "gpu":
    import torch
    # A context made at once (torch.cuda.init() alone makes none: the driver makes it at the
    # first allocation or launch).
    torch.zeros(1, device="cuda")
os.write(ready, b"up\\n")
os.close(ready)
def stopped():
    try:
        with open("/proc/%d/stat" % parent) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except OSError:
        sys.exit(0)
while True:
    if stopped():
        if work == "gpu":
            torch.cuda._sleep(50_000_000)
            torch.cuda.synchronize()
        else:
            end = time.perf_counter() + 0.05
            while time.perf_counter() < end:
                pass
    else:
        time.sleep(0.0005)
"""
# The import waits until the helper is up, its CUDA context made, as a real saboteur would: a
# helper still importing torch when timing starts runs only between the freezer's stops (an
# orphan is stopped whichever side runs) and on the H200 never got its context up within the
# run (2026-12-02: nothing to refuse, both GPU tests failed on it).
_r, _w = os.pipe()
os.set_inheritable(_w, True)
_me = os.getpid()
_argv = [sys.executable, "-c", _LOOP, str(_me), "@WORK@", str(_w)]
if "@HELPER@" == "session":
    subprocess.Popen(_argv, start_new_session=True, pass_fds=(_w,))
elif os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, _argv)
    os._exit(0)
else:
    os.wait()
os.close(_w)
select.select([_r], [], [], 120)
os.close(_r)
def softmax(x):
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
'''


def saboteur(helper, work):
    return SABOTEUR.replace("@HELPER@", helper).replace("@WORK@", work)


# What these runs cannot show alone: with the freezer mutated to spare orphans, the orphan burned 33
# times in one run yet reached few of the incumbent's timed calls (it wakes every 0.5 ms and shares
# the CPU in the scheduler's slices): 0.91-0.97 at 256x1024, and at 1024x2048 a per-pair median of
# 1.15-1.36 but a speed-up of 1.02-1.04. test_freezer.OrphansComeLast holds the freezer to stopping
# them, signal by signal.
class Containment(unittest.TestCase):
    """No process of the submission's, wherever it hides, works while the incumbent is timed."""

    def assert_not_swayed(self, helper, work, device="cpu", own_side_pays=False):
        c = h.case0(judge_ab(saboteur(helper, work), h.GOOD_SOFTMAX, AB_PAIRS_32, task_raw=IDENTICAL_TASK,
                             device=device))
        self.assertEqual(c["status"], "ok", c["message"])
        # identical code against itself: the saboteur must not move the ratio out of the band
        # test_identical_code_measures_the_same_in_either_slot allows honest code -- neither the
        # per-pair ratios' median nor the speed-up the verdict uses (the medians' ratio: on the
        # H200 one run read a median pair ratio of 1.007 and a speed-up of 4.0x)
        for key in ("ratio_median", "value"):
            self.assertLess(c["speedup"][key], 1.25, "%s: %s" % (key, c["message"]))
            if not own_side_pays:
                self.assertGreater(c["speedup"][key], 0.8, "%s: %s" % (key, c["message"]))

    def assert_refused_for_its_context(self, helper):
        # On a GPU a helper with a CUDA context of its own is refused outright: its kernels
        # outlive its stop (freezer.gpu_holders, Judge._refuse_foreign_contexts).
        c = h.case0(judge_ab(saboteur(helper, "gpu"), h.GOOD_SOFTMAX, AB_PAIRS_32, device="cuda"))
        self.assertEqual(c["status"], "error", c["message"])
        self.assertIn("holds a CUDA context of its own", c["message"])
        self.assertIn("the submission's", c["message"])
        self.assertIsNone(c.get("speedup"))

    def test_a_helper_in_a_session_of_its_own_is_stopped_with_its_side(self):
        # Only upwards: a helper in its side's own tree runs while its side is timed, as the
        # submission's own work does, and what it costs there is the submission's (its poll of
        # /proc every 0.5 ms on the timing CPU read 0.70-0.86 here, 2026-12-02). What it must
        # never do is work while the incumbent is timed, which would read above the band.
        self.assert_not_swayed("session", "cpu", own_side_pays=True)

    def test_an_orphaned_helper_is_stopped_whichever_side_runs(self):
        self.assert_not_swayed("orphan", "cpu")

    def test_nothing_the_submission_started_outlives_the_run(self):
        import time
        from kzoo_judge import freezer
        judge_ab(saboteur("orphan", "cpu"), h.GOOD_SOFTMAX, {"iterations": 4, "warmup": 1, "batch": 2})
        time.sleep(0.2)

        def cmdline(p):
            try:
                with open("/proc/%d/cmdline" % p, "rb") as f:
                    return f.read().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                return ""
        left = [p for p in freezer.descendants(os.getpid(), freezer.children_map())
                if "parent, work" in cmdline(p) and freezer._stat(p) and freezer._stat(p)[1] != "Z"]
        self.assertEqual(left, [], "the saboteur's helper outlived the run")

    @unittest.skipUnless(__import__("torch").cuda.is_available(), "needs CUDA")
    def test_a_helper_keeping_the_gpu_busy_is_refused_on_the_gpu(self):
        self.assert_refused_for_its_context("session")

    @unittest.skipUnless(__import__("torch").cuda.is_available(), "needs CUDA")
    def test_an_orphaned_helper_keeping_the_gpu_busy_is_refused_on_the_gpu(self):
        self.assert_refused_for_its_context("orphan")


if __name__ == "__main__":
    unittest.main()
