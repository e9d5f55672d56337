"""Each timed GPU call's device span from the device's activity records (kzoo_judge.spans): which
records are the call's, and what its span is."""

import unittest

import torch

from kzoo_judge import pad, spans

PAD, MARK = pad.PAD_NAME, pad.MARK_NAME


def call(t0, work, pad_us=1000, mark_gap=3):
    """One timed call's records from t0 (ns): the flush and warm-up before it, the pad, `work`
    [(name, start, end)] relative to the pad's end, the mark `mark_gap` us after the last work
    ends, then the output's copy into the judge's arena."""
    recs = [("reduce_kernel (the flush)", t0, t0 + 30_000), ("spin_kernel (the warm-up)", t0 + 31_000, t0 + 2_031_000)]
    p0 = t0 + 2_040_000
    lo = p0 + pad_us * 1000
    recs.append((PAD, p0, lo))
    last = lo
    for name, s, e in work:
        recs.append((name, lo + s, lo + e))
        last = max(last, lo + e)
    m = last + mark_gap * 1000
    recs += [(MARK, m, m + 1_500), ("copy_kernel (the arena)", m + 4_000, m + 90_000)]
    return recs


class PerCall(unittest.TestCase):
    def test_one_kernel_call_is_its_kernels_own_time(self):
        recs = call(0, [("_rope", 1_800, 331_800)])
        self.assertEqual(spans.per_call(recs, 1), [330_000])

    def test_the_gaps_between_a_calls_own_kernels_are_its_cost(self):
        recs = call(0, [("k1", 2_000, 102_000), ("k2", 107_000, 207_000), ("Memcpy DtoD (Device -> Device)", 210_000, 260_000)])
        self.assertEqual(spans.per_call(recs, 1), [258_000])

    def test_work_on_a_side_stream_is_the_calls_until_its_end(self):
        # the call's stream ends at 100 us; the side stream runs on to 2.1 ms, before the mark
        recs = call(0, [("main", 1_000, 101_000), ("side", 1_500, 2_101_000)])
        self.assertEqual(spans.per_call(recs, 1), [2_100_000])

    def test_a_copy_begun_beside_the_pad_counts_from_the_pads_end(self):
        recs = call(0, [("Memcpy DtoD (Device -> Device)", -400_000, 50_000), ("k", 50_500, 150_000)])
        self.assertEqual(spans.per_call(recs, 1), [150_000])

    def test_work_still_running_when_the_mark_starts_counts_to_its_end(self):
        recs = call(0, [("k", 1_000, 100_000)])
        m = [r for r in recs if r[0] == MARK][0]
        recs.append(("late", m[1] - 1_000, m[1] + 500_000))
        self.assertEqual(spans.per_call(recs, 1), [m[1] + 500_000 - (m[1] - 3_000 - 100_000 + 1_000)])

    def test_the_flush_the_warm_up_and_the_arena_copy_are_not_the_calls(self):
        recs = call(0, [("k", 1_000, 101_000)])
        self.assertEqual(spans.per_call(recs, 1), [100_000])
        self.assertEqual(len(recs), 6)

    def test_calls_in_a_batch_are_told_apart_in_device_order(self):
        recs = call(0, [("k", 1_000, 301_000)]) + call(10_000_000, [("k", 2_000, 402_000)]) + call(20_000_000, [("k", 1_000, 201_000)])
        recs.reverse()  # the records' order is not the device's
        self.assertEqual(spans.per_call(recs, 3), [300_000, 400_000, 200_000])

    def test_a_call_with_no_device_work_cannot_be_placed(self):
        self.assertEqual(spans.per_call(call(0, []), 1), [-1])

    def test_pads_and_marks_that_do_not_pair_with_the_calls_place_none(self):
        recs = call(0, [("k", 1_000, 101_000)]) + call(10_000_000, [("k", 1_000, 101_000)])
        self.assertEqual(spans.per_call(recs, 3), [-1, -1, -1])
        no_mark = [r for r in recs if not (r[0] == MARK and r[1] > 10_000_000)]
        self.assertEqual(spans.per_call(no_mark, 2), [-1, -1])

    def test_records_on_another_clock_than_the_pads_own_place_none(self):
        # The pads ran 1000 us on the device's timer; records that read them 2.1x long (a TSC clock
        # in place of nanoseconds) would read every call 2.1x long too.
        recs = call(0, [("k", 1_000, 101_000)], pad_us=1000)
        self.assertEqual(spans.per_call(recs, 1, pad_ns=1_000_000), [100_000])
        stretched = [(n, int(a * 2.1), int(b * 2.1)) for n, a, b in recs]
        self.assertEqual(spans.per_call(stretched, 1, pad_ns=1_000_000), [-1])
        self.assertEqual(spans.per_call(recs, 1, pad_ns=2_000_000), [-1], "a pad shorter than asked")

    def test_busy_time_is_the_span_less_the_devices_idle_gaps_between_the_calls_work(self):
        # two kernels 5 us apart, and a side-stream kernel overlapping the second
        recs = call(0, [("k1", 2_000, 102_000), ("k2", 107_000, 207_000), ("side", 150_000, 250_000)])
        self.assertEqual(spans.per_call_detail(recs, 1), [(248_000, 243_000, 3)])
        self.assertEqual(spans.per_call_detail(call(0, []), 1), [(-1, -1, 0)])

    def test_a_pad_a_little_short_of_its_length_is_the_global_timers_granularity(self):
        recs = call(0, [("k", 1_000, 101_000)], pad_us=999)
        self.assertEqual(spans.per_call(recs, 1, pad_ns=1_000_000), [100_000])


class RecordLayout(unittest.TestCase):
    """Recorder._completed reads CUPTI's records at their fixed offsets (spans.py): driven here by a
    stand-in for libcupti that walks a buffer of records laid out as cupti_activity.h lays them."""

    class FakeLib:
        SIZE = 216  # sizeof(CUpti_ActivityKernel10); memcpy and memset records stand in the same slots

        def __init__(self):
            import ctypes
            self.c = ctypes

        def cuptiActivityGetNextRecord(self, buffer, valid, rec):
            c = self.c
            nxt = buffer.value if rec._obj.value is None else rec._obj.value + self.SIZE
            if nxt + self.SIZE > buffer.value + valid.value:
                return 12  # CUPTI_ERROR_MAX_LIMIT_REACHED
            rec._obj.value = nxt
            return 0

    def test_kernel_copy_and_memset_records_are_read_and_other_kinds_skipped(self):
        import ctypes
        names = [ctypes.create_string_buffer(b"kzoo_pad"), ctypes.create_string_buffer(b"_rope")]
        rows = [(spans.KIND_CONCURRENT_KERNEL, 100, 1_100, names[0]), (spans.KIND_CONCURRENT_KERNEL, 1_102, 1_432, names[1]),
                (spans.KIND_MEMCPY, 1_500, 1_600, None), (spans.KIND_MEMSET, 1_700, 1_705, None), (5, 1, 2, None)]
        buf = ctypes.create_string_buffer(self.FakeLib.SIZE * len(rows))
        base = ctypes.addressof(buf)
        for i, (kind, start, end, name) in enumerate(rows):
            a = base + i * self.FakeLib.SIZE
            ctypes.c_uint32.from_address(a).value = kind
            ctypes.c_uint64.from_address(a + 16).value = start
            ctypes.c_uint64.from_address(a + 24).value = end
            ctypes.c_void_p.from_address(a + 104).value = ctypes.addressof(name) if name is not None else None
        rec = spans.Recorder.__new__(spans.Recorder)
        rec._c, rec._lib, rec.records = ctypes, self.FakeLib(), []
        rec._buffers = {base: buf}
        rec._completed(None, 0, base, len(buf), len(buf))
        self.assertEqual(rec.records, [("kzoo_pad", 100, 1_100), ("_rope", 1_102, 1_432), ("Memcpy", 1_500, 1_600),
                                       ("Memset", 1_700, 1_705)])
        self.assertEqual(rec._buffers, {}, "a delivered buffer is released")


class BatchBegins(unittest.TestCase):
    """child.Harness._spans_begin: what a batch timed by spans drops of the records before it."""

    class Recorder:
        def __init__(self):
            self.on, self.records, self.flushes = True, [("stale", 1, 2)], 0

        def take(self):
            self.flushes += 1
            out, self.records = self.records, []
            return out

    def harness(self, dirty):
        from kzoo_judge.child import Harness
        h = Harness.__new__(Harness)
        h.recorder, h.span_calls, h.span_dirty = self.Recorder(), 3, dirty
        return h

    def test_records_left_by_calls_not_read_are_flushed_away(self):
        h = self.harness(dirty=True)  # a calibration batch's pads and marks, never read
        self.assertIsNone(h._spans_begin())
        self.assertEqual((h.recorder.flushes, h.recorder.records, h.span_calls, h.span_dirty), (1, [], 0, False))

    def test_after_spans_were_read_no_flush_is_needed(self):
        h = self.harness(dirty=False)
        self.assertIsNone(h._spans_begin())
        self.assertEqual((h.recorder.flushes, h.recorder.records), (0, []))


@unittest.skipUnless(torch.cuda.is_available(), "needs a GPU")
class OnTheGpu(unittest.TestCase):
    """The records of a real profiler session over padded, marked calls."""

    def test_spans_of_sleeping_calls_match_their_events_and_count_a_side_stream(self):
        torch.zeros(1, device="cuda")  # the pad loads into the current context
        torch.cuda._sleep(1000)
        torch.cuda.synchronize()
        p, why = pad.ExclusivePad.load()
        self.assertIsNotNone(p, why)
        rec, why = spans.Recorder.load()
        self.assertIsNotNone(rec, why)
        side = torch.cuda.Stream()
        stream = torch.cuda.current_stream()
        windows, device_ends = [], []
        self.assertIsNone(rec.start())
        rec.take()
        for k in range(4):
            a, b, c = (torch.cuda.Event(enable_timing=True) for _ in range(3))
            self.assertIsNone(p.launch(500, stream.cuda_stream))
            a.record()
            torch.cuda._sleep(200_000)
            if k == 3:  # the last call leaves as much again on a side stream
                side.wait_stream(stream)
                with torch.cuda.stream(side):
                    torch.cuda._sleep(400_000)
            b.record()
            torch.cuda.synchronize()
            c.record()
            self.assertIsNone(p.mark(stream.cuda_stream))
            torch.cuda.synchronize()
            windows.append(a.elapsed_time(b) * 1e6)
            device_ends.append(a.elapsed_time(c) * 1e6)
        self.assertIsNone(rec.stop())
        recs = rec.take()
        self.assertTrue(any(r[0] == PAD for r in recs) and any(r[0] == MARK for r in recs), recs[:10])
        got = spans.per_call(recs, 4)
        # Equal sleeps read alike, inside their event windows (a window also holds any wait for a
        # slow host: the first call's did, 150 us against 102, on the H200 in session 25).
        for k in range(3):
            self.assertLessEqual(got[k], windows[k] + 2_000, (got, windows))
            self.assertLess(abs(got[k] - got[0]), 0.02 * got[0], got)
        self.assertGreater(got[3], 2.5 * got[0], (got, windows))  # the side stream's 2x more
        self.assertLessEqual(got[3], device_ends[3] + 2_000, (got, device_ends))
        # and on the device's clock in nanoseconds: the pads read their 500 us
        self.assertEqual(spans.per_call(recs, 4, pad_ns=500_000), got)

        # torch's profiler (the gates' pass) in between, as in the child: it registers a clock of
        # its own (TSC ticks on an x86 host), and the next batch's records must be in ns again.
        import os
        from kzoo_judge import profiling
        os.environ["TEARDOWN_CUPTI"] = "0"
        with profiling.session("cuda"):
            torch.cuda._sleep(200_000)
            torch.cuda.synchronize()
        self.assertIsNone(rec.start())
        rec.take()
        self.assertIsNone(p.launch(500, stream.cuda_stream))
        torch.cuda._sleep(200_000)
        torch.cuda.synchronize()
        self.assertIsNone(p.mark(stream.cuda_stream))
        torch.cuda.synchronize()
        self.assertIsNone(rec.stop())
        again = spans.per_call(rec.take(), 1, pad_ns=500_000)
        self.assertLess(abs(again[0] - got[0]), 0.02 * got[0], (again, got))


if __name__ == "__main__":
    unittest.main()
