"""Inputs from the secret seed: every dtype, quantised inputs, reproducibility, freshness."""

import math
import unittest

import torch

from kzoo_judge import dtypes, inputs

from . import helpers

ALL_DTYPES = ["bfloat16", "float16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
              "int8", "uint8", "int32", "int64", "bool"]


task_with = helpers.input_task


class EveryDtype(unittest.TestCase):
    def test_every_schema_dtype_is_generated_with_its_carrier(self):
        t = task_with([{"name": "x_" + d, "shape": ["R", "C"], "dtype": d} for d in ALL_DTYPES])
        xs = inputs.make_inputs(t, {"R": 7, "C": 33}, 123)
        for d, x in zip(ALL_DTYPES, xs):
            with self.subTest(dtype=d):
                self.assertEqual(tuple(x.shape), (7, 33))
                self.assertEqual(x.dtype, dtypes.torch_dtype(d))
                if d == "bool":
                    self.assertTrue(0 < int(x.sum()) < x.numel())
                else:
                    v = dtypes.to_float(x, d)
                    self.assertTrue(bool(torch.isfinite(v).all()), d)
                    self.assertGreater(float(v.float().std()), 0)

    def test_float8_carrier_matches_torch_version(self):
        if dtypes.has_native_float8():
            self.assertEqual(dtypes.torch_dtype("float8_e4m3fn"), torch.float8_e4m3fn)
        else:
            self.assertEqual(dtypes.torch_dtype("float8_e4m3fn"), torch.uint8)

    def test_float8_decode_table_is_exact(self):
        e4 = dtypes.decode_table("float8_e4m3fn")
        self.assertEqual(float(e4[0x7E]), 448.0)
        self.assertTrue(math.isnan(float(e4[0x7F])))
        self.assertEqual(float(e4[0x01]), 2.0 ** -9)  # smallest subnormal
        self.assertEqual(float(e4[0x38]), 1.0)
        e5 = dtypes.decode_table("float8_e5m2")
        self.assertEqual(float(e5[0x7B]), 57344.0)
        self.assertEqual(float(e5[0x7C]), math.inf)
        self.assertEqual(float(e5[0xFC]), -math.inf)
        self.assertEqual(float(e5[0x3C]), 1.0)

    def test_float8_encode_round_trips_and_rounds_to_nearest_even(self):
        for fmt in dtypes.FLOAT8:
            table = dtypes.decode_table(fmt)
            finite = table[torch.isfinite(table)]
            back = dtypes.to_float(dtypes.from_float(finite, fmt), fmt)
            self.assertTrue(torch.equal(back, finite), fmt)
        # 1.0625 lies halfway between 1.0 (even mantissa) and 1.125 in e4m3: ties go to even
        self.assertEqual(float(dtypes.to_float(dtypes.from_float(torch.tensor([1.0625]), "float8_e4m3fn"), "float8_e4m3fn")), 1.0)
        # saturation, not NaN, beyond the largest finite
        self.assertEqual(float(dtypes.to_float(dtypes.from_float(torch.tensor([1e6]), "float8_e4m3fn"), "float8_e4m3fn")), 448.0)

    def test_integer_range_hints_and_distinct(self):
        t = task_with([{"name": "ids", "shape": ["R"], "dtype": "int64", "meaning": "class index in [0, C)"},
                       {"name": "slots", "shape": ["R"], "dtype": "int32", "meaning": "distinct cache slots in [0, C)"},
                       {"name": "v", "shape": ["R"], "dtype": "float32", "meaning": "value in [2, 3]"}])
        ids, slots, v = inputs.make_inputs(t, {"R": 50, "C": 60}, 9)
        self.assertTrue(bool(((ids >= 0) & (ids < 60)).all()))
        self.assertEqual(len(set(slots.tolist())), 50)
        self.assertTrue(bool(((slots >= 0) & (slots < 60)).all()))
        self.assertTrue(bool(((v >= 2) & (v <= 3)).all()))

    def test_rows_differ_in_magnitude(self):
        t = task_with([{"name": "x", "shape": ["R", "C"], "dtype": "float32"}])
        x, = inputs.make_inputs(t, {"R": 64, "C": 4096}, 1)
        std = x.std(dim=1)
        self.assertGreater(float(std.max() / std.min()), 2.0)
        self.assertTrue(bool((std > 0.4).all() and (std < 2.5).all()))


class IntoSlots(unittest.TestCase):
    def test_a_set_made_into_given_slots_is_the_set_made_alone(self):
        from kzoo_judge import arena
        t = task_with([{"name": "x_" + d, "shape": ["R", "C"], "dtype": d} for d in ALL_DTYPES]
                      + [{"name": "q", "shape": ["R", "C"], "dtype": "float8_e4m3fn", "quantized": {"scheme": "per-row"}},
                         {"name": "q_scale", "shape": ["R", 1], "dtype": "float32"}])
        dims = {"R": 7, "C": 33}
        alone = inputs.make_inputs(t, dims, 123)
        buf = torch.zeros(1 << 16, dtype=torch.uint8)
        slots, end = arena.slots(buf, inputs.layout(t, dims), 3 * arena.ALIGN)
        got = inputs.make_inputs(t, dims, 123, out=slots)
        self.assertLessEqual(end, buf.numel())
        for a, b, s in zip(alone, got, slots):
            self.assertIs(b, s)  # the slot itself, filled
            self.assertEqual(a.dtype, b.dtype)
            self.assertTrue(torch.equal(a, b))


class Seeds(unittest.TestCase):
    def test_same_seed_same_inputs_other_seed_other_inputs(self):
        t = task_with([{"name": "x", "shape": ["R", "C"], "dtype": "bfloat16"}])
        s = inputs.Secret(b"s" * 32)
        a = inputs.make_inputs(t, {"R": 4, "C": 8}, s.derive("timed", "c", 0))[0]
        b = inputs.make_inputs(t, {"R": 4, "C": 8}, s.derive("timed", "c", 0))[0]
        c = inputs.make_inputs(t, {"R": 4, "C": 8}, s.derive("timed", "c", 1))[0]
        self.assertTrue(torch.equal(a, b))
        self.assertFalse(torch.equal(a, c))

    def test_derivation_depends_on_the_secret(self):
        self.assertNotEqual(inputs.Secret(b"a" * 32).derive("x", 1), inputs.Secret(b"b" * 32).derive("x", 1))
        self.assertNotEqual(inputs.Secret(b"a" * 32).derive("x", 1), inputs.Secret(b"a" * 32).derive("x", 2))
        with self.assertRaises(ValueError):
            inputs.Secret(b"short")

    def test_signature_is_hmac_of_the_bytes(self):
        import hashlib
        import hmac
        s = inputs.Secret(b"k" * 32)
        self.assertEqual(s.sign(b"doc"), hmac.new(b"k" * 32, b"doc", hashlib.sha256).hexdigest())


class Quantised(unittest.TestCase):
    def quant_task(self, fmt, sshape, gran, block=None):
        q = {"format": fmt, "scale_granularity": gran}
        if block:
            q["block_size"] = block
        return task_with([{"name": "w", "shape": ["R", "C"], "dtype": fmt, "quantized": q},
                          {"name": "w_scale", "shape": sshape, "dtype": "float32"}])

    def check(self, t, dims, fmt, block=None):
        w, ws = inputs.make_inputs(t, dims, 77)
        self.assertEqual(w.dtype, dtypes.torch_dtype(fmt))
        self.assertEqual(ws.dtype, torch.float32)
        # every scale an exact power of two
        m, e = torch.frexp(ws)
        self.assertTrue(bool((m.abs() == 0.5).all()), ws)
        # the stored bytes dequantise exactly (q * 2^k is exact in float32)
        real = dtypes.dequantize(w, ws, fmt, block)
        if fmt == "int8":
            vals = w.to(torch.float64)
        else:
            vals = dtypes.to_float(w, fmt).to(torch.float64)
        full = dtypes.expand_blocks(ws.to(torch.float64), tuple(w.shape), block)
        self.assertTrue(torch.equal(real.to(torch.float64), vals * full))
        # the scale makes use of the format: each block's largest |q| is above half the max finite
        fmax = dtypes.max_finite(fmt)
        grid, blocks = dtypes.scale_grid(tuple(w.shape), tuple(ws.shape), block)
        amax = inputs.block_amax(vals.float(), grid, blocks)
        self.assertTrue(bool((amax <= fmax).all()))
        self.assertTrue(bool((amax > fmax / 2 * 0.8).all()), amax)
        return w, ws

    def test_per_tensor_float8(self):
        for fmt in dtypes.FLOAT8:
            self.check(self.quant_task(fmt, [], "per-tensor"), {"R": 16, "C": 64}, fmt)

    def test_per_row_int8(self):
        w, ws = self.check(self.quant_task("int8", ["R"], "per-row"), {"R": 16, "C": 64}, "int8")
        self.assertEqual(tuple(ws.shape), (16,))

    def test_per_block_with_ragged_tails(self):
        t = self.quant_task("float8_e4m3fn", ["cdiv(R, 128)", "cdiv(C, 128)"], "per-block", 128)
        w, ws = self.check(t, {"R": 300, "C": 200}, "float8_e4m3fn", 128)
        self.assertEqual(tuple(ws.shape), (3, 2))
        self.assertEqual(dtypes.scale_grid((300, 200), (3, 2), 128)[1], (128, 128))

    def test_scale_grid_rejects_shapes_that_do_not_tile(self):
        with self.assertRaises(ValueError):
            dtypes.scale_grid((10, 10), (3, 7))

    def test_scale_listed_before_its_tensor(self):
        t = task_with([{"name": "w_scale", "shape": [], "dtype": "float32"},
                       {"name": "w", "shape": ["R", "C"], "dtype": "int8", "quantized": {"format": "int8", "scale_granularity": "per-tensor"}}])
        ws, w = inputs.make_inputs(t, {"R": 4, "C": 4}, 5)
        self.assertEqual(w.dtype, torch.int8)
        self.assertEqual(float(torch.frexp(ws)[0].abs()), 0.5)


if __name__ == "__main__":
    unittest.main()
