"""Metric arithmetic, the timing cross-check, summaries, and each gate on its own."""

import math
import unittest

from kzoo_judge import gates, timing
from kzoo_judge import task as taskmod

from tests.helpers import softmax_task

H200 = {"bandwidth_GBps": 4800, "tflops": {"float32": 67, "bfloat16": 989, "float8_e4m3fn": 1979}, "l2_bytes": 52428800}


class Metric(unittest.TestCase):
    def test_units(self):
        self.assertAlmostEqual(timing.metric_value("GB/s", 2e9, 0.5), 4.0)
        self.assertAlmostEqual(timing.metric_value("TFLOP/s", 2e12, 0.5), 4.0)
        self.assertAlmostEqual(timing.metric_value("tokens/s", 1000, 0.5), 2000.0)
        self.assertEqual(timing.metric_value("GB/s", 1, 0), math.inf)

    def test_metrics_requested_by_the_meta(self):
        from kzoo_judge.judge import Case, Judge
        j = Judge.__new__(Judge)
        j.task = taskmod.Task(softmax_task())
        c = Case("c", "synthetic", {"R": 1, "C": 1}, [{"name": "bw", "unit": "GB/s"}, {"name": "t", "unit": "us"},
                                                     {"name": "tm", "unit": "ms"}, {"name": "odd", "unit": "parsecs"}])
        m = j._metrics(c, 123.0, 2_000_000)
        self.assertEqual(m, {"bw": 123.0, "t": 2000.0, "tm": 2.0})


class Summary(unittest.TestCase):
    def test_median_and_spread(self):
        med, spread = timing.summarise([10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110])
        self.assertEqual(med, 60)
        self.assertAlmostEqual(spread, (100 - 20) / 60)
        self.assertTrue(math.isnan(timing.summarise([])[1]))


class CrossCheck(unittest.TestCase):
    def test_overhead_fit_recovers_a_line(self):
        o = timing.Overhead.fit([(2, 1000 + 2 * 50), (8, 1000 + 8 * 50)])
        self.assertAlmostEqual(o.fixed_ns, 1000)
        self.assertAlmostEqual(o.per_call_ns, 50)

    def test_two_calibrations_of_one_harness_make_one_line_of_their_least_costs(self):
        a = timing.Overhead(100_000, 20_000)   # 140 us at 2 calls, 260 us at 8
        b = timing.Overhead(130_000, 12_000)   # 154 us at 2 calls, 226 us at 8
        o = timing.Overhead.least([a, b])
        self.assertAlmostEqual(o.batch_ns(2), 140_000)
        self.assertAlmostEqual(o.batch_ns(8), 226_000)
        self.assertEqual(timing.Overhead.least([a]).as_dict(), a.as_dict())
        self.assertEqual(timing.Overhead.least([]).batch_ns(10), 0)

    def test_honest_child_keeps_its_samples(self):
        o = timing.Overhead(100_000, 20_000)
        child = [1_000_000] * 10  # 10 ms of work
        wall = 10_000_000 + 100_000 + 10 * 20_000 + 50_000
        f = timing.cross_check(child, wall, o)
        self.assertFalse(f.flagged)
        self.assertEqual(f.samples_ns, [1_000_000.0] * 10)

    def test_child_claiming_less_than_the_judge_clock_is_replaced(self):
        o = timing.Overhead(100_000, 20_000)
        child = [10_000] * 10  # claims 0.1 ms total
        wall = 10_000_000 + 100_000 + 10 * 20_000  # the judge saw 10 ms of work
        f = timing.cross_check(child, wall, o)
        self.assertTrue(f.flagged)
        self.assertAlmostEqual(f.samples_ns[0], 1_000_000, delta=1)

    def test_negative_or_nan_times_are_replaced(self):
        f = timing.cross_check([-5, float("nan")], 1_000_000, timing.Overhead())
        self.assertTrue(f.flagged)
        self.assertTrue(all(s > 0 for s in f.samples_ns))

    def test_child_claiming_more_than_the_whole_clock_is_replaced(self):
        f = timing.cross_check([10_000_000], 1_000_000, timing.Overhead())
        self.assertTrue(f.flagged)
        self.assertLessEqual(f.samples_ns[0], 1_000_000)


class CrossCheckOnDeviceWindows(unittest.TestCase):
    """On a GPU the judge's clock is held against each call's device-wide window (stream + tail),
    not its figure, which leaves the harness's tail out up to its floor."""

    def test_honest_calls_with_long_tails_are_not_flagged(self):
        # 500 us calls whose drain took 150 us: the clock holds 650 us a call (+ the calibrated
        # overhead); the figures leave the tails out, the device windows do not
        stream, tails = [500_000] * 4, [150_000] * 4
        figures = timing.window_ns(stream, tails, 160_000)
        wall = 4 * 650_000 + 100_000
        o = timing.Overhead(100_000, 0.0)
        self.assertTrue(timing.cross_check(figures, wall, o, 0.9).flagged)  # held against the figures
        f = timing.cross_check(figures, wall, o, 0.9, timing.checked_ns(stream, tails))
        self.assertFalse(f.flagged)
        self.assertEqual(f.samples_ns, [500_000.0] * 4)

    def test_a_child_that_under_reports_both_ends_is_flagged(self):
        stream, tails = [200_000] * 4, [20_000] * 4  # it really took 650 us a call
        f = timing.cross_check(timing.window_ns(stream, tails, 20_000), 4 * 650_000, timing.Overhead(), 0.75,
                               timing.checked_ns(stream, tails))
        self.assertTrue(f.flagged)
        self.assertEqual(f.samples_ns, [650_000.0] * 4)

    def test_a_malformed_tail_is_flagged(self):
        f = timing.cross_check([500_000.0], 600_000, timing.Overhead(), 0.75, timing.checked_ns([500_000], [-1]))
        self.assertTrue(f.flagged)


class GpuWindow(unittest.TestCase):
    """Each call's figure from its stream end and its device end (timing.window_ns)."""

    def test_an_honest_tail_at_the_floor_leaves_the_stream_figure(self):
        self.assertEqual(timing.window_ns([6_000_000, 6_100_000], [7_000, 6_500], 7_000), [6_000_000.0, 6_100_000.0])

    def test_one_calls_jitter_is_not_charged_to_it(self):
        # A batch of honest 600 us calls whose drains took 29-32 us, and one 180 us (the host was
        # late): against a 35 us floor nothing is charged, the late one included.
        stream = [600_000, 601_000, 599_000, 600_500, 600_200]
        w = timing.window_ns(stream, [30_000, 32_000, 29_000, 180_000, 31_000], 35_000)
        self.assertEqual(w, [float(s) for s in stream])

    def test_a_batch_is_charged_its_median_excess_when_that_is_above_the_floor(self):
        # Every call's drain 50-60 us over a 35 us floor: each call is charged the median excess, 20 us.
        w = timing.window_ns([600_000] * 3, [50_000, 55_000, 60_000], 35_000)
        self.assertEqual(w, [620_000.0] * 3)

    def test_work_hidden_in_most_calls_is_charged_to_every_call(self):
        # 2 ms left on a side stream by three calls of five (the other two honest): the median
        # excess is the hidden work, and every call of the batch carries it.
        w = timing.window_ns([1_000_000] * 5, [2_035_000, 35_000, 2_035_000, 2_035_000, 35_000], 35_000)
        self.assertEqual(w, [3_000_000.0] * 5)

    def test_work_hidden_in_a_minority_of_calls_cannot_lower_the_median(self):
        # Two calls of five hide 2 ms each and claim 1 ms; the other three run the whole 3 ms
        # in the window. Not charged, but the batch's median figure is an honest call's.
        w = timing.window_ns([1_000_000, 3_000_000, 1_000_000, 3_000_000, 3_000_000],
                             [2_035_000, 35_000, 2_035_000, 35_000, 35_000], 35_000)
        self.assertEqual(timing.quantile(sorted(w), 0.5), 3_000_000.0)

    def test_work_past_the_stream_end_is_counted_in_full(self):
        # 2 ms left running on a side stream: the device ended 2 ms + the harness's
        # own 7 us after the stream did; the figure is the device-wide window less the floor.
        self.assertEqual(timing.window_ns([1_000_000], [2_007_000], 7_000), [3_000_000.0])

    def test_uncalibrated_means_the_device_wide_window(self):
        self.assertEqual(timing.window_ns([1_000_000], [30_000], None), [1_030_000.0])

    def test_a_call_gets_the_floor_of_the_longest_level_its_stream_reaches(self):
        floors = timing.TailFloors()
        floors.add([0, 0, 0], [20_000, 20_000, 20_000])             # trivial calls: 20 us
        floors.add([4_100_000, 4_050_000], [41_000, 41_000])      # 4 ms of spinning: 41 us
        floors.add([1_020_000, 1_010_000], [30_000, 30_000])      # 1 ms: 30 us (added out of order)
        self.assertEqual(floors.at(500_000), 20_000)
        self.assertEqual(floors.at(1_010_000), 30_000)
        self.assertEqual(floors.at(3_000_000), 30_000)
        self.assertEqual(floors.at(8_000_000), 41_000)
        # an honest 8 ms call whose drain took 45 us is charged 4 us, not the 25 us above the trivial floor
        self.assertEqual(timing.window_ns([8_000_000], [45_000], floors), [8_004_000.0])
        # 2 ms hidden on a side stream still count in full, less the floor of the call's level
        self.assertEqual(timing.window_ns([6_000_000], [2_041_000], floors), [8_000_000.0])

    def test_a_levels_floor_is_a_high_quantile_of_its_tails_so_jitter_is_not_charged(self):
        # six calibration calls whose drain jittered between 20 and 60 us: an honest call whose tail
        # is within that jitter is charged nothing, hidden work beyond it in full
        floors = timing.TailFloors()
        floors.add([500_000] * 6, [20_000, 22_000, 25_000, 30_000, 41_000, 60_000])
        q = timing.quantile([20_000, 22_000, 25_000, 30_000, 41_000, 60_000], timing.TAIL_QUANTILE)
        self.assertEqual(floors.at(500_000), q)
        self.assertGreater(q, 30_000)
        self.assertEqual(timing.window_ns([500_000], [35_000], floors), [500_000.0])
        self.assertEqual(timing.window_ns([500_000], [335_000], floors), [500_000.0 + 335_000 - q])

    def test_both_sides_of_an_ab_run_are_held_to_the_same_merged_floors(self):
        a, b = timing.TailFloors(), timing.TailFloors()
        a.add([0], [20_000])
        a.add([1_000_000], [30_000])
        b.add([0], [25_000])
        b.add([1_010_000], [28_000])
        m = timing.TailFloors.merged([a, b, None])
        self.assertEqual(m.levels, [(0, 25_000), (1_000_000, 30_000)])
        self.assertIsNone(timing.TailFloors.merged([None, timing.TailFloors()]))

    def test_a_high_reading_at_one_level_is_capped_by_the_longer_levels(self):
        floors = timing.TailFloors()
        for stream, tail in ((0, 19_000), (2_000_000, 46_000), (4_000_000, 86_000), (16_000_000, 55_000)):
            floors.add([stream], [tail])
        self.assertEqual(floors.at(5_000_000), 55_000)
        self.assertEqual(floors.at(3_000_000), 46_000)
        self.assertEqual(floors.at(20_000_000), 55_000)

    def test_a_call_shorter_than_every_level_gets_the_least_level(self):
        floors = timing.TailFloors()
        floors.add([1_000_000], [30_000])
        floors.add([250_000], [24_000])
        self.assertEqual(floors.at(100_000), 24_000)
        self.assertEqual(timing.TailFloors().at(100_000), 0.0)

    def test_malformed_pairs_become_nan_and_are_flagged(self):
        w = timing.window_ns([1_000, -1, 1_000, True], [5, 5, float("nan"), 5], 0)
        self.assertEqual(w[0], 1_005.0)
        self.assertTrue(all(math.isnan(x) for x in w[1:]))
        self.assertTrue(timing.cross_check(w, 10_000, timing.Overhead()).flagged)


    def test_agreement_of_the_clocks(self):
        o = timing.Overhead(0, 0)
        figs = [timing.cross_check([900] * 10, 10_000, o), timing.cross_check([1000] * 10, 10_000, o)]
        least, med, most = timing.agreement(figs)
        self.assertAlmostEqual(least, 0.9)
        self.assertAlmostEqual(most, 1.0)
        self.assertAlmostEqual(med, 0.95)


class SpanFigures(unittest.TestCase):
    """Each call's figure from its device span (timing.span_figures, spans.py)."""

    def test_an_honest_span_a_few_microseconds_inside_the_window_is_the_figure(self):
        # A 330 us kernel: the events' window holds the steps from the pad and to the end event.
        self.assertEqual(timing.span_figures([330_000], [333_500], [2_000]), [330_000.0])

    def test_side_stream_work_is_in_the_span_without_a_tail_to_estimate(self):
        # 2 ms left on another stream: the stream window is 1 ms, the records run 3 ms.
        self.assertEqual(timing.span_figures([3_000_000], [1_000_000], [2_004_000]), [3_000_000.0])

    def test_a_span_far_short_of_the_window_is_held_to_the_window_less_the_slack(self):
        # Records that miss most of a 1 ms call (turned off by it, or lost) are worth 2% + 10 us.
        f = timing.span_figures([100_000], [1_000_000], [3_000])
        self.assertEqual(f, [1_000_000 * (1 - timing.SPAN_SLACK) - timing.SPAN_SLACK_NS])

    def test_a_call_the_records_cannot_place_gets_its_device_wide_window(self):
        self.assertEqual(timing.span_figures([-1, 0], [500_000, 500_000], [4_000, 6_000]), [504_000.0, 506_000.0])

    def test_a_malformed_window_is_nan_and_flagged(self):
        f = timing.span_figures([500_000, 500_000], [500_000, -1], [3_000, 3_000])
        self.assertEqual(f[0], 500_000.0)
        self.assertTrue(math.isnan(f[1]))
        self.assertTrue(timing.cross_check(f, 2_000_000, timing.Overhead()).flagged)

    def test_a_span_that_is_not_an_integer_counts_as_missing(self):
        self.assertEqual(timing.span_figures([True, 1.5e5], [500_000, 500_000], [4_000, 4_000]), [504_000.0, 504_000.0])


class EvenOut(unittest.TestCase):
    """Work moved between the calls of a batch: the batch's mean replaces the low median."""

    def fig(self, samples):
        return timing.BatchFigure([float(x) for x in samples], False, 0.0, float(sum(samples)), 0.0)

    def test_honest_calls_keep_their_own_figures(self):
        f = timing.even_out(self.fig([1000, 1010, 990, 1020, 1005]))
        self.assertFalse(f.evened)
        self.assertEqual(f.samples_ns, [1000.0, 1010.0, 990.0, 1020.0, 1005.0])

    def test_one_call_doing_the_work_of_three_gives_all_three_the_mean(self):
        # Call 0 computed the outputs of calls 1 and 2, which returned them at once.
        f = timing.even_out(self.fig([3010, 10, 10]))
        self.assertTrue(f.evened)
        self.assertEqual(f.samples_ns, [1010.0] * 3)

    def test_flagged_and_two_call_batches_are_left_alone(self):
        flagged = timing.BatchFigure([500.0, 500.0, 500.0], True, 500.0, 30.0, 2000.0)
        self.assertEqual(timing.even_out(flagged).samples_ns, [500.0] * 3)
        self.assertFalse(timing.even_out(self.fig([2000, 10])).evened)  # the median of two is their mean

    def test_only_the_gpu_is_guarded(self):
        from kzoo_judge.judge import Judge, Options
        j = Judge.__new__(Judge)
        j.spin_s = 0.0
        o = timing.Overhead()
        for device, evened in (("cuda", True), ("cpu", False)):
            j.device = device
            j.opt = Options({}, device)
            self.assertEqual(j.figure([3_000_000, 10_000, 10_000], 3_100_000, o).evened, evened)


class Phases(unittest.TestCase):
    def test_nested_phases_count_their_own_time_only(self):
        clock = [0.0]
        real = timing.time.perf_counter
        timing.time.perf_counter = lambda: clock[0]
        try:
            p = timing.Phases()
            with p("checks"):
                clock[0] += 1.0
                with p("reference"):
                    clock[0] += 3.0
                p.add("child batches", 0.5)  # timed elsewhere, inside "checks"
                clock[0] += 0.5
                p.note("calls", 0.25)
            clock[0] += 2.0
            summary = p.summary()
        finally:
            timing.time.perf_counter = real
        self.assertEqual(p.totals, {"checks": 1.0, "reference": 3.0, "child batches": 0.5})
        self.assertEqual(p.notes, {"calls": 0.25})
        self.assertIn("wall 6.50 s", summary)
        self.assertIn("other 2.00 s", summary)

    def test_rerun_labels_are_fresh_inputs(self):
        first = timing.timed_labels("c", 10, 3)
        again = timing.timed_labels("c", 10, 3, attempt=1)
        self.assertEqual(first, [("timed", "c", 10), ("timed", "c", 11), ("timed", "c", 12)])
        self.assertFalse(set(first) & set(again))


class Gates(unittest.TestCase):
    def test_library_gate_cpu(self):
        g, msg = gates.library_gate(["aten::softmax", "aten::mm"], ["aten::softmax", "aten::exp"], "cpu")
        self.assertFalse(g["pass"])
        self.assertIn("aten::mm", msg)
        g, _ = gates.library_gate(["aten::addmm"], ["aten::matmul", "aten::mm"], "cpu")
        self.assertTrue(g["pass"], "a BLAS op is allowed when the reference also uses BLAS")
        g, _ = gates.library_gate(["aten::softmax"], [], "cpu")
        self.assertTrue(g["pass"])

    def test_library_gate_gpu_kernel_names(self):
        g, msg = gates.library_gate(["my_softmax_kernel", "sm90_xmma_gemm_bf16bf16_bf16f32"], ["softmax_warp_forward"], "cuda")
        self.assertFalse(g["pass"])
        self.assertIn("xmma", msg)
        g, _ = gates.library_gate(["cutlass_80_tensorop_gemm"], ["nvjet_tst_128x256", "aten::mm"], "cuda")
        self.assertTrue(g["pass"])
        g, msg = gates.library_gate(["cudnn::bn_fw_tr_1C11_kernel"], ["aten::mm"], "cuda")
        self.assertFalse(g["pass"])
        self.assertIn("cuDNN", msg)

    def test_profile_figures(self):
        ev = [("k1", "kernel", 30.0), ("k2", "kernel", 10.0), ("k1", "kernel", 30.0), ("aten::add", "op", 5.0)]
        f = gates.profile_figures(ev, 2, "cuda")
        self.assertEqual(f["kernels-per-step"], 1.5)
        self.assertAlmostEqual(f["dominant-share"], 60 / 70)
        f = gates.profile_figures([("aten::add", "op", 5.0), ("aten::mul", "op", 15.0)], 1, "cpu")
        self.assertEqual(f["kernels-per-step"], 2)
        self.assertAlmostEqual(f["dominant-share"], 0.75)

    def test_extra_gates_directions_and_unknown(self):
        t = taskmod.Task(softmax_task(extra_gates=[
            {"name": "kernels-per-step", "limit": 1, "direction": "max"},
            {"name": "dominant-share", "limit": 0.9, "direction": "min"},
            {"name": "barriers", "limit": 3}]))
        g, msgs = gates.extra_gates(t, {"kernels-per-step": 2.0, "dominant-share": 0.95})
        self.assertFalse(g["kernels-per-step"]["pass"])
        self.assertTrue(g["dominant-share"]["pass"])
        self.assertFalse(g["barriers"]["pass"], "a gate the judge cannot measure fails closed")
        self.assertEqual(len(msgs), 2)

    def test_roofline_gb_s(self):
        t = taskmod.Task(softmax_task())
        dims = {"R": 4096, "C": 4096}
        roof, how = gates.roofline_seconds(t, dims, H200)
        self.assertAlmostEqual(roof, 2 * 4096 * 4096 * 4 / 4800e9)
        g, msg = gates.roofline_gate(roof / 2, roof, how)
        self.assertFalse(g["pass"])
        self.assertIn("below the roofline", msg)
        self.assertIn("GB/s", msg)
        g, msg = gates.roofline_gate(roof * 2, roof, how)
        self.assertTrue(g["pass"])
        self.assertEqual(msg, "")

    def test_roofline_tflops_uses_the_dominant_dtype(self):
        raw = softmax_task(dtype="bfloat16")
        raw["grading"]["metric"] = "TFLOP/s"
        t = taskmod.Task(raw)
        roof, how = gates.roofline_seconds(t, {"R": 100, "C": 100}, H200)
        self.assertAlmostEqual(roof, 2 * 100 * 100 * 4 / 989e12)
        self.assertIn("bfloat16", how)

    def test_roofline_other_metrics_scale_the_workload_roofline(self):
        raw = softmax_task()
        raw["grading"]["metric"] = "tokens/s"
        t = taskmod.Task(raw)
        graded = [{"R": 4096, "C": 4096}]
        roof, _ = gates.roofline_seconds(t, {"R": 2048, "C": 4096}, H200, graded, 300.0)
        self.assertAlmostEqual(roof, 150e-6)
        self.assertIsNone(gates.roofline_seconds(t, {"R": 1, "C": 1}, H200)[0])


if __name__ == "__main__":
    unittest.main()
