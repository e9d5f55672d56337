"""trace_read.py: a traced grade read call by call against ncu, on the CPU.

Run from scripts/gpu: python3 -m unittest -v test_trace_read
"""
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import trace_read  # noqa: E402

# Two cases as `kzoo grade -v --judge-options '{"trace": true}'` logs them: floors per shape, then
# each batch's stream windows and tails, its figures and whether the cross-check flagged it, then
# the case's line. ncu says 100 us for case 0 and 200 us for case 1.
ERR = """kzoo-judge: window tail floors by call length (least stream: least tail, us): 0 us: 20.0, 250 us: 30.0
kzoo-judge: window tail floors by call length (least stream: least tail, us): 0 us: 25.0, 250 us: 30.0
kzoo-judge: trace: calibration, trivial batch of 2: harness 250.0 us/call (wall 1270.0 us/call)
kzoo-child: trace: calibration call, host enqueue ['20.0', '21.0'] us (pad 1000 us); places [[], []]; sync ['90.0', '91.0'] us; host to return, drain, copy [['30.0', '1000.0', '50.0']] us
kzoo-judge: trace: calibration, trivial batch of 8: harness 230.0 us/call (wall 1250.0 us/call)
kzoo-judge: trace: calibration, level 250 us: harness 400.0 us/call (wall 1700.0, stream 251.0 us/call)
kzoo-child: trace: host enqueue ['200.0', '210.0'] us (pad 1000 us); places [[], []]; sync ['4.0', '5.0'] us; host to return, drain, copy [['200.0', '900.0', '60.0'], ['210.0', '890.0', '61.0']] us
kzoo-child: trace: host enqueue ['200.0', '210.0'] us (pad 1000 us); places [[], []]; sync ['6.0', '7.0'] us
kzoo-judge: trace: stream ['100.0', '101.0', '100.5', '100.0'] us; tails ['30.0', '40.0', '50.0', '60.0'] us
kzoo-judge: trace: t=1.000 batch of 4: child ['120.0', '121.0', '120.5', '120.0'] us; judge 130.0 us/call (est), wall 1545.375 us/call, overhead {}; flagged False
kzoo-judge: case 1/2 synthetic-0: ok (wall 1 s)
kzoo-judge: trace: stream ['202.0', '202.0'] us; tails ['35.0', '35.0'] us
kzoo-judge: trace: t=2.000 batch of 2: child ['300.0', '300.0'] us; judge 300.0 us/call (est), wall 1.0 us/call, overhead {}; flagged True
kzoo-judge: trace: stream ['202.0', '202.0'] us; tails ['35.0', '35.0'] us
kzoo-judge: trace: t=3.000 batch of 2: child ['202.0', '202.0'] us; judge 210.0 us/call (est), wall 1.0 us/call, overhead {}; flagged False
kzoo-judge: case 2/2 synthetic-1: ok (wall 2 s)
"""


# A grade timed by device spans (session 25): the stream line carries each call's span, and the
# judge's figure is the span, held to the stream window less 2% and 10 us; -1 falls back to the
# device-wide window. ncu says 100 us.
SPAN_ERR = """kzoo-child: trace: device records: busy ['99.0', '99.5', '-1.0', '98.0'] us of spans ['100.0', '100.5', '-1.0', '99.0'] us; records [1, 1, 0, 2]
kzoo-judge: trace: stream ['103.0', '103.5', '102.0', '150.0'] us; tails ['8.0', '9.0', '7.0', '6.0'] us; spans ['100.0', '100.5', '-1.0', '99.0'] us
kzoo-judge: trace: t=1.000 batch of 4: child ['100.0', '100.5', '109.0', '137.0'] us; judge 110.0 us/call (est), wall 1200.0 us/call, overhead {}; flagged False
kzoo-judge: case 1/1 synthetic-0: ok (wall 1 s)
"""


class SpansRead(unittest.TestCase):
    def rows(self, err, ncu):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        path = os.path.join(d, "grade_solution_softmax.err")
        with open(path, "w") as f:
            f.write(err)
        return trace_read.case_figures(path, ncu)

    def test_a_span_timed_grade_is_read_by_its_spans_and_the_rule_is_the_spans(self):
        (row,) = self.rows(SPAN_ERR, {0: 100.0})
        # the placed spans' median (100.0, 100.5, 99.0 -> 100.0), the -1 left out; busy likewise
        self.assertAlmostEqual(row["span"], 0.0)
        self.assertAlmostEqual(row["busy"], -1.0)
        # the rule: 100.0, 100.5, 102.0 + 7.0 (no span: the device-wide window), max(99, 150 * 0.98 - 10)
        self.assertAlmostEqual(row["rule"], (100.5 + 109.0) / 2 - 100)
        self.assertAlmostEqual(row["judge"], (100.5 + 109.0) / 2 - 100)

    def test_a_grade_before_spans_has_none(self):
        self.assertEqual([(r["span"], r["busy"]) for r in self.rows(ERR, {0: 100.0, 1: 200.0})], [(None, None)] * 2)


class TraceRead(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        with open(os.path.join(self.dir, "grade_solution_softmax.err"), "w") as f:
            f.write(ERR)
        with open(os.path.join(self.dir, "ncu_solution_softmax.txt"), "w") as f:
            f.write("0 100.0 1\n1 200.0 1\n")

    def test_each_case_says_whether_its_kernels_or_its_charge_are_off(self):
        rows = trace_read.case_figures(os.path.join(self.dir, "grade_solution_softmax.err"),
                                       trace_read.read_ncu(os.path.join(self.dir, "ncu_solution_softmax.txt")))
        self.assertEqual([r["case"] for r in rows], [0, 1])
        c0, c1 = rows
        # case 0: the windows are ncu's within 0.25%; the judge charged the median tail over the floor
        self.assertAlmostEqual(c0["stream"], 0.25)
        self.assertAlmostEqual(c0["judge"], 20.25)
        # the rule, recomputed from the trace: median excess of tail (45 us) over the 0 us level's
        # floor, since every call is shorter than the 250 us level (timing.TailFloors.at)
        self.assertAlmostEqual(c0["rule"], (100.25 + 25.0) / 100 * 100 - 100)
        self.assertEqual((c0["flagged"], c0["batches"]), (0, 1))
        # the same calls' tails by the GPU's events and by the device sync's own blocked time
        self.assertAlmostEqual(c0["tail_us"], 45.0)
        self.assertAlmostEqual(c0["sync_us"], 5.5)
        self.assertIsNone(c1["sync_us"], "a child that logged no sync times")
        # the calibration calls' own trace lines are not the timed calls' (90 and 91 us left out above)
        # the harness: the judge's clock per call less the mean window (100.375 + 45 us)
        self.assertAlmostEqual(c0["harness_us"], 1400.0)
        # case 1: one flagged batch, whose judge-derived figures pull the reported median up
        self.assertAlmostEqual(c1["stream"], 1.0)
        self.assertAlmostEqual(c1["judge"], (251.0 / 200 - 1) * 100)
        self.assertEqual((c1["flagged"], c1["batches"]), (1, 2))

    def test_the_calibration_harness_is_read_per_level_beside_the_timed_calls(self):
        # the trivial level is the median of its batches (250 and 230 us); the 250 us level's own
        self.assertEqual(trace_read.calibration_harness(os.path.join(self.dir, "grade_solution_softmax.err")),
                         [(0, 240.0), (250, 400.0)])

    def test_the_host_phases_are_the_medians_of_timed_and_calibration_calls_apart(self):
        ph = trace_read.host_phases(os.path.join(self.dir, "grade_solution_softmax.err"))
        self.assertEqual(ph["calibration"], [30.0, 1000.0, 50.0])
        self.assertEqual(ph["timed"], [205.0, 895.0, 60.5])

    def test_a_grade_finds_its_ncu_by_the_longest_prefix_of_its_name(self):
        shutil.copy(os.path.join(self.dir, "grade_solution_softmax.err"), os.path.join(self.dir, "grade_solution_softmax_r2.err"))
        with open(os.path.join(self.dir, "ncu_solution_soft.txt"), "w") as f:
            f.write("0 1.0 1\n1 1.0 1\n")
        out = os.path.join(self.dir, "out.txt")
        with open(out, "w") as f:
            old, sys.stdout = sys.stdout, f
            try:
                trace_read.main(self.dir)
            finally:
                sys.stdout = old
        with open(out) as f:
            lines = f.read().splitlines()
        self.assertEqual([l.split()[0] for l in lines], ["solution_softmax"] * 3 + ["solution_softmax_r2"] * 3)
        self.assertTrue(all("case 0: judge +20.25%" in l and "harness 1400 us" in l for l in lines[::3]), lines)
        self.assertTrue(all("host phases us/call, timed | calibration: to return 205 | 30, drain 895 | 1000, copy 60 | 50" in l
                            for l in lines[1::3]), lines)
        self.assertTrue(all("calibration harness us/call: trivial 240, 250 us 400" in l for l in lines[2::3]), lines)


if __name__ == "__main__":
    unittest.main()
