"""ncu_sum.py reads ncu --csv output into a figure per call: summed kernel times split at
ncu_package.py's marker kernels, or (RANGE=1 under app-range replay) one range per call.

Run from scripts/gpu: python3 -m unittest -v test_ncu_sum
"""
import os
import subprocess
import sys
import tempfile
import unittest

import ncu_sum

HEADER = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name",' \
         '"Metric Name","Metric Unit","Metric Value"\n'


def csv_file(rows, noise=("==PROF== Connected to process 1",)):
    """An ncu --csv file: its own log lines (not quoted), the header, then a row per (name, value, unit)
    or (name, value, unit, metric); the metric is gpu__time_duration.sum unless given."""
    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    for line in noise:
        f.write(line + "\n")
    f.write(HEADER)
    for i, row in enumerate(rows):
        name, value, unit = row[:3]
        metric = row[3] if len(row) > 3 else "gpu__time_duration.sum"
        f.write('"%d","1","python3","h","%s","1","7","Command line profiler metrics","%s",'
                '"%s","%s"\n' % (i, name, metric, unit, value))
    f.close()
    return f.name


class ByMarker(unittest.TestCase):
    def test_each_marker_opens_a_shape_whose_kernels_are_summed_per_call(self):
        path = csv_file([("spin_kernel", "1,000", "nsecond"), ("a", "300", "usecond"), ("b", "100", "usecond"),
                         ("a", "300", "usecond"), ("b", "100", "usecond"),
                         ("spin_kernel", "1000", "nsecond"), ("a", "1", "msecond"), ("a", "1", "msecond")])
        self.addCleanup(os.unlink, path)
        self.assertEqual(ncu_sum.by_marker(path, 2), [(400.0, 4), (1000.0, 2)])


class ByPaddedRange(unittest.TestCase):
    def test_each_call_is_its_padded_range_less_the_spin_alone_before_it(self):
        # two shapes of 3 calls: the spin drifts between pairs (3000, 3010, 2990 us), each call's
        # figure is its own pair's difference, and the median of those is the shape's
        path = csv_file([("r", "3000", "usecond"), ("r", "8000", "usecond"),
                         ("r", "3010", "usecond"), ("r", "8020", "usecond"),
                         ("r", "2990", "usecond"), ("r", "7985", "usecond"),
                         ("r", "3", "msecond"), ("r", "3.5", "msecond"),
                         ("r", "3000", "usecond"), ("r", "3600", "usecond"),
                         ("r", "3000", "usecond"), ("r", "3400", "usecond")])
        self.addCleanup(os.unlink, path)
        lines = []
        # the differences: 5000, 5010, 4995 (spread 15 us, 0.30%); 500, 600, 400 (40%)
        self.assertEqual(ncu_sum.by_padded_range(path, 3, lines.append), [(5000.0, 1, 0.3), (500.0, 1, 40.0)])
        self.assertEqual(lines[0], "shape 0: pad alone 2990.0-3010.0 us (spread 20.00 us) across 3 ranges")

    def test_the_command_prints_index_figure_kernels_and_spread(self):
        # fidelity_table.py reads these four fields; the pad's spread goes to stderr
        path = csv_file([("r", "3000", "usecond"), ("r", "3500", "usecond"),
                         ("r", "3002", "usecond"), ("r", "3504", "usecond")])
        self.addCleanup(os.unlink, path)
        here = os.path.dirname(os.path.abspath(__file__))
        run = subprocess.run([sys.executable, os.path.join(here, "ncu_sum.py"), path, "2", "--padded-ranges"],
                             capture_output=True, text=True, check=True)
        self.assertEqual(run.stdout, "0 502.000 1 0.40\n")
        self.assertIn("pad alone 3000.0-3002.0 us (spread 2.00 us) across 2 ranges", run.stderr)

    def test_a_call_no_longer_than_the_pad_alone_has_no_finite_spread(self):
        # noise larger than the call: the figure is printed, and its spread says it is not steady
        path = csv_file([("r", "3000", "usecond"), ("r", "2990", "usecond"),
                         ("r", "3000", "usecond"), ("r", "3000", "usecond")])
        self.addCleanup(os.unlink, path)
        (us, n, spread), = ncu_sum.by_padded_range(path, 2)
        self.assertEqual((us, n), (0.0, 1))
        self.assertEqual(spread, float("inf"))

    def test_rows_that_are_not_whole_pairs_of_every_call_are_refused(self):
        path = csv_file([("r", "3000", "usecond"), ("r", "8000", "usecond"), ("r", "3000", "usecond")])
        self.addCleanup(os.unlink, path)
        with self.assertRaises(SystemExit) as e:
            ncu_sum.by_padded_range(path, 3)
        self.assertIn("3 ranges", str(e.exception))


class Clocks(unittest.TestCase):
    CLK = ncu_sum.CLOCK_METRIC

    def test_each_segment_gives_the_median_least_and_most_sm_clock_of_its_kernels(self):
        path = csv_file([("spin_kernel", "1", "usecond"), ("spin_kernel", "1.98", "cycle/nsecond", self.CLK),
                         ("a", "300", "usecond"), ("a", "1.755", "cycle/nsecond", self.CLK),
                         ("a", "300", "usecond"), ("a", "1.98", "cycle/nsecond", self.CLK),
                         ("a", "300", "usecond"), ("a", "1.86", "cycle/nsecond", self.CLK),
                         ("spin_kernel", "1", "usecond"), ("spin_kernel", "1,980,000,000", "hz", self.CLK),
                         ("b", "1", "msecond"), ("b", "1,500", "MHz", self.CLK)])
        self.addCleanup(os.unlink, path)
        got = ncu_sum.clocks(path)
        self.assertEqual(len(got), 2)
        for (med, lo, hi), want in zip(got, [(1860, 1755, 1980), (1500, 1500, 1500)]):
            self.assertAlmostEqual(med, want[0], places=6)
            self.assertAlmostEqual(lo, want[1], places=6)
            self.assertAlmostEqual(hi, want[2], places=6)

    def test_the_clock_rows_do_not_change_the_summed_times(self):
        path = csv_file([("spin_kernel", "1", "usecond"), ("a", "300", "usecond"),
                         ("a", "1.9", "cycle/nsecond", self.CLK)])
        self.addCleanup(os.unlink, path)
        self.assertEqual(ncu_sum.by_marker(path, 1), [(300.0, 1)])

    def test_an_unknown_unit_is_refused_naming_it_and_the_file(self):
        path = csv_file([("spin_kernel", "1", "usecond"), ("a", "1.9", "furlongs", self.CLK)])
        self.addCleanup(os.unlink, path)
        with self.assertRaises(SystemExit) as e:
            ncu_sum.clocks(path)
        self.assertIn("furlongs", str(e.exception))
        self.assertIn(path, str(e.exception))


class ByRange(unittest.TestCase):
    def test_rows_in_groups_of_one_marker_and_calls_ranges_give_the_median_range(self):
        path = csv_file([("range", "1", "usecond"), ("range", "5,100", "usecond"), ("range", "5,000", "usecond"),
                         ("range", "9,000", "usecond"),
                         ("range", "1", "usecond"), ("range", "700", "usecond"), ("range", "710", "usecond"),
                         ("range", "690", "usecond")])
        self.addCleanup(os.unlink, path)
        self.assertEqual(ncu_sum.by_range(path, 3), [(5100.0, 1), (700.0, 1)])

    def test_a_count_that_is_not_whole_shapes_is_refused_naming_the_file(self):
        path = csv_file([("range", "1", "usecond"), ("range", "5", "usecond")])
        self.addCleanup(os.unlink, path)
        with self.assertRaises(SystemExit) as e:
            ncu_sum.by_range(path, 3)
        self.assertIn("2 ranges", str(e.exception))
        self.assertIn(path, str(e.exception))

    def test_no_rows_is_refused(self):
        path = csv_file([])
        self.addCleanup(os.unlink, path)
        with self.assertRaises(SystemExit):
            ncu_sum.by_range(path, 5)


if __name__ == "__main__":
    unittest.main()
