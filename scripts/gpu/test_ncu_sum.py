"""ncu_sum.py reads ncu --csv output into a figure per call: summed kernel times split at
ncu_package.py's marker kernels, or (RANGE=1 under app-range replay) one range per call.

Run from scripts/gpu: python3 -m unittest -v test_ncu_sum
"""
import os
import tempfile
import unittest

import ncu_sum

HEADER = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name",' \
         '"Metric Name","Metric Unit","Metric Value"\n'


def csv_file(rows, noise=("==PROF== Connected to process 1",)):
    """An ncu --csv file: its own log lines (not quoted), the header, then a row per (name, value, unit)."""
    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    for line in noise:
        f.write(line + "\n")
    f.write(HEADER)
    for i, (name, value, unit) in enumerate(rows):
        f.write('"%d","1","python3","h","%s","1","7","Command line profiler metrics","gpu__time_duration.sum",'
                '"%s","%s"\n' % (i, name, unit, value))
    f.close()
    return f.name


class ByMarker(unittest.TestCase):
    def test_each_marker_opens_a_shape_whose_kernels_are_summed_per_call(self):
        path = csv_file([("spin_kernel", "1,000", "nsecond"), ("a", "300", "usecond"), ("b", "100", "usecond"),
                         ("a", "300", "usecond"), ("b", "100", "usecond"),
                         ("spin_kernel", "1000", "nsecond"), ("a", "1", "msecond"), ("a", "1", "msecond")])
        self.addCleanup(os.unlink, path)
        self.assertEqual(ncu_sum.by_marker(path, 2), [(400.0, 4), (1000.0, 2)])


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
