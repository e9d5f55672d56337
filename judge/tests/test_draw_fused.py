"""The fused draw of floating inputs (draw_normal.cu, draw_fused.py): Random123's Philox, the
normal law, torch's roundings, a layout that depends on the seed and the index alone, and
inputs.make_inputs with it in place -- or, when it is off, exactly the torch recipe.

On the CPU the kernel's own source is built for the host (KZOO_HOST: every thread of a launch run
one after another, which computes what the device does: each element is a function of the key and
its index) and put in inputs.py's place through use_fused. On a GPU the PTX is held to the host
build's known answers (OnTheGpu)."""

import ctypes
import math
import os
import unittest

import torch

from kzoo_judge import draw_fused, draw_ptx, inputs

from . import helpers

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "..", "kzoo_judge", "draw_normal.cu")
HOST_THREADS = 96
U32 = ctypes.c_uint32


def _lib(test_case):
    lib = helpers.host_build(test_case, SOURCE)
    i64, ptr = ctypes.c_int64, ctypes.c_void_p
    lib.kzoo_philox_host.argtypes = [ptr, U32, U32]
    lib.kzoo_ln_host.argtypes = [ptr, ptr, i64]
    lib.kzoo_sincos_host.argtypes = [ptr, ptr, ptr, i64]
    lib.kzoo_narrow_host.argtypes = [ptr, ptr, i64, ctypes.c_int]
    lib.kzoo_draw_normal_host.argtypes = [i64, ptr, i64, i64, ptr, U32, U32, ctypes.c_int]
    return lib


class HostKernel:
    """draw_fused.Kernel's contract, the kernel run on the host; `fail_after` makes its launches
    fail from then on (a device error)."""

    def __init__(self, lib, nthreads=HOST_THREADS, fail_after=None):
        self.lib, self.nthreads, self.fail_after, self.calls = lib, nthreads, fail_after, 0

    def draw(self, out, scale, key, cols):
        self.calls += 1
        if self.fail_after is not None and self.calls > self.fail_after:
            return "cuLaunchKernel failed (CUresult 700)"
        k0, k1 = draw_fused.key_words(key)
        self.lib.kzoo_draw_normal_host(self.nthreads, out.data_ptr(), out.numel(), max(1, cols),
                                       scale.data_ptr() if scale is not None else None, k0, k1, draw_fused.FORMATS[out.dtype])
        return None


def host_draw(lib, n, dtype=torch.float32, cols=None, scale=None, key=1, nthreads=HOST_THREADS):
    out = torch.empty(n, dtype=dtype)
    HostKernel(lib, nthreads).draw(out, scale, key, cols or n)
    return out


def host_lazy(kernel, said=None, known=None):
    return draw_fused.Lazy((said if said is not None else []).append, load=lambda: (kernel, None), device_type="cpu",
                           known=known)


def host_known(lib):
    return draw_fused.known_answers(lambda out, scale, key, cols: HostKernel(lib).draw(out, scale, key, cols), "cpu")


task_with = helpers.input_task


class TheSource(unittest.TestCase):
    def test_the_ptx_is_what_clang_makes_of_this_source(self):
        helpers.check_ptx_module(self, SOURCE, draw_ptx, "draw", draw_fused.KERNELS.values(),
                                 {w: "the device must compute the host build's bits, from registers"
                                  for w in ("fma.", ".ftz", ".approx", ".local")})

    def test_the_known_answers_are_the_host_builds(self):
        got = host_known(_lib(self))
        for dtype, sha in got.items():
            self.assertEqual(draw_fused.KNOWN_SHA256[dtype], sha,
                             "draw_fused.KNOWN_SHA256[%s] is not the host build's draw of the known set: %s" % (dtype, sha))


class ThePieces(unittest.TestCase):
    def setUp(self):
        self.lib = _lib(self)

    def test_philox_gives_random123s_known_answers(self):
        # Random123's kat_vectors for philox4x32_10: (counter, key) -> block
        for ctr, key, want in (((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
                               ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
                               ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
                                (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))):
            c = (U32 * 4)(*ctr)
            self.lib.kzoo_philox_host(c, *key)
            self.assertEqual(tuple(c), want)

    def test_ln_is_within_two_units_of_float32_over_0_1(self):
        u = torch.cat([torch.rand(1 << 20, dtype=torch.float64), torch.tensor([2.0 ** -33, 2.0 ** -32, 0.5, 1.0, 1 - 2 ** -24]),
                       torch.logspace(-10, 0, 4096, dtype=torch.float64)]).float()
        u = u[u > 0]
        got = torch.empty_like(u)
        self.lib.kzoo_ln_host(u.data_ptr(), got.data_ptr(), u.numel())
        want = torch.log(u.double())
        err = (got.double() - want).abs()
        self.assertLessEqual(float((err - 2.4e-7 * want.abs() - 1.2e-7 * 2 ** -23).max()), 0.0)
        self.assertEqual(float(got[u == 1.0][0]), 0.0)

    def test_sin_and_cos_of_a_turn_are_within_3e_7(self):
        t = torch.cat([torch.rand(1 << 20, dtype=torch.float64), torch.linspace(0, 1, 4097, dtype=torch.float64)]).float()
        s, c = torch.empty_like(t), torch.empty_like(t)
        self.lib.kzoo_sincos_host(t.data_ptr(), s.data_ptr(), c.data_ptr(), t.numel())
        th = t.double() * (2 * math.pi)
        self.assertLess(float((s.double() - torch.sin(th)).abs().max()), 3e-7)
        self.assertLess(float((c.double() - torch.cos(th)).abs().max()), 3e-7)

    def test_the_roundings_to_16_bits_are_torchs(self):
        # every 2^10th float32 bit pattern that is not a NaN, with each pattern's neighbours (so the
        # halfway cases of both formats, the subnormal halves and the overflow to Inf are among them)
        base = torch.arange(0, 1 << 32, 1 << 10, dtype=torch.int64)
        bits = torch.cat([base, base + 1, base + 0x7FF, base + 0x800, base + 0x801, base + 0xFFF, base + 0x1000,
                          torch.tensor([0x477FEFFF, 0x477FF000, 0x33000000, 0x33000001, 0x387FC000, 0x387FE000])])
        bits = bits & 0xFFFFFFFF
        x = torch.where(bits >= 1 << 31, bits - (1 << 32), bits).to(torch.int32).view(torch.float32)
        x = x[~torch.isnan(x)]
        for dtype, fmt in ((torch.bfloat16, 1), (torch.float16, 2)):
            got = torch.empty(x.numel(), dtype=torch.int16)
            self.lib.kzoo_narrow_host(x.data_ptr(), got.data_ptr(), x.numel(), fmt)
            want = x.to(dtype).view(torch.int16)
            bad = (got != want).nonzero()
            self.assertEqual(bad.numel(), 0, "%s: %d of %d differ, first at %r" % (
                dtype, bad.numel(), x.numel(), float(x[bad[0, 0]]) if bad.numel() else None))


class TheLayout(unittest.TestCase):
    def setUp(self):
        self.lib = _lib(self)

    def test_an_element_depends_on_the_key_and_its_index_alone(self):
        n = 10007
        one = host_draw(self.lib, n, nthreads=1)
        for nthreads in (3, 96, 4096, 20000):
            self.assertTrue(torch.equal(host_draw(self.lib, n, nthreads=nthreads), one), nthreads)
        # a shorter tensor is the longer one's head; another key is another tensor
        self.assertTrue(torch.equal(host_draw(self.lib, 1001), one[:1001]))
        self.assertFalse(torch.equal(host_draw(self.lib, n, key=2), one))
        self.assertFalse(torch.equal(host_draw(self.lib, n, key=1 << 32 | 1), one))

    def test_each_row_is_the_normal_times_its_factor_rounded_once(self):
        for n, cols in ((100003, 1001), (4096, 4), (12, 1), (7, 3), (30000, 7777)):
            rows = -(-n // cols)
            z = host_draw(self.lib, n, key=9)
            scale = torch.exp2(torch.rand(rows, generator=torch.Generator().manual_seed(n)) * 2 - 1)
            row_of = torch.arange(n) // cols
            want32 = z * scale[row_of]
            for dtype in draw_fused.FORMATS:
                with self.subTest(n=n, cols=cols, dtype=dtype):
                    got = host_draw(self.lib, n, dtype=dtype, cols=cols, scale=scale, key=9)
                    self.assertTrue(torch.equal(got, want32.to(dtype)))


class TheLaw(unittest.TestCase):
    """A standard normal, as torch.randn's: moments, tails, Kolmogorov-Smirnov against the normal
    CDF and against torch.randn, the Box-Muller pairs uncorrelated."""

    N = 1 << 22

    @classmethod
    def setUpClass(cls):
        cls.z = host_draw(helpers.host_build(None, SOURCE), cls.N, key=0xC0FFEE, nthreads=4096).double()

    def test_moments(self):
        z, n = self.z, self.N
        self.assertLess(abs(float(z.mean())), 5 / math.sqrt(n))
        self.assertLess(abs(float(z.var()) - 1), 5 * math.sqrt(2 / n))
        self.assertLess(abs(float((z ** 3).mean())), 5 * math.sqrt(15 / n))
        self.assertLess(abs(float((z ** 4).mean()) - 3), 5 * math.sqrt(96 / n))

    def test_tails(self):
        z, n = self.z, self.N
        for k in (1, 2, 3, 4):
            p = math.erfc(k / math.sqrt(2))
            got = float((z.abs() > k).double().mean())
            self.assertLess(abs(got - p), 5 * math.sqrt(p * (1 - p) / n) + 1 / n, k)
        self.assertLess(float(z.abs().max()), 6.7)  # u1 >= 2^-33

    def test_kolmogorov_smirnov_against_the_normal_and_torch_randn(self):
        z = self.z.sort().values
        n = z.numel()
        cdf = 0.5 * torch.erfc(-z / math.sqrt(2))
        i = torch.arange(1, n + 1, dtype=torch.float64)
        d = float(torch.maximum(i / n - cdf, cdf - (i - 1) / n).max())
        self.assertLess(d, 1.95 / math.sqrt(n))  # the 0.1% level
        r = torch.randn(n, generator=torch.Generator().manual_seed(5)).double().sort().values
        both = torch.cat([z, r])
        order = both.argsort(stable=True)
        steps = torch.where(order < n, 1.0 / n, -1.0 / n)
        d2 = float(steps.cumsum(0).abs().max())
        self.assertLess(d2, 1.95 * math.sqrt(2 / n))

    def test_the_pairs_and_neighbours_are_uncorrelated(self):
        z = self.z
        for lag in (1, 2, 4):
            c = float((z[:-lag] * z[lag:]).mean())
            self.assertLess(abs(c), 5 / math.sqrt(self.N), lag)


class InMakeInputs(unittest.TestCase):
    """inputs.make_inputs with the fused draw in place (the host build as the device)."""

    def setUp(self):
        self.lib = _lib(self)
        self.kernel = HostKernel(self.lib)
        self.said = []
        self.fused = host_lazy(self.kernel, self.said, known=host_known(self.lib))
        inputs.use_fused(self.fused)
        self.addCleanup(inputs.use_fused, None)

    def test_each_float_input_is_the_kernels_normal_times_the_generators_row_factors(self):
        for d, dims, shape in (("bfloat16", ("R", "C"), (37, 515)), ("float16", ("R", "C"), (5, 4096)),
                               ("float32", ("B", "R", "C"), (3, 5, 129)), ("bfloat16", ("R",), (1001,))):
            with self.subTest(dtype=d, shape=shape):
                t = task_with([{"name": "x", "shape": list(dims), "dtype": d}], dims=dims)
                got, = inputs.make_inputs(t, dict(zip(dims, shape)), 77)
                key = inputs._mix(77, "x")
                g = torch.Generator().manual_seed(key)
                n, cols = math.prod(shape), shape[-1]
                z = host_draw(self.lib, n, key=key)
                if len(shape) >= 2:
                    f = torch.exp2(torch.rand(n // cols, generator=g) * 2 - 1)
                    z = z * f[torch.arange(n) // cols]
                self.assertEqual(got.dtype, getattr(torch, d))
                self.assertEqual(tuple(got.shape), shape)
                self.assertTrue(torch.equal(got.reshape(-1), z.to(got.dtype)))
                self.assertTrue(torch.equal(inputs.make_inputs(t, dict(zip(dims, shape)), 77)[0], got))
        self.assertEqual(self.said, [])
        self.assertEqual(self.fused.drawn, 8)

    def test_a_set_made_into_arena_slots_is_drawn_there(self):
        from kzoo_judge import arena
        t = task_with([{"name": "x", "shape": ["R", "C"], "dtype": "bfloat16"},
                       {"name": "ids", "shape": ["R"], "dtype": "int64", "meaning": "class index in [0, C)"},
                       {"name": "w", "shape": ["R", "C"], "dtype": "float32"}])
        dims = {"R": 9, "C": 130}
        alone = inputs.make_inputs(t, dims, 4)
        drawn = self.fused.drawn
        buf = torch.zeros(1 << 16, dtype=torch.uint8)
        slots, _ = arena.slots(buf, inputs.layout(t, dims), 5 * arena.ALIGN)
        got = inputs.make_inputs(t, dims, 4, out=slots)
        self.assertEqual(self.fused.drawn, drawn + 2)
        for a, b, s in zip(alone, got, slots):
            self.assertIs(b, s)
            self.assertTrue(torch.equal(a, b))
        # a slot the kernel cannot write where it lies (not 16-byte aligned) is drawn aside, then copied
        odd = buf[8:8 + 9 * 130 * 2].view(torch.bfloat16).view(9, 130)
        self.assertFalse(draw_fused.Lazy.fits(odd))
        got = inputs.make_inputs(t, dims, 4, out=[odd] + slots[1:])
        self.assertTrue(torch.equal(got[0], alone[0]))
        self.assertIs(got[0], odd)

    def test_quantised_and_float8_inputs_draw_their_real_values_with_it(self):
        t = task_with([{"name": "q", "shape": ["R", "C"], "dtype": "float8_e4m3fn", "quantized": {"scheme": "per-row"}},
                       {"name": "q_scale", "shape": ["R", 1], "dtype": "float32"},
                       {"name": "e", "shape": ["R", "C"], "dtype": "float8_e5m2"}])
        q, s, e = inputs.make_inputs(t, {"R": 8, "C": 64}, 3)
        self.assertEqual(self.fused.drawn, 2)
        again = inputs.make_inputs(t, {"R": 8, "C": 64}, 3)
        for a, b in zip((q, s, e), again):
            self.assertTrue(torch.equal(a, b))

    def test_other_inputs_keep_their_torch_draws(self):
        t = task_with([{"name": "ids", "shape": ["R"], "dtype": "int64", "meaning": "class index in [0, C)"},
                       {"name": "v", "shape": ["R"], "dtype": "float32", "meaning": "value in [2, 3]"},
                       {"name": "m", "shape": ["R", "C"], "dtype": "bool"},
                       {"name": "w", "shape": ["R", "C"], "dtype": "float64"}])
        with_fused = inputs.make_inputs(t, {"R": 50, "C": 60}, 9)
        inputs.use_fused(None)
        without = inputs.make_inputs(t, {"R": 50, "C": 60}, 9)
        for a, b in zip(with_fused, without):
            self.assertTrue(torch.equal(a, b))
        self.assertEqual(self.fused.drawn, 0)

    def test_a_kernel_off_its_known_answers_is_off_and_the_sets_are_the_torch_recipes(self):
        t = task_with([{"name": "x", "shape": ["R", "C"], "dtype": "bfloat16"}])
        inputs.use_fused(None)
        plain = inputs.make_inputs(t, {"R": 16, "C": 100}, 5)[0]
        known = dict(host_known(self.lib))
        known[torch.float16] = "0" * 64
        said = []
        inputs.use_fused(host_lazy(HostKernel(self.lib), said, known=known))
        got = inputs.make_inputs(t, {"R": 16, "C": 100}, 5)[0]
        self.assertTrue(torch.equal(got, plain))
        self.assertEqual(len(said), 1)
        self.assertIn("differs from the host build's in float16", said[0])
        self.assertTrue(torch.equal(inputs.make_inputs(t, {"R": 16, "C": 100}, 5)[0], plain))
        self.assertEqual(len(said), 1)  # said once

    def test_a_kernel_that_does_not_load_is_off_and_the_sets_are_the_torch_recipes(self):
        t = task_with([{"name": "x", "shape": ["R", "C"], "dtype": "float16"}])
        inputs.use_fused(None)
        plain = inputs.make_inputs(t, {"R": 4, "C": 8}, 5)[0]
        said = []
        inputs.use_fused(draw_fused.Lazy(said.append, load=lambda: (None, "the PTX did not load (CUresult 218)"),
                                         device_type="cpu"))
        self.assertTrue(torch.equal(inputs.make_inputs(t, {"R": 4, "C": 8}, 5)[0], plain))
        self.assertEqual(said, ["the fused draw is off: the PTX did not load (CUresult 218)"])

    def test_a_failure_after_the_first_draw_is_an_error_not_another_recipe(self):
        t = task_with([{"name": "x", "shape": ["R", "C"], "dtype": "bfloat16"}])
        kernel = HostKernel(self.lib, fail_after=len(draw_fused.FORMATS) + 1)  # the known set's, then one set
        inputs.use_fused(host_lazy(kernel, known=host_known(self.lib)))
        inputs.make_inputs(t, {"R": 4, "C": 8}, 5)
        with self.assertRaisesRegex(RuntimeError, "the fused draw failed: cuLaunchKernel failed"):
            inputs.make_inputs(t, {"R": 4, "C": 8}, 6)

    def test_another_device_takes_the_torch_recipe(self):
        fused = draw_fused.Lazy([].append, load=lambda: self.fail("loaded for a CPU set"), device_type="cuda")
        inputs.use_fused(fused)
        t = task_with([{"name": "x", "shape": ["R", "C"], "dtype": "bfloat16"}])
        got = inputs.make_inputs(t, {"R": 4, "C": 8}, 5)[0]
        inputs.use_fused(None)
        self.assertTrue(torch.equal(got, inputs.make_inputs(t, {"R": 4, "C": 8}, 5)[0]))


class TheJudgesChoice(unittest.TestCase):
    def test_a_gpu_judge_draws_and_compares_with_the_kernels_unless_told_not_to(self):
        from kzoo_judge.judge import Options
        self.assertTrue(Options({}, "cuda").fused_draw)
        self.assertTrue(Options({}, "cuda").fused_compare)
        self.assertFalse(Options({"fused_draw": False}, "cuda").fused_draw)
        self.assertFalse(Options({"fused_compare": False}, "cuda").fused_compare)
        # a switch is JSON true or false: the string "false" is refused, not taken for true
        for key in ("fused_draw", "fused_compare", "trace", "profile"):
            with self.assertRaisesRegex(ValueError, "KZOO_OPTIONS: %s is true or false" % key):
                Options({key: "false"}, "cuda")


@unittest.skipUnless(torch.cuda.is_available(), "needs a CUDA device")
class OnTheGpu(unittest.TestCase):
    """The PTX on the device: the host build's known answers, and a graded-size set the host
    build's to the bit."""

    def test_the_device_draws_the_host_builds_bits(self):
        said = []
        fused = draw_fused.Lazy(said.append)
        self.assertTrue(fused.usable("cuda", torch.bfloat16), said)
        lib = _lib(self)
        n, cols = (1 << 24) + 3, 4099
        rows = -(-n // cols)
        scale = torch.exp2(torch.rand(rows, generator=torch.Generator().manual_seed(3)) * 2 - 1)
        for dtype in draw_fused.FORMATS:
            dev = torch.empty(n, dtype=dtype, device="cuda")
            fused.draw(dev, scale.cuda(), 0xABCDEF0123456789, cols)
            host = host_draw(lib, n, dtype=dtype, cols=cols, scale=scale, key=0xABCDEF0123456789, nthreads=4096)
            self.assertTrue(torch.equal(dev.cpu(), host), dtype)


if __name__ == "__main__":
    unittest.main()
