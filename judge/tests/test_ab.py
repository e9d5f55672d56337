"""A/B timing: the incumbent and the submission timed side by side in one run (kzoo_judge.ab)."""

import json
import os
import unittest

from kzoo_judge import channel, entry, inputs, timing
from kzoo_judge import task as taskmod
from kzoo_judge.judge import Options

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


CATALOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "catalog")


def catalog_softmax_task():
    with open(os.path.join(CATALOG, "tasks", "softmax", "task.json")) as f:
        return json.load(f)


def judge_ab(candidate, incumbent, options=None, task_raw=None):
    """One judge run of `candidate` with `incumbent` as the A/B baseline. Returns the document."""
    task = taskmod.Task(json.loads(json.dumps(task_raw or h.softmax_task())))
    cand, inc = h.Sandbox(candidate, task.module), h.Sandbox(incumbent, task.module)
    try:
        opts = dict(h.FAST, iterations=24, warmup=3, batch=4)
        opts.update(options or {})
        opts["incumbent_src"] = inc.src
        cases = entry.cases_from_workload(task)
        return entry.run_judge(task, cases, inputs.Secret(b"a" * 32), "cpu", cand.src, Options(opts, "cpu"),
                               "test/kernel", "test-runner")
    finally:
        cand.close()
        inc.close()


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
        fused = open(os.path.join(CATALOG, "samples", "softmax_fused.py")).read()
        slow = open(os.path.join(CATALOG, "samples", "softmax_six_passes.py")).read()
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
        for _ in range(2):
            c = h.case0(judge_ab(h.GOOD_SOFTMAX, h.GOOD_SOFTMAX, {"iterations": 64, "warmup": 2, "batch": 4}))
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
        self.assertTrue(started[0].endswith("src") and started[1] == started[2], started)
        self.assertNotEqual(started[0], started[1], "the incumbent has a child of its own")

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


if __name__ == "__main__":
    unittest.main()
