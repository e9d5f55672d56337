"""fidelity_table.py: each graded case against ncu and against its plain-process span, on the CPU.

Run from scripts/gpu: python3 -m unittest -v test_fidelity_table
"""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fidelity_table as ft  # noqa: E402


def grade_doc(medians, outcome="accepted"):
    """`kzoo grade --json`: the judge's document, kzoo's decision beside its cases (cmd_grade.cpp)."""
    cases = [{"test_case_id": "graded-%d" % i, "message": "median %s us over 100 timed calls" % m}
             for i, m in enumerate(medians)]
    return {"cases": cases, "overall": {"accept": False}, "kzoo_grade": {"decision": {"outcome": outcome}}}


class Logs:
    """A fidelity.sh LOGS folder written file by file."""

    def __init__(self, test):
        self.dir = tempfile.mkdtemp(prefix="kzoo-fidelity-test-")
        test.addCleanup(shutil.rmtree, self.dir)

    def write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def grade(self, name, medians, outcome="accepted"):
        self.write("grade_%s.json" % name, json.dumps(grade_doc(medians, outcome)))

    def ncu(self, name, rows):  # (us a call, kernels over the profiled calls) per shape
        self.write("ncu_%s.txt" % name, "".join("%d %s %d\n" % (i, us, k) for i, (us, k) in enumerate(rows)))

    def ncu_padded(self, name, rows):
        """ncu_sum.py --padded-ranges: per shape (us a call, spread in percent), or us alone as a run
        before the spread was printed wrote it."""
        self.write("ncu_%s_padded.txt" % name, "".join(
            "%d %s 1 %s\n" % ((i,) + r) if isinstance(r, tuple) else "%d %s 1\n" % (i, r) for i, r in enumerate(rows)))

    def spans(self, name, lines):
        """kernel_span.py's lines for package `name`, appended to the run's one file, named by its source folder."""
        src = "catalog/x/%s/src" % name
        with open(os.path.join(self.dir, "span_index.tsv"), "a") as f:
            f.write("%s\t%s\n" % (name, src))
        with open(os.path.join(self.dir, "spans.jsonl"), "a") as f:
            f.write("".join(json.dumps(dict(x, src=src)) + "\n" for x in lines))


def row_of(text, name, case):
    for line in text.splitlines():
        cols = [c.strip() for c in line.split("|")]
        if cols[:2] == [name, case]:
            return dict(zip(("package", "case", "ncu", "judge", "diff", "kernels", "span", "vs_span", "sum", "sum_ncu",
                                 "range", "vs_range", "range_spread", "ref", "runs", "grade"), cols))
    raise AssertionError("no row %s %s in\n%s" % (name, case, text))


class TheTable(unittest.TestCase):
    def setUp(self):
        self.logs = Logs(self)

    def test_a_case_is_read_against_ncu_and_against_its_span(self):
        # rotary's shape 0 of session 27: 9.7% above ncu's sum, a call of 19 kernels (95 over 5 calls)
        self.logs.grade("eager_rotary", [5485.0, 1000.0, 2000.0])
        self.logs.ncu("eager_rotary", [(5000.0, 95), (995.0, 95), (2000.0, 95)])
        self.logs.spans("eager_rotary", [{"shape_index": 0, "span_us": 5440.0}, {"shape_index": 1, "span_us": 940.0},
                                         {"shape_index": 2, "error": "no records"}])
        text = ft.table(self.logs.dir, 5, "kernels")
        r0 = row_of(text, "eager_rotary", "graded-0")
        self.assertEqual((r0["ncu"], r0["judge"], r0["diff"], r0["kernels"]), ("5000.0", "5485.0", "+9.70%", "19"))
        self.assertEqual((r0["span"], r0["vs_span"]), ("5440.0", "+0.83%"))
        r1 = row_of(text, "eager_rotary", "graded-1")
        self.assertEqual((r1["diff"], r1["vs_span"]), ("+0.50%", "+6.38%"))
        r2 = row_of(text, "eager_rotary", "graded-2")
        self.assertEqual((r2["diff"], r2["span"], r2["vs_span"]), ("+0.00%", "-", "-"), "a shape the probe could not time")
        self.assertIn("fidelity: 2 of 3 cases within 1% of ncu; repeats: 0 of 0 cases agree within 1%", text)
        self.assertIn("of the cases off by more than 1%, 1 are calls of several kernels", text)
        self.assertIn("against the plain process's device span (kernel_span.py): 1 of 2 cases within 1%; of the calls of "
                      "several kernels off ncu by more than 1%, 1 within 1% of their span", text)

    def test_the_kernels_own_sum_in_sequence_tells_gaps_from_slower_kernels(self):
        # rotary: 5000 us by ncu, 5485 by the judge, a span of 5480 us of which 5020 us are its
        # kernels' own durations (the gaps are the rest); paged decode: its kernels alone sum to
        # 4.2% over ncu (they run slower back to back); a line without a sum shows none.
        self.logs.grade("eager_rotary", [5485.0])
        self.logs.ncu("eager_rotary", [(5000.0, 95)])
        self.logs.spans("eager_rotary", [{"shape_index": 0, "span_us": 5480.0, "kernel_sum_us": 5020.0, "sum_us": 5030.0}])
        self.logs.grade("eager_paged", [14288.0])
        self.logs.ncu("eager_paged", [(13705.6, 55)])
        self.logs.spans("eager_paged", [{"shape_index": 0, "span_us": 14300.0, "kernel_sum_us": 14281.2, "sum_us": 14300.0}])
        self.logs.grade("eager_topk", [10060.6])
        self.logs.ncu("eager_topk", [(9958.0, 223)])
        self.logs.spans("eager_topk", [{"shape_index": 0, "span_us": 10054.1}])
        text = ft.table(self.logs.dir, 5, "kernels")
        r = row_of(text, "eager_rotary", "graded-0")
        self.assertEqual((r["span"], r["sum"], r["sum_ncu"]), ("5480.0", "5020.0", "+0.40%"))
        r = row_of(text, "eager_paged", "graded-0")
        self.assertEqual((r["sum"], r["sum_ncu"]), ("14281.2", "+4.20%"))
        r = row_of(text, "eager_topk", "graded-0")
        self.assertEqual((r["sum"], r["sum_ncu"], r["vs_span"]), ("-", "-", "+0.06%"))
        self.assertIn("of those 2 with their kernels' own durations summed in sequence (sum us), 1 are within 1% of ncu", text)

    def test_ncus_figure_for_the_call_whole_is_a_third_reference(self):
        # rotary: 9.7% over ncu's summed kernels, 0.3% over ncu's range for the call whole; softmax
        # (one kernel) ran without the padded ranges: its row shows dashes and is not counted.
        self.logs.grade("eager_rotary", [5485.0, 1000.0])
        self.logs.ncu("eager_rotary", [(5000.0, 95), (900.0, 95)])
        self.logs.ncu_padded("eager_rotary", [5468.6, 900.0])
        self.logs.grade("eager_softmax", [1000.0])
        self.logs.ncu("eager_softmax", [(1000.0, 5)])
        text = ft.table(self.logs.dir, 5, "kernels")
        r = row_of(text, "eager_rotary", "graded-0")
        self.assertEqual((r["diff"], r["range"], r["vs_range"]), ("+9.70%", "5468.6", "+0.30%"))
        r = row_of(text, "eager_rotary", "graded-1")
        self.assertEqual((r["diff"], r["range"], r["vs_range"]), ("+11.11%", "900.0", "+11.11%"))
        r = row_of(text, "eager_softmax", "graded-0")
        self.assertEqual((r["range"], r["vs_range"]), ("-", "-"))
        self.assertIn("against ncu's figure for the call whole (range us, behind the judge's pad): 1 of 2 cases within 1%; of the "
                      "calls of several kernels off ncu's summed kernels by more than 1%, 1 within 1% of it", text)
        # a range without its spread (a run before ncu_sum.py printed it) is shown, never counted
        self.assertEqual((r["range_spread"], r["ref"]), ("-", "kernels"))
        self.assertIn("fidelity: 1 of 3 cases within 1% of ncu", text)
        self.assertNotIn("ncu's figure there", text)

    def test_a_steady_range_is_the_reference_of_a_call_of_several_kernels_only(self):
        # rotary (19 kernels a call): shape 0's range steady (0.4%) and the judge 0.3% over it: counted
        # within; shape 1's range spread 6% (a noisy pad): counted against the summed kernels, off.
        # softmax (one kernel): its range is shown, but ncu's kernel replay stays its reference.
        self.logs.grade("eager_rotary", [5485.0, 1000.0])
        self.logs.ncu("eager_rotary", [(5000.0, 95), (900.0, 95)])
        self.logs.ncu_padded("eager_rotary", [(5468.6, 0.4), (1000.0, 6.0)])
        self.logs.grade("eager_softmax", [1020.0])
        self.logs.ncu("eager_softmax", [(1000.0, 5)])
        self.logs.ncu_padded("eager_softmax", [(1020.0, 0.1)])
        text = ft.table(self.logs.dir, 5, "kernels")
        r = row_of(text, "eager_rotary", "graded-0")
        self.assertEqual((r["diff"], r["vs_range"], r["range_spread"], r["ref"]), ("+9.70%", "+0.30%", "0.40%", "range"))
        r = row_of(text, "eager_rotary", "graded-1")
        self.assertEqual((r["vs_range"], r["range_spread"], r["ref"]), ("+0.00%", "6.00%", "kernels"))
        r = row_of(text, "eager_softmax", "graded-0")
        self.assertEqual((r["diff"], r["vs_range"], r["ref"]), ("+2.00%", "+0.00%", "kernels"))
        self.assertIn("fidelity: 1 of 3 cases within 1% of ncu; repeats: 0 of 0", text)
        self.assertIn("ncu's figure there (ref): the call whole (range us) for 1 calls of several kernels whose padded "
                      "ranges agreed within 1% (range ±), the summed kernels for the rest; against the summed kernels "
                      "alone: 0 of 3 cases within 1%", text)
        # a range whose pairs could not be told from the pad (ncu_sum.py prints inf) is not steady
        self.logs.ncu_padded("eager_rotary", [(5468.6, "inf"), (1000.0, 6.0)])
        text2 = ft.table(self.logs.dir, 5, "kernels")
        self.assertEqual(row_of(text2, "eager_rotary", "graded-0")["ref"], "kernels")
        self.assertIn("fidelity: 0 of 3 cases within 1% of ncu", text2)
        # accept.sh reads fields 2, 4, 11 and 13 of the count line
        last = [l for l in text.splitlines() if l.startswith("fidelity: ")][-1].split()
        self.assertEqual((last[1], last[3], last[10], last[12]), ("1", "3", "0", "0"))

    def test_each_package_reads_its_own_spans_from_the_one_run(self):
        for name, judge, span in (("eager_softmax", 1000.0, 990.0), ("eager_layernorm", 600.0, 600.0)):
            self.logs.grade(name, [judge])
            self.logs.ncu(name, [(judge, 5)])
            self.logs.spans(name, [{"shape_index": 0, "span_us": span}])
        text = ft.table(self.logs.dir, 5, "kernels")
        self.assertEqual(row_of(text, "eager_softmax", "graded-0")["vs_span"], "+1.01%")
        self.assertEqual(row_of(text, "eager_layernorm", "graded-0")["vs_span"], "+0.00%")
        self.assertIn("(kernel_span.py): 1 of 2 cases within 1%", text)

    def test_a_single_kernel_off_ncu_is_not_counted_as_several(self):
        self.logs.grade("solution_layernorm", [602.0])
        self.logs.ncu("solution_layernorm", [(587.5, 5)])  # one kernel a call
        text = ft.table(self.logs.dir, 5, "kernels")
        self.assertEqual(row_of(text, "solution_layernorm", "graded-0")["diff"], "+2.47%")
        self.assertIn("fidelity: 0 of 1 cases within 1% of ncu", text)
        self.assertNotIn("calls of several kernels", text)
        self.assertNotIn("plain process", text, "no span was taken: no span line")

    def test_repeats_are_the_spread_of_three_medians(self):
        self.logs.grade("eager_softmax", [1000.0, 500.0])
        self.logs.grade("eager_softmax_r2", [1005.0, 520.0])
        self.logs.grade("eager_softmax_r3", [1002.0, 505.0])
        self.logs.ncu("eager_softmax", [(1000.0, 5), (500.0, 5)])
        text = ft.table(self.logs.dir, 5, "kernels")
        self.assertEqual(row_of(text, "eager_softmax", "graded-0")["runs"], "0.50%")
        self.assertEqual(row_of(text, "eager_softmax", "graded-1")["runs"], "4.00%")
        self.assertIn("repeats: 1 of 2 cases agree within 1%", text)
        self.assertNotIn("eager_softmax_r2", text, "a repeat is a column, not a row")

    def test_missing_and_broken_files_leave_dashes_not_errors(self):
        self.logs.write("grade_eager_topk.json", "")  # the grade printed nothing
        self.logs.grade("solution_topk", [100.0], outcome="rejected")
        self.logs.spans("solution_topk", [{"shape_index": 0, "error": "RuntimeError: CUDA error"}])
        with open(os.path.join(self.logs.dir, "spans.jsonl"), "a") as f:
            f.write('{"src": "catalog/x/solution_topk/src", "shape_index": 0, "span')  # cut at the time limit
        text = ft.table(self.logs.dir, 5, "kernels")
        r = row_of(text, "solution_topk", "graded-0")
        self.assertEqual((r["ncu"], r["diff"], r["span"], r["grade"]), ("-", "-", "-", "NOT accepted"))
        self.assertIn("fidelity: 0 of 0 cases", text)
        self.assertNotIn("eager_topk", text, "a grade without cases has no rows")

    def test_a_range_run_counts_no_call_as_several_kernels(self):
        self.logs.grade("eager_rotary", [5485.0])
        self.logs.ncu("eager_rotary", [(5000.0, 5)])
        text = ft.table(self.logs.dir, 5, "range")
        self.assertEqual(row_of(text, "eager_rotary", "graded-0")["kernels"], "range")
        self.assertNotIn("calls of several kernels", text)

    def test_main_writes_the_table_file(self):
        self.logs.grade("eager_softmax", [1000.0])
        self.logs.ncu("eager_softmax", [(1004.0, 5)])
        out = tempfile.mkdtemp(prefix="kzoo-fidelity-out-")
        self.addCleanup(shutil.rmtree, out)
        self.assertEqual(ft.main([self.logs.dir, out, "5", "kernels"]), 0)
        with open(os.path.join(out, "fidelity_table.txt")) as f:
                text = f.read()
        self.assertIn("fidelity: 1 of 1 cases within 1% of ncu", text)
        self.assertEqual(row_of(text, "eager_softmax", "graded-0")["grade"], "accepted", "kzoo's decision, not the judge's overall")
        self.assertEqual(ft.main([self.logs.dir]), 2)


if __name__ == "__main__":
    unittest.main()
