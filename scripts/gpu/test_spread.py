"""spread.py: a traced grade's batches read against nvidia-smi's clocks, on the CPU.

Run from scripts/gpu: python3 -m unittest -v test_spread
"""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import spread  # noqa: E402

# Two batches of 4 calls, 1 ms of wall each: the first at full clock, the second slower and at a
# lower SM clock, as `kzoo grade -v` and `nvidia-smi --format=csv,nounits -lms 5` print them.
ERR = [
    "kzoo-judge: time: ...\n",
    "kzoo-judge: trace: t=1764669126.010 batch of 4: child ['500.0', '501.0', '502.0', '500.5'] us; judge 505.0 "
    "us/call (est), wall 250.0 us/call, overhead {'fixed_ns': 1}; flagged False\n",
    "kzoo-judge: trace: t=1764669127.010 batch of 4: child ['560.0', '561.0', '559.0', '560.0'] us; judge 565.0 "
    "us/call (est), wall 250.0 us/call, overhead {'fixed_ns': 1}; flagged False\n",
]
CSV = [
    "timestamp, clocks.current.sm [MHz], clocks.current.memory [MHz], power.draw [W], temperature.gpu, "
    "clocks_event_reasons.active\n",
    "2025/12/02 09:52:06.009, 1980, 3201, 450.10, 40, 0x0000000000000000\n",
    "2025/12/02 09:52:06.010, 1980, 3201, 451.00, 40, 0x0000000000000000\n",
    "2025/12/02 09:52:07.009, 1700, 3201, 699.00, 45, 0x0000000000000004\n",
    "2025/12/02 09:52:07.010, 1710, 3201, 700.00, 45, 0x0000000000000004\n",
    "2025/12/02 09:52:08.000, [N/A], 3201, 700.00, 45, 0x0\n",
]


class Spread(unittest.TestCase):
    def test_a_batch_spans_its_calls_wall_time_before_its_logged_end(self):
        bs = spread.batches(ERR)
        self.assertEqual(len(bs), 2)
        start, end, child, judge, compared = bs[0]
        self.assertAlmostEqual(end - start, 4 * 250e-6, places=6)
        self.assertEqual(child, [500.0, 501.0, 502.0, 500.5])
        self.assertEqual(judge, 505.0)

    def test_a_batchs_checks_line_says_how_many_of_its_calls_were_compared(self):
        err = [ERR[1], "kzoo-judge: trace: t=1764669126.020 checks: 2 of 4 calls compared, 124.5 ms\n", ERR[2]]
        bs = spread.batches(err)
        self.assertEqual([b[4] for b in bs], [2, None])  # the second has no checks line
        lines = spread.report(bs, spread.clock_samples(CSV)).splitlines()
        self.assertRegex(lines[1], r" 2 \| ")
        self.assertRegex(lines[2], r" - \| ")

    def test_nvidia_smi_rows_parse_as_utc_and_bad_rows_are_skipped(self):
        s = spread.clock_samples(CSV)
        self.assertEqual(len(s), 4)  # the header and the [N/A] row are not samples
        self.assertAlmostEqual(s[0][0], 1764669126.009, places=3)
        self.assertEqual(s[2][1], 1700.0)
        self.assertAlmostEqual(spread.clock_samples(CSV, tz_hours=1.0)[0][0], 1764669126.009 - 3600, places=3)

    def test_each_batch_gets_the_samples_in_its_span_and_the_slow_one_goes_with_the_low_clock(self):
        text = spread.report(spread.batches(ERR), spread.clock_samples(CSV))
        lines = text.splitlines()
        self.assertIn("1980", lines[1])
        self.assertIn("1705", lines[2])  # the mean of 1700 and 1710
        self.assertIn("0x0000000000000004", lines[2])
        self.assertIn("medians 500.8..560.0 us (11.83% apart)", text)
        # two batches are too few for a correlation; a third makes one
        self.assertNotIn("pearson", text)
        err = ERR + [ERR[1].replace("1764669126.010", "1764669128.010")]
        csv = CSV + ["2025/12/02 09:52:08.009, 1990, 3201, 450.00, 40, 0x0\n"]
        self.assertIn("pearson r = -1.00", spread.report(spread.batches(err), spread.clock_samples(csv)))

    def test_the_hbm_temperature_is_read_when_sampled(self):
        csv = [CSV[0].rstrip("\n") + ", temperature.memory\n",
               "2025/12/02 09:52:06.009, 1980, 3201, 450.10, 40, 0x0, 61\n",
               "2025/12/02 09:52:07.009, 1980, 3201, 450.10, 40, 0x0, 88\n"]
        s = spread.clock_samples(csv)
        self.assertEqual([x[6] for x in s], [61.0, 88.0])
        self.assertIsNone(spread.clock_samples(CSV)[0][6])  # an older CSV without the column
        lines = spread.report(spread.batches(ERR), s).splitlines()
        self.assertIn(" 61 ", lines[1])
        self.assertIn(" 88 ", lines[2])

    def test_a_batch_without_samples_says_so(self):
        text = spread.report(spread.batches(ERR), [])
        self.assertIn("(no clock sample in the batch)", text)


if __name__ == "__main__":
    unittest.main()
