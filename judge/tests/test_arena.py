"""Arenas: inputs and outputs cross between judge and child as views of judge-owned memory (kzoo_judge.arena).

The child is untrusted, so every descriptor it sends is checked before the
judge builds a view from it."""

import unittest

import torch

from kzoo_judge import arena


class PlaceAndPack(unittest.TestCase):
    def test_placed_inputs_are_aligned_disjoint_copies(self):
        a = arena.new(4096)
        x = torch.arange(10, dtype=torch.float32)
        y = torch.ones(3, 5, dtype=torch.bfloat16)
        (vx, vy), end = arena.place(a, [x, y])
        self.assertTrue(torch.equal(vx, x))
        self.assertTrue(torch.equal(vy, y))
        self.assertEqual(vy.shape, (3, 5))
        self.assertEqual((vy.data_ptr() - a.data_ptr()) % arena.ALIGN, 0)
        self.assertFalse(arena.overlap(arena.span(vx), arena.span(vy)))
        self.assertEqual(end, arena.aligned(40) + arena.aligned(30))
        x.zero_()
        self.assertEqual(vx[3].item(), 3.0, "a placed input is a copy, not the caller's tensor")

    def test_too_small_an_arena_is_an_error_not_an_overrun(self):
        a = arena.new(64)
        with self.assertRaises(ValueError):
            arena.place(a, [torch.zeros(100, dtype=torch.float32)])
        with self.assertRaisesRegex(ValueError, "larger than the task declares"):
            arena.pack(a, [torch.zeros(100, dtype=torch.float32)])

    def test_pack_then_unpack_round_trips_values_dtypes_and_shapes(self):
        a = arena.new(8192)
        outs = [torch.randn(4, 7), torch.tensor([1, 2, 3], dtype=torch.int8), torch.zeros(0, 3), torch.ones(2, 2).t()]
        descs, _ = arena.pack(a, outs)
        views, why = arena.unpack(a, descs, [])
        self.assertIsNone(why)
        for o, v in zip(outs, views):
            self.assertEqual(o.dtype, v.dtype)
            self.assertEqual(o.shape, v.shape)
            self.assertTrue(torch.equal(o, v))

    def test_span_is_the_views_own_extent(self):
        base = torch.zeros(100)
        self.assertFalse(arena.overlap(arena.span(base[:50]), arena.span(base[50:])))
        self.assertTrue(arena.overlap(arena.span(base[:51]), arena.span(base[50:])))
        self.assertTrue(arena.overlap(arena.span(base.view(10, 10)[:, 0]), arena.span(base[85:])))
        self.assertFalse(arena.overlap(arena.span(base.view(10, 10)[:, 0]), arena.span(base[91:])))
        self.assertIsNone(arena.span(base[:0]))


class HostileDescriptors(unittest.TestCase):
    def setUp(self):
        self.a = arena.new(1024)

    def refused(self, descs, fragment):
        views, why = arena.unpack(self.a, descs, [])
        self.assertIsNone(views)
        self.assertIn(fragment, why)

    def test_each_malformed_field_is_refused_with_its_reason(self):
        self.refused("not a list", "not a list")
        self.refused([(0, "float32")], "malformed descriptor")
        self.refused([[0, "float32", [2]]], "malformed descriptor")
        self.refused([(-64, "float32", [2])], "bad arena offset")
        self.refused([(3, "float32", [2])], "bad arena offset")
        self.refused([(True, "float32", [2])], "bad arena offset")
        self.refused([(0, "object", [2])], "not one kzoo knows")
        self.refused([(0, "float32", [-1])], "bad shape")
        self.refused([(0, "float32", [2.0])], "bad shape")
        self.refused([(0, "float32", [1] * 17)], "bad shape")
        self.refused([(0, "float32", (2,))], "bad shape")

    def test_out_of_bounds_is_refused_however_the_size_is_reached(self):
        self.refused([(1024, "uint8", [1])], "run past the arena")
        self.refused([(0, "float32", [257])], "run past the arena")
        self.refused([(0, "float64", [1 << 40, 1 << 40])], "run past the arena")

    def test_overlapping_outputs_are_refused_within_a_call_and_across_calls(self):
        self.refused([(0, "float32", [32]), (64, "float32", [8])], "overlaps another output")
        taken = []
        _, why = arena.unpack(self.a, [(0, "float32", [16])], taken)
        self.assertIsNone(why)
        views, why = arena.unpack(self.a, [(0, "float32", [16])], taken)
        self.assertIn("overlaps another output", why)

    def test_empty_outputs_take_no_room(self):
        views, why = arena.unpack(self.a, [(0, "float32", [0, 5]), (0, "float32", [0])], [])
        self.assertIsNone(why)
        self.assertEqual([tuple(v.shape) for v in views], [(0, 5), (0,)])


if __name__ == "__main__":
    unittest.main()
