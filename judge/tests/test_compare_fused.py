"""The fused comparison of 16-bit outputs (compare_narrow.cu, compare_fused.py): the same figures,
the same worst element and the same fallbacks as compare.py's torch path.

On the CPU the kernel's own source is built for the host (KZOO_HOST: every thread of a launch run
one after another, which computes what the device does: no thread reads another's figures) and
put in compare.py's place through use_fused. On a GPU the PTX itself is checked the same way."""

import math
import os
import unittest

import ctypes
import torch

from kzoo_judge import compare, compare_fused, compare_ptx
from kzoo_judge.task import TensorSpec

from . import helpers

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "kzoo_judge", "compare_narrow.cu")
# A launch's threads on the host: fewer than the elements of most tests, more than some.
HOST_THREADS = 96


def _host_library(test_case):
    """compare_narrow.cu built for the host, as a ctypes library."""
    lib = helpers.host_build(test_case, SOURCE)
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.kzoo_compare_narrow_host.argtypes = [i64, ptr, ptr, i64, ctypes.c_int, ctypes.c_int, ctypes.c_float,
                                             ctypes.c_float] + [ptr] * 6
    lib.kzoo_widen_host.argtypes = [ptr, ptr, i64, ctypes.c_int]
    return lib


class HostKernel:
    """compare_fused.Kernel's contract, the kernel run on the host; `spoil` changes its partials (a
    kernel that computes something else)."""

    def __init__(self, lib, nthreads=HOST_THREADS, spoil=None):
        self.lib, self.nthreads, self.spoil, self.calls = lib, nthreads, spoil, 0

    def partials(self, out, exp, bound):
        self.calls += 1
        parts = compare_fused.partial_buffers(self.nthreads, exp.device)
        atol, rtol = bound if bound is not None else (0.0, 0.0)
        self.lib.kzoo_compare_narrow_host(self.nthreads, out.data_ptr(), exp.data_ptr(), exp.numel(),
                                          compare_fused.FORMATS[exp.dtype], int(bound is not None), atol, rtol,
                                          *[p.data_ptr() for p in parts])
        if self.spoil:
            self.spoil(parts)
        return parts, None


def host_fused(kernel, said=None, trusted=True):
    """compare_fused.Lazy around the host build of the kernel, trusted already unless asked."""
    fused = compare_fused.Lazy((said if said is not None else []).append, load=lambda: (kernel, None), device_type="cpu")
    fused.trusted = trusted
    return fused


def spec(dtype):
    name = {torch.bfloat16: "bfloat16", torch.float16: "float16", torch.float32: "float32"}[dtype]
    return TensorSpec({"name": "y", "shape": ["R", "C"], "dtype": name}, "test")


def pair(dtype, rows=64, cols=257, noise=1e-2, seed=0):
    g = torch.Generator().manual_seed(seed)
    exp = (torch.randn(rows, cols, generator=g) * 3).to(dtype)
    out = (exp.float() * (1 + noise * torch.randn(rows, cols, generator=g))).to(dtype)
    return out, exp


class TheSource(unittest.TestCase):
    def test_the_ptx_is_what_clang_makes_of_this_source(self):
        helpers.check_ptx_module(self, SOURCE, compare_ptx, "compare", compare_fused.KERNELS.values(),
                                 {w: "the float32 figures must be the torch path's operations" for w in ("fma.", ".ftz", ".approx")})

    def test_widening_is_exact_for_every_bit_pattern(self):
        lib = _host_library(self)
        bits = torch.arange(1 << 16, dtype=torch.int32).to(torch.int16)
        for dtype, fmt in compare_fused.FORMATS.items():
            got = torch.empty(1 << 16, dtype=torch.float32)
            lib.kzoo_widen_host(bits.data_ptr(), got.data_ptr(), 1 << 16, fmt)
            want = bits.view(dtype).float()
            # NaNs stay NaNs (the conversion instruction also sets the quiet bit, which nothing reads);
            # every other pattern, -0.0 and the subnormal halves among them, to the bit
            nan = torch.isnan(want)
            self.assertTrue(torch.equal(torch.isnan(got), nan), dtype)
            self.assertTrue(torch.equal(got.view(torch.int32)[~nan], want.view(torch.int32)[~nan]), dtype)


class OnTheHost(unittest.TestCase):
    """The kernel's figures against _narrow_chunk's, and compare() with it in place."""

    def setUp(self):
        self.kernel = HostKernel(_host_library(self))
        self.fused = host_fused(self.kernel)

    def whole(self, out, exp, bound):
        compare.use_fused(self.fused)
        try:
            return compare._fused_whole(out, exp, bound)
        finally:
            compare.use_fused(None)

    def assert_same_figures(self, out, exp, bound):
        want = compare._narrow_chunk(out.reshape(-1), exp.reshape(-1), bound)
        got = self.whole(out, exp, bound)
        self.assertIsNotNone(want)
        self.assertIsNotNone(got)
        absmax, ratio, k, out_k, exp_k, dn, en = got
        self.assertEqual((absmax, ratio, int(k), out_k, exp_k), (want[0], want[1], int(want[2]), want[3], want[4]))
        self.assertAlmostEqual(dn / want[5], 1.0, delta=1e-12)
        self.assertAlmostEqual(en / want[6], 1.0, delta=1e-12)

    def test_the_figures_are_the_torch_paths(self):
        for i, dtype in enumerate(compare_fused.FORMATS):
            for j, bound in enumerate((None, (1e-2, 1e-2), (1e-5, 0.0), (0.5, 1.0))):
                with self.subTest(dtype=dtype, bound=bound):
                    out, exp = pair(dtype, seed=10 * i + j)  # fixed seeds: a failure repeats
                    self.assert_same_figures(out, exp, bound)

    def test_fewer_elements_than_threads_and_a_ragged_last_stride(self):
        for n in (1, 5, HOST_THREADS - 1, HOST_THREADS + 1, 3 * HOST_THREADS + 7):
            with self.subTest(n=n):
                out, exp = pair(torch.bfloat16, rows=1, cols=n, seed=n)
                self.assert_same_figures(out, exp, (1e-2, 1e-2))

    def test_the_worst_element_is_the_first_of_equal_ones(self):
        exp = torch.zeros(1000, dtype=torch.bfloat16)
        out = exp.clone()
        # three equal worst elements, in threads 12, 4 and 60 of 96: the first element is not the
        # first thread's, nor the last one a thread saw
        for i in (300, 100, 60, 156):
            out[i] = 0.25
        got = self.whole(out, exp, (1e-2, 1e-2))
        self.assertEqual(int(got[2]), 60)
        self.assertEqual(int(torch.argmax((out.float() - exp.float()).abs())), 60)

    def test_subnormal_and_largest_halves(self):
        exp = torch.tensor([6e-8, -6e-8, 1e-5, 65504.0, -65504.0, 0.0], dtype=torch.float16)
        out = torch.tensor([0.0, 1.2e-7, 1.1e-5, 65504.0, -65472.0, -0.0], dtype=torch.float16)
        self.assert_same_figures(out, exp, (1e-2, 1e-2))
        self.assert_same_figures(out, exp, None)

    def test_what_the_float64_path_must_decide_is_left_to_it(self):
        out, exp = pair(torch.bfloat16)
        cases = {}
        nan = out.clone()
        nan[3, 5] = float("nan")
        cases["a NaN"] = (nan, exp)
        inf = out.clone()
        inf[0, 0] = float("inf")
        cases["an Inf"] = (inf, exp)
        big = torch.finfo(torch.bfloat16).max
        cases["a difference beyond float32's range"] = (torch.full((4,), big, dtype=torch.bfloat16),
                                                        torch.full((4,), -big, dtype=torch.bfloat16))
        one = torch.zeros(8, dtype=torch.bfloat16)
        one_out = one.clone()
        one_out[2] = 0.5  # |d| = 0.5 = atol + 0: a worst ratio of exactly 1
        cases["a worst ratio of 1"] = (one_out, one)
        for why, (o, e) in cases.items():
            with self.subTest(why):
                bound = (0.5, 0.0) if why == "a worst ratio of 1" else (1e-2, 1e-2)
                self.assertIsNone(self.whole(o, e, bound))
                self.assertIsNone(compare._narrow_chunk(o.reshape(-1), e.reshape(-1), bound))

    def test_compare_decides_the_same_with_it_in_place(self):
        for dtype in compare_fused.FORMATS:
            for noise, bound in ((1e-3, (1e-2, 1e-2)), (5e-2, (1e-2, 1e-2)), (1e-3, None)):
                out, exp = pair(dtype, rows=128, cols=300, noise=noise, seed=7)
                out[5, 7] = exp[5, 7] * 3  # a worst element to find
                args = ([out], [exp], [spec(dtype)], "relative-frobenius", 1e-2)
                want = compare.compare(*args, bound=bound)
                compare.use_fused(self.fused)
                before = self.kernel.calls
                try:
                    got = compare.compare(*args, bound=bound)
                finally:
                    compare.use_fused(None)
                with self.subTest(dtype=dtype, noise=noise, bound=bound):
                    self.assertEqual(self.kernel.calls, before + 1, "the fused figures were used")
                    self.assertEqual(got.ok, want.ok)
                    self.assertEqual(got.reason, want.reason)
                    self.assertAlmostEqual(got.error_rel, want.error_rel, delta=1e-12 * max(1.0, want.error_rel))
                    self.assertEqual(got.error_abs_max, want.error_abs_max)
                    self.assertEqual(got.bound_ratio, want.bound_ratio)
                    self.assertEqual(got.worst, want.worst)

    def test_other_dtypes_and_rowwise_comparisons_take_the_torch_path(self):
        out, exp = pair(torch.float16)
        compare.use_fused(self.fused)
        try:
            compare.compare([out.float()], [exp.float()], [spec(torch.float32)], "relative-frobenius", 1e-2)
            compare.compare([out], [exp], [spec(torch.float16)], "rowwise", 1e-2)
        finally:
            compare.use_fused(None)
        self.assertEqual(self.kernel.calls, 0)

    def test_its_first_figures_are_held_to_the_torch_paths_before_it_is_trusted(self):
        out, exp = pair(torch.bfloat16, rows=64, cols=300)
        args = ([out], [exp], [spec(torch.bfloat16)], "relative-frobenius", 1e-2)
        fused = host_fused(self.kernel, trusted=False)
        narrow_calls = []
        real = compare._narrow_chunk
        compare._narrow_chunk = lambda *a: narrow_calls.append(1) or real(*a)
        compare.use_fused(fused)
        try:
            first = compare.compare(*args, bound=(1e-2, 1e-2))
            self.assertTrue(fused.trusted)
            self.assertEqual((self.kernel.calls, len(narrow_calls)), (1, 1), "both paths, once")
            second = compare.compare(*args, bound=(1e-2, 1e-2))
            self.assertEqual((self.kernel.calls, len(narrow_calls)), (2, 1), "the fused path alone, trusted")
        finally:
            compare.use_fused(None)
            compare._narrow_chunk = real
        self.assertEqual((first.ok, first.worst, first.bound_ratio), (second.ok, second.worst, second.bound_ratio))

    def test_a_kernel_whose_first_figures_are_not_the_torch_paths_is_turned_off(self):
        out, exp = pair(torch.float16, rows=64, cols=300)
        args = ([out], [exp], [spec(torch.float16)], "relative-frobenius", 1e-3)
        want = compare.compare(*args, bound=(1e-2, 1e-2))

        def halve_the_sums(parts):
            parts[3].mul_(0.5)  # a kernel that loses half its squares: error_rel ~0.7x the truth
        spoilt = HostKernel(_host_library(self), spoil=halve_the_sums)
        said = []
        fused = host_fused(spoilt, said, trusted=False)
        compare.use_fused(fused)
        try:
            got = compare.compare(*args, bound=(1e-2, 1e-2))
            again = compare.compare(*args, bound=(1e-2, 1e-2))
        finally:
            compare.use_fused(None)
        self.assertFalse(fused.trusted)
        self.assertEqual(spoilt.calls, 1, "never asked again")
        self.assertEqual(len(said), 1)
        self.assertIn("its first figures were not the torch path's (sum of squared differences", said[0])
        for v in (got, again):
            self.assertEqual((v.ok, v.reason, v.error_rel, v.error_abs_max, v.bound_ratio, v.worst),
                             (want.ok, want.reason, want.error_rel, want.error_abs_max, want.bound_ratio, want.worst))


@unittest.skipUnless(torch.cuda.is_available(), "needs CUDA")
class OnTheGpu(unittest.TestCase):
    """The PTX on the device against compare.py's torch path on the same tensors."""

    def test_the_device_gives_the_torch_paths_figures(self):
        logged = []
        fused = compare_fused.Lazy(logged.append)
        for dtype in compare_fused.FORMATS:
            for bound in (None, (1e-2, 1e-2)):
                for rows, cols in ((3, 5), (1024, 4096), (4099, 8191)):
                    out, exp = (t.cuda() for t in pair(dtype, rows=rows, cols=cols, seed=rows))
                    want = compare._narrow_chunk(out.reshape(-1), exp.reshape(-1), bound)
                    compare.use_fused(fused)
                    try:
                        got = compare._fused_whole(out, exp, bound)
                    finally:
                        compare.use_fused(None)
                    with self.subTest(dtype=dtype, bound=bound, shape=(rows, cols)):
                        self.assertEqual(logged, [])
                        self.assertEqual(got[:5], want[:5])
                        self.assertTrue(math.isclose(got[5], want[5], rel_tol=1e-12))
                        self.assertTrue(math.isclose(got[6], want[6], rel_tol=1e-12))

    def test_a_nan_on_the_device_goes_to_the_float64_path(self):
        fused = compare_fused.Lazy(lambda why: self.fail(why))
        out, exp = (t.cuda() for t in pair(torch.bfloat16))
        out[1, 1] = float("nan")
        compare.use_fused(fused)
        try:
            self.assertIsNone(compare._fused_whole(out, exp, (1e-2, 1e-2)))
            v = compare.compare([out], [exp], [spec(torch.bfloat16)], "relative-frobenius", 1e-2, bound=(1e-2, 1e-2))
        finally:
            compare.use_fused(None)
        self.assertFalse(v.ok)
        self.assertIn("NaN", v.reason)


if __name__ == "__main__":
    unittest.main()
