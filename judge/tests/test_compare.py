"""Comparators: structure first, NaN/Inf position by position, then each measure."""

import math
import unittest

import torch

from kzoo_judge import compare
from kzoo_judge.task import TensorSpec


def spec(name="y", dtype="float32"):
    return TensorSpec({"name": name, "shape": ["N"], "dtype": dtype}, "test")


def cmp(out, exp, comparator="relative-frobenius", tol=1e-3, row_pass=1.0, dtype="float32"):
    outs = out if isinstance(out, list) else [out]
    exps = exp if isinstance(exp, list) else [exp]
    specs = [spec("y%d" % i, dtype) for i in range(len(exps))]
    return compare.compare(outs, exps, specs, comparator, tol, row_pass)


class Structure(unittest.TestCase):
    def test_shape_dtype_type_count(self):
        e = torch.ones(4)
        self.assertIn("shape", cmp(torch.ones(5), e).reason)
        self.assertIn("dtype", cmp(torch.ones(4, dtype=torch.float64), e).reason)
        self.assertIn("returned 2 outputs", compare.compare([e, e], [e], [spec()], "exact", 0).reason)

        class Lazy(torch.Tensor):
            pass
        v = cmp(torch.ones(4).as_subclass(Lazy), e)
        self.assertFalse(v.ok)
        self.assertIn("not exactly torch.Tensor", v.reason)
        self.assertIn("not exactly torch.Tensor", compare.structure([1.0, 1.0, 1.0, 1.0], e, "y"))


class NonFinite(unittest.TestCase):
    def test_nan_in_expected_is_not_a_wildcard(self):
        e = torch.tensor([1.0, float("nan"), 3.0])
        v = cmp(torch.tensor([1.0, 2.0, 3.0]), e)
        self.assertFalse(v.ok)
        self.assertIn("NaN/Inf pattern", v.reason)
        self.assertIn("[1]", v.reason)

    def test_nan_where_expected_is_finite(self):
        self.assertFalse(cmp(torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 2.0])).ok)

    def test_matching_nan_and_inf_patterns_pass(self):
        e = torch.tensor([1.0, float("nan"), float("inf"), -float("inf")])
        self.assertTrue(cmp(e.clone(), e).ok)

    def test_inf_sign_must_match(self):
        v = cmp(torch.tensor([1.0, -float("inf")]), torch.tensor([1.0, float("inf")]))
        self.assertFalse(v.ok)
        self.assertIn("NaN/Inf", v.reason)

    def test_all_nan_output_fails_every_comparator(self):
        e = torch.randn(4, 8)
        o = torch.full_like(e, float("nan"))
        for c in ("relative-frobenius", "relative-frobenius-tuple-max", "rowwise", "exact"):
            self.assertFalse(cmp(o, e, c, tol=1e9 if c != "exact" else 0).ok, c)


class Measures(unittest.TestCase):
    def test_relative_frobenius_value(self):
        e = torch.tensor([3.0, 4.0])
        o = torch.tensor([3.0, 4.05])
        v = cmp(o, e, tol=0.02)
        self.assertTrue(v.ok)
        self.assertAlmostEqual(v.error_rel, 0.05 / 5.0, places=6)
        self.assertAlmostEqual(v.error_abs_max, 0.05, places=5)
        self.assertFalse(cmp(o, e, tol=0.005).ok)

    def test_relative_frobenius_zero_expected(self):
        z = torch.zeros(3)
        self.assertTrue(cmp(z.clone(), z, tol=0).ok)
        self.assertFalse(cmp(torch.tensor([0.0, 1e-30, 0.0]), z, tol=1).ok)

    def test_tuple_max_takes_the_worst_output(self):
        a = torch.ones(10)
        b = torch.ones(10)
        v = cmp([a.clone(), b * 1.1], [a, b], "relative-frobenius-tuple-max", tol=0.05)
        self.assertFalse(v.ok)
        self.assertAlmostEqual(v.error_rel, 0.1, places=5)
        self.assertIn("'y1'", v.reason)
        self.assertTrue(cmp([a.clone(), b * 1.01], [a, b], "relative-frobenius-tuple-max", tol=0.05).ok)

    def test_rowwise_fraction_of_rows(self):
        e = torch.ones(10, 4)
        o = e.clone()
        o[0] *= 2  # one bad row in ten
        self.assertTrue(cmp(o, e, "rowwise", tol=1e-3, row_pass=0.9).ok)
        v = cmp(o, e, "rowwise", tol=1e-3, row_pass=0.95)
        self.assertFalse(v.ok)
        self.assertIn("0.9000 of rows", v.reason)

    def test_exact_is_bitwise(self):
        e = torch.tensor([1.0, 0.0, float("nan")])
        self.assertTrue(cmp(e.clone(), e, "exact", tol=0).ok)
        self.assertFalse(cmp(torch.tensor([1.0, -0.0, float("nan")]), e, "exact", tol=0).ok)  # -0.0 is not 0.0
        self.assertFalse(cmp(torch.tensor([1.0000001, 0.0, float("nan")]), e, "exact", tol=0).ok)
        ints = torch.tensor([1, 2, 3], dtype=torch.int64)
        self.assertTrue(compare.compare([ints.clone()], [ints], [spec("i", "int64")], "exact", 0).ok)
        self.assertFalse(compare.compare([ints + 1], [ints], [spec("i", "int64")], "exact", 0).ok)
        b = torch.tensor([True, False])
        self.assertFalse(compare.compare([~b], [b], [spec("b", "bool")], "exact", 0).ok)

    def test_float8_outputs_compared_by_value(self):
        from kzoo_judge import dtypes
        x = dtypes.from_float(torch.tensor([1.0, 2.0, -448.0]), "float8_e4m3fn")
        self.assertTrue(compare.compare([x.clone()], [x], [spec("f", "float8_e4m3fn")], "relative-frobenius", 0).ok)
        y = dtypes.from_float(torch.tensor([1.0, 2.0, 448.0]), "float8_e4m3fn")
        v = compare.compare([y], [x], [spec("f", "float8_e4m3fn")], "relative-frobenius", 0.1)
        self.assertFalse(v.ok)
        self.assertAlmostEqual(v.error_abs_max, 896.0)

    def test_measure_ignores_dtype_for_calibration(self):
        e = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
        o = torch.tensor([1.0, 2.001], dtype=torch.float64)
        self.assertGreater(compare.measure([o], [e], [spec("y", "bfloat16")], "relative-frobenius"), 0)
        self.assertTrue(math.isfinite(compare.measure([o], [e], [spec("y", "bfloat16")], "relative-frobenius")))


if __name__ == "__main__":
    unittest.main()


class Chunked(unittest.TestCase):
    """Large outputs are compared in chunks on their own device; the verdict must not depend on the chunk size."""

    def every_measure(self, out, exp, dtype="float32"):
        return [(v.ok, v.error_rel, v.error_abs_max, v.reason) for v in
                (cmp(out, exp, c, tol, dtype=dtype) for c, tol in
                 (("relative-frobenius", 1e-2), ("rowwise", 1e-2), ("exact", 0.0)))]

    def test_the_same_verdicts_with_tiny_chunks(self):
        g = torch.Generator().manual_seed(7)
        exp = torch.randn(37, 11, generator=g)
        out = exp + 1e-3 * torch.randn(37, 11, generator=g)
        out[20, 3] = exp[20, 3] + 5.0
        nan_out = out.clone()
        nan_out[30, 7] = float("nan")
        cases = [(out, exp), (exp.clone(), exp), (nan_out, exp), (out.to(torch.bfloat16), exp.to(torch.bfloat16))]
        whole = [self.every_measure(o, e, "bfloat16" if o.dtype == torch.bfloat16 else "float32") for o, e in cases]
        old = compare.CHUNK
        try:
            compare.CHUNK = 13  # rounds down to whole rows: one row of 11 per chunk
            tiny = [self.every_measure(o, e, "bfloat16" if o.dtype == torch.bfloat16 else "float32") for o, e in cases]
        finally:
            compare.CHUNK = old
        for w, t in zip(whole, tiny):
            for (wok, wrel, wabs, wr), (tok, trel, tabs, tr) in zip(w, t):
                self.assertEqual(wok, tok)
                self.assertEqual(wr, tr)
                self.assertAlmostEqual(wabs, tabs, places=12)
                if math.isfinite(wrel):
                    self.assertAlmostEqual(wrel, trel, places=9)

    def test_the_first_nan_mismatch_is_named_by_its_index_across_chunks(self):
        exp = torch.zeros(6, 4)
        out = exp.clone()
        out[4, 2] = float("nan")
        out[5, 0] = float("inf")
        old = compare.CHUNK
        try:
            compare.CHUNK = 4
            v = cmp(out, exp)
        finally:
            compare.CHUNK = old
        self.assertFalse(v.ok)
        self.assertIn("at 2 positions (first at index [4, 2])", v.reason)


def general_path_only():
    """The shorter paths switched off: every chunk through the general float64 path."""
    class Off:
        def __enter__(self):
            self.saved = compare._finite_chunk, compare._narrow_fits
            compare._finite_chunk, compare._narrow_fits = (lambda *a: None), (lambda *a: False)

        def __exit__(self, *exc):
            compare._finite_chunk, compare._narrow_fits = self.saved
    return Off()


def both_paths(out, exp, **kw):
    """(the verdict as the judge takes it, the general path's)."""
    dtype = kw.pop("dtype", "float32")
    comparator, tol = kw.pop("comparator", "relative-frobenius"), kw.pop("tol", 1e-2)
    fast = compare.compare([out], [exp], [spec(dtype=dtype)], comparator, tol, **kw)
    with general_path_only():
        slow = compare.compare([out], [exp], [spec(dtype=dtype)], comparator, tol, **kw)
    return fast, slow


class FinitePath(unittest.TestCase):
    """A float32 or float64 chunk with nothing non-finite takes a shorter path (fewer passes, one
    host sync); its figures are bit-for-bit the general path's."""

    def both(self, out, exp, **kw):
        return both_paths(out, exp, **kw)

    def test_the_same_figures_as_the_general_path(self):
        torch.manual_seed(3)
        for dt in (torch.float32, torch.float64):
            for bound in (None, (1e-2, 1e-2), (0.1, 0.0)):
                for chunk in (1 << 24, 96):
                    e = torch.randn(40, 96).to(dt)
                    o = (e.float() + 3e-3 * torch.randn(40, 96)).to(dt)
                    keep, compare.CHUNK = compare.CHUNK, chunk
                    try:
                        a, b = self.both(o, e, dtype=str(dt).replace("torch.", ""), bound=bound)
                    finally:
                        compare.CHUNK = keep
                    self.assertEqual((a.ok, a.error_rel, a.error_abs_max, a.reason, a.bound_ratio, a.worst),
                                     (b.ok, b.error_rel, b.error_abs_max, b.reason, b.bound_ratio, b.worst), (dt, bound, chunk))

    def test_a_float64_difference_that_overflows_takes_the_general_path(self):
        e = torch.tensor([-1e308, 1.0], dtype=torch.float64)
        o = torch.tensor([1e308, 1.0], dtype=torch.float64)
        v = compare.compare([o], [e], [spec(dtype="float64")], "relative-frobenius", 1e-2, bound=(1e-2, 1e-2))
        self.assertFalse(v.ok)
        self.assertEqual(v.error_abs_max, math.inf)
        self.assertEqual(v.worst["index"], [0])


class NarrowPath(unittest.TestCase):
    """Two 16-bit float outputs are compared in float32 (a third of the bytes float64 moves); the
    decisions stay float64's: a worst ratio within MARGIN of 1, a measure within MARGIN of its
    tolerance, and anything non-finite are taken again in float64."""

    def test_the_same_verdicts_and_worst_element_as_the_general_path(self):
        torch.manual_seed(3)
        for dt in (torch.bfloat16, torch.float16):
            for bound in (None, (1e-2, 1e-2), (0.1, 0.0)):
                for chunk in (1 << 24, 96):
                    for noise in (3e-3, 0.3):  # passing, and failing both the measure and the bound
                        e = torch.randn(40, 96).to(dt)
                        o = (e.float() + noise * torch.randn(40, 96)).to(dt)
                        keep, compare.CHUNK = compare.CHUNK, chunk
                        try:
                            a, b = both_paths(o, e, dtype=str(dt).replace("torch.", ""), bound=bound)
                        finally:
                            compare.CHUNK = keep
                        at = (dt, bound, chunk, noise)
                        self.assertEqual((a.ok, a.bound_ratio, a.worst), (b.ok, b.bound_ratio, b.worst), at)
                        self.assertEqual(a.reason.split("relative Frobenius error")[0], b.reason.split("relative Frobenius error")[0], at)
                        self.assertAlmostEqual(a.error_rel / b.error_rel, 1.0, delta=1e-6, msg=at)
                        self.assertAlmostEqual(a.error_abs_max / b.error_abs_max, 1.0, delta=1e-6, msg=at)

    def test_a_worst_ratio_within_the_margin_of_one_is_decided_in_float64(self):
        e = torch.tensor([1.0, 2.0], dtype=torch.bfloat16)
        o = torch.tensor([1.0234375, 2.0], dtype=torch.bfloat16)  # |difference| 0.0234375, exact
        at_bound = (0.0234375, 0.0)
        just_inside = (0.0234375 * (1 - 1e-9), 0.0)  # float32 rounds this atol to 0.0234375: a ratio of exactly 1
        self.assertEqual(torch.tensor(just_inside[0], dtype=torch.float32).item(), 0.0234375)
        # float32's worst ratio, 1.0 for both bounds, decides neither: the chunk goes to float64
        # (float32 may also rank two near-ties the wrong way round, so its argmax is not trusted there)
        self.assertIsNone(compare._narrow_chunk(o, e, at_bound))
        self.assertIsNone(compare._narrow_chunk(o, e, just_inside))
        self.assertIsNotNone(compare._narrow_chunk(o, e, (0.03, 0.0)))
        v = compare.compare([o], [e], [spec(dtype="bfloat16")], "relative-frobenius", 1.0, bound=at_bound)
        self.assertTrue(v.ok, v.reason)
        self.assertEqual(v.bound_ratio, 1.0)
        v = compare.compare([o], [e], [spec(dtype="bfloat16")], "relative-frobenius", 1.0, bound=just_inside)
        self.assertFalse(v.ok)
        self.assertGreater(v.bound_ratio, 1.0)
        self.assertIn("index [0]", v.reason)

    def test_a_measure_within_the_margin_of_its_tolerance_is_decided_in_float64(self):
        # out 2^-30 where the reference has 1: float32 rounds the difference to -1, float64 holds it
        # exactly; the exact measure is 1 - 2^-30, float32's 1.0, and the tolerance lies between.
        e = torch.tensor([1.0], dtype=torch.bfloat16)
        o = torch.tensor([2.0 ** -30], dtype=torch.bfloat16)
        with general_path_only():
            _, _, dd, ee, _, _, _ = compare._compare_values(o, e, spec(dtype="bfloat16"), False)
        _, _, ndd, nee, _, _, narrowed = compare._compare_values(o, e, spec(dtype="bfloat16"), False)
        self.assertTrue(narrowed)
        self.assertEqual(compare._rel(dd, ee), 1 - 2.0 ** -30)
        self.assertEqual(compare._rel(ndd, nee), 1.0)
        tol = 1 - 2.0 ** -31
        v = compare.compare([o], [e], [spec(dtype="bfloat16")], "relative-frobenius", tol)
        self.assertTrue(v.ok, v.reason)
        self.assertEqual(v.error_rel, 1 - 2.0 ** -30)
        v = compare.compare([o], [e], [spec(dtype="bfloat16")], "relative-frobenius", 1 - 2.0 ** -29)
        self.assertFalse(v.ok)

    def test_a_difference_beyond_float32s_range_is_taken_in_float64(self):
        e = torch.tensor([-3.0e38, 1.0], dtype=torch.bfloat16)
        o = torch.tensor([3.0e38, 1.0], dtype=torch.bfloat16)
        a, b = both_paths(o, e, dtype="bfloat16", bound=(1e-2, 1e-2))
        self.assertFalse(a.ok)
        self.assertTrue(math.isfinite(a.error_abs_max))  # float32 would have said inf
        self.assertEqual((a.error_abs_max, a.error_rel, a.bound_ratio, a.worst), (b.error_abs_max, b.error_rel, b.bound_ratio, b.worst))

    def test_nan_patterns_are_still_matched_position_by_position(self):
        e = torch.ones(4, 8, dtype=torch.float16)
        o = e.clone()
        o[2, 5] = float("nan")
        v = compare.compare([o], [e], [spec(dtype="float16")], "relative-frobenius", 1e-2, bound=(1e-2, 1e-2))
        self.assertFalse(v.ok)
        self.assertIn("first at index [2, 5]", v.reason)

    def test_a_bound_whose_float32_denominator_could_underflow_or_overflow_stays_in_float64(self):
        o = torch.ones(3, dtype=torch.bfloat16)
        for bound in ((0.0, 1e-2), (1e-2, 2.0), None):
            self.assertEqual(compare._narrow_fits(o, o, bound), bound is None or bound[0] > 0 and bound[1] <= 1, bound)
        self.assertFalse(compare._narrow_fits(o.float(), o.float(), None))
        self.assertFalse(compare._narrow_fits(o, o.half(), None))


class ElementwiseBound(unittest.TestCase):
    """The board's guardrail beside the comparator: |out - exp| <= atol + rtol * |exp|, every element."""

    def bounded(self, out, exp, comparator="relative-frobenius", tol=0.1):
        return compare.compare([out], [exp], [spec()], comparator, tol, 1.0, bound=(0.01, 0.01))

    def test_within_the_bound_everywhere_passes_and_says_how_close(self):
        e = torch.linspace(-3, 3, 600).reshape(20, 30)
        v = self.bounded(e * 1.005, e)
        self.assertTrue(v.ok, v.reason)
        self.assertLess(v.bound_ratio, 1.0)
        self.assertGreater(v.bound_ratio, 0.3)

    def test_one_element_outside_fails_naming_its_index_and_both_values(self):
        e = torch.linspace(-3, 3, 600).reshape(20, 30)
        o = e.clone()
        o[2, 3] += 0.5  # the Frobenius measure barely moves; the element is 40x outside
        v = self.bounded(o, e)
        self.assertFalse(v.ok)
        self.assertGreater(v.bound_ratio, 1.0)
        self.assertEqual(v.worst["index"], [2, 3])
        self.assertIn("index [2, 3]", v.reason)
        self.assertIn("atol 0.01 + rtol 0.01", v.reason)
        self.assertAlmostEqual(v.worst["out"] - v.worst["expected"], 0.5, places=5)

    def test_the_exact_comparator_needs_no_bound(self):
        e = torch.arange(10.0)
        v = self.bounded(e.clone(), e, comparator="exact", tol=0.0)
        self.assertTrue(v.ok)
        self.assertIsNone(v.bound_ratio)

    def test_rowwise_with_a_bound(self):
        e = torch.ones(8, 16)
        o = e.clone()
        o[5, 7] = 1.2
        v = compare.compare([o], [e], [spec()], "rowwise", 0.5, 0.5, bound=(0.01, 0.01))
        self.assertFalse(v.ok)
        self.assertEqual(v.worst["index"], [5, 7])
