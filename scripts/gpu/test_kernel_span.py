"""kernel_span.py's arithmetic and its attribution of device work to calls, on the CPU.

Run from scripts/gpu: python3 -m unittest -v test_kernel_span
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernel_span as ks  # noqa: E402


class CallFigures(unittest.TestCase):
    def test_sequential_kernels_the_gaps_are_the_span_less_the_sum(self):
        # 10 us, idle 2, 20 us, idle 5, 30 us: sum 60, span 67, 7 us idle in two gaps.
        f = ks.call_figures([("a", 100.0, 110.0), ("b", 112.0, 132.0), ("c", 137.0, 167.0)])
        self.assertEqual((f["kernels"], f["sum_us"], f["span_us"]), (3, 60.0, 67.0))
        self.assertEqual((f["gaps_us"], f["idle_us"]), (7.0, 7.0))
        self.assertEqual(f["top_gaps"], [[5.0, "b", "c"], [2.0, "a", "b"]])

    def test_kernels_are_taken_in_device_start_order_whatever_order_they_come_in(self):
        f = ks.call_figures([("c", 137.0, 167.0), ("a", 100.0, 110.0), ("b", 112.0, 132.0)])
        self.assertEqual((f["span_us"], f["idle_us"]), (67.0, 7.0))
        self.assertEqual(f["top_gaps"][0], [5.0, "b", "c"])

    def test_back_to_back_kernels_have_no_gap(self):
        f = ks.call_figures([("a", 0.0, 10.0), ("b", 10.0, 25.0)])
        self.assertEqual((f["span_us"], f["gaps_us"], f["idle_us"], f["top_gaps"]), (25.0, 0.0, 0.0, []))

    def test_overlapping_kernels_make_the_gaps_negative_and_the_idle_time_stays_true(self):
        # a runs 0-10; b 5-20 on another stream; c starts 4 us after the later end.
        # sum 10 + 15 + 6 = 31, span 30: gaps -1 (not clipped), idle 4 (the one real gap).
        f = ks.call_figures([("a", 0.0, 10.0), ("b", 5.0, 20.0), ("c", 24.0, 30.0)])
        self.assertEqual((f["sum_us"], f["span_us"], f["gaps_us"], f["idle_us"]), (31.0, 30.0, -1.0, 4.0))
        # the gap follows the kernel that ended last (b), not the one that started last before it
        self.assertEqual(f["top_gaps"], [[4.0, "b", "c"]])

    def test_a_kernel_inside_a_longer_one_leaves_the_span_to_the_longer(self):
        f = ks.call_figures([("long", 0.0, 100.0), ("short", 10.0, 20.0), ("next", 103.0, 104.0)])
        self.assertEqual((f["span_us"], f["sum_us"], f["idle_us"]), (104.0, 111.0, 3.0))
        self.assertEqual(f["top_gaps"], [[3.0, "long", "next"]])

    def test_only_the_three_largest_gaps_are_named_largest_first(self):
        # gaps of 1, 4, 2, 8, 3 us between six 1-us kernels k0..k5
        starts, t = [], 0.0
        for g in (0.0, 1.0, 4.0, 2.0, 8.0, 3.0):
            t += g
            starts.append(t)
            t += 1.0
        f = ks.call_figures([("k%d" % i, s, s + 1.0) for i, s in enumerate(starts)])
        self.assertEqual(f["top_gaps"], [[8.0, "k3", "k4"], [4.0, "k1", "k2"], [3.0, "k4", "k5"]])
        self.assertEqual((f["idle_us"], f["sum_us"], f["span_us"]), (18.0, 6.0, 24.0))

    def test_copies_and_memsets_hold_the_device_but_are_no_kernels_ncu_sums(self):
        f = ks.call_figures([("gemm", 0.0, 100.0), ("Memcpy DtoH (Device -> Pinned)", 101.0, 104.0),
                             ("Memset (Device)", 105.0, 106.0), ("softmax", 106.0, 126.0)])
        self.assertEqual((f["kernels"], f["sum_us"], f["kernel_sum_us"], f["span_us"]), (4, 124.0, 120.0, 126.0))

    def test_a_single_kernel_spans_its_own_duration(self):
        f = ks.call_figures([("only", 50.0, 80.5)])
        self.assertEqual((f["kernels"], f["sum_us"], f["span_us"], f["gaps_us"], f["idle_us"], f["top_gaps"]),
                         (1, 30.5, 30.5, 0.0, 0.0, []))

    def test_no_kernels_is_an_error_value_not_a_crash(self):
        self.assertEqual(ks.call_figures([]), {"error": "no kernels attributed to the call"})


class Summary(unittest.TestCase):
    def test_medians_over_calls_and_the_window_less_the_span_per_call(self):
        figs = [ks.call_figures(c) for c in (
            [("a", 0.0, 10.0), ("b", 12.0, 22.0)],   # sum 20, span 22
            [("a", 0.0, 11.0), ("b", 14.0, 24.0)],   # sum 21, span 24
            [("a", 0.0, 10.0), ("b", 11.0, 21.0)])]  # sum 20, span 21
        sm = ks.summarize(figs, [30.0, 29.0, 40.0])  # window - span: 8, 5, 19
        self.assertEqual((sm["calls"], sm["errors"], sm["kernels"], sm["kernels_min"], sm["kernels_max"]),
                         (3, 0, 2, 2, 2))
        self.assertEqual((sm["sum_us"], sm["span_us"], sm["gaps_us"], sm["idle_us"]), (20.0, 22.0, 2.0, 2.0))
        self.assertEqual((sm["window_us"], sm["window_minus_span_us"]), (30.0, 8.0))

    def test_calls_without_kernels_are_counted_and_left_out_of_the_medians(self):
        figs = [ks.call_figures([("a", 0.0, 10.0)]), ks.call_figures([]), ks.call_figures([("a", 0.0, 12.0)])]
        sm = ks.summarize(figs, [15.0, 99.0, 15.0])
        self.assertEqual((sm["calls"], sm["errors"], sm["span_us"], sm["window_us"]), (3, 1, 11.0, 15.0))
        self.assertEqual(sm["window_minus_span_us"], 4.0)  # median of 5 and 3

    def test_no_call_with_kernels_gives_the_error(self):
        sm = ks.summarize([ks.call_figures([])], [10.0])
        self.assertEqual(sm, {"calls": 1, "errors": 1, "error": "no kernels attributed to the call"})
        self.assertEqual(ks.summarize([], [])["error"], "no calls")


class Names(unittest.TestCase):
    def test_each_name_s_median_time_a_call_in_the_median_call_s_order(self):
        calls = [[("fill", 0.0, 2.0), ("mul", 3.0, 7.0), ("mul", 8.0, 12.0)],     # span 12: mul 8 a call
                 [("fill", 0.0, 2.0), ("mul", 3.0, 8.0), ("mul", 9.0, 14.0)],     # span 14: mul 10
                 [("fill", 0.0, 3.0), ("mul", 4.0, 10.0), ("mul", 12.0, 18.0)]]   # span 18: mul 12
        self.assertEqual(ks.names_table(calls), [("fill", 1, 2.0), ("mul", 2, 10.0)])


class Attribution(unittest.TestCase):
    # Two calls, each after a flush in an OTHER range, on the host's clock (us):
    #   other 0-5 (flush launch, corr 1), call 10-20 (launches corr 2, 3),
    #   other 30-35 (flush, corr 4), call 40-50 (launch corr 5; one kernel whose launch Kineto missed).
    RANGES = [(ks.CALL, 40.0, 50.0), (ks.OTHER, 0.0, 5.0), (ks.CALL, 10.0, 20.0), (ks.OTHER, 30.0, 35.0)]
    LAUNCHES = [(1, 1.0), (2, 12.0), (3, 15.0), (4, 31.0), (5, 41.0), (9, 60.0)]

    def test_work_goes_to_the_call_whose_range_made_its_launch(self):
        device = [(1, "fill", 6.0, 9.0), (2, "k1", 13.0, 16.0), (3, "k2", 18.0, 22.0),
                  (4, "fill", 36.0, 39.0), (5, "k1", 44.0, 47.0)]
        calls, by_time = ks.attribute(self.RANGES, self.LAUNCHES, device)
        self.assertEqual(calls, [[("k1", 13.0, 16.0), ("k2", 18.0, 22.0)], [("k1", 44.0, 47.0)]])
        self.assertEqual(by_time, 0)

    def test_a_kernel_that_starts_after_its_range_closed_still_belongs_to_the_range(self):
        # launched at host 12 (call 0) but run on the device at 33-34, inside the next flush's range
        calls, _ = ks.attribute(self.RANGES, self.LAUNCHES, [(2, "late", 33.0, 34.0)])
        self.assertEqual(calls, [[("late", 33.0, 34.0)], []])

    def test_work_without_a_recorded_launch_goes_by_its_device_start(self):
        device = [(77, "triton_a", 45.0, 48.0),  # starts in call 1's range: call 1
                  (78, "triton_b", 52.0, 55.0),  # after call 1's range, before any other: still call 1
                  (79, "stray", 32.0, 33.0)]     # in a flush range: no call's
        calls, by_time = ks.attribute(self.RANGES, self.LAUNCHES, device)
        self.assertEqual(calls, [[], [("triton_a", 45.0, 48.0), ("triton_b", 52.0, 55.0)]])
        self.assertEqual(by_time, 2)

    def test_launches_outside_every_range_and_sync_records_are_no_call_s_work(self):
        device = [(9, "after", 61.0, 62.0), (3, "Context Sync", 15.0, 30.0), (5, "Event Sync", 41.0, 49.0),
                  (0, ks.CALL, 10.0, 20.0), (2, "k1", 13.0, 16.0)]
        calls, by_time = ks.attribute(self.RANGES, self.LAUNCHES, device)
        self.assertEqual((calls, by_time), ([[("k1", 13.0, 16.0)], []], 0))


class KinetoGlue(unittest.TestCase):
    def test_a_cpu_session_yields_its_ranges_in_order(self):
        try:
            import torch
            from torch.profiler import ProfilerActivity, profile, record_function
        except ImportError:
            self.skipTest("no torch")
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for label in (ks.OTHER, ks.CALL, ks.OTHER, ks.CALL):
                with record_function(label):
                    torch.ones(8).add_(1)
        ranges, launches, device = ks.kineto_events(prof)
        self.assertEqual([r[0] for r in sorted(ranges, key=lambda r: r[1])], [ks.OTHER, ks.CALL] * 2)
        self.assertTrue(all(s <= e for _, s, e in ranges))
        self.assertEqual((launches, device), ([], []))  # no GPU here: no runtime calls, no device work
        calls, by_time = ks.attribute(ranges, launches, device)
        self.assertEqual((calls, by_time), ([[], []], 0))


if __name__ == "__main__":
    unittest.main()
