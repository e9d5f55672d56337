"""ceiling.py's pure parts on the CPU: the byte accounting on the real catalog tasks, the stream folding,
the kernel's slot-to-chunk map, the choice of the best config, and a malformed task's clear error.

Run from scripts/gpu: python3 -m unittest -v test_ceiling
"""
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ceiling  # noqa: E402

TASKS = os.path.join(HERE, "..", "..", "catalog", "tasks")
BW = 4800  # GB/s, the h200 class


def read_json(path):
    with open(path) as f:
        return json.load(f)


def acc(name, shape):
    task = ceiling.load_task(os.path.join(TASKS, name))
    (_, dims), = ceiling.graded_dims(task, [shape])
    return dims, ceiling.account(task, dims, BW)


class Accounting(unittest.TestCase):
    def test_rmsnorm_residual_reads_and_writes_the_residual(self):
        dims, a = acc("rmsnorm-residual", 0)
        T, H = dims["T"], dims["H"]
        self.assertEqual((T, H), (32768, 8192))
        self.assertEqual(a["R"], 2 * T * H * 2 + H * 2)
        self.assertEqual(a["W"], 2 * T * H * 2)
        self.assertEqual(a["reads"], [("x", T * H * 2), ("residual", T * H * 2), ("weight", H * 2)])
        self.assertEqual(a["writes"], [("y", T * H * 2, False), ("residual", T * H * 2, True)])
        self.assertEqual(a["R"] + a["W"], (4 * T * H + H) * 2)  # docs/CATALOG.md's work
        self.assertTrue(a["bytes_match_task"])
        self.assertEqual(round(a["roofline_us"], 1), 447.4)
        self.assertAlmostEqual(a["roofline_us"], a["task_roofline_us"])

    def test_the_catalog_rooflines(self):
        # docs/CATALOG.md, "graded roofline on an H200 (shapes 0 / 1 / 2)": R + W is the task's own work.
        table = {"rmsnorm-residual": (447, 447, 447), "layernorm": (447, 447, 447),
                 "silu-and-mul": (294, 336, 294), "softmax": (447, 447, 447),
                 "cross-entropy": (438, 447, 447), "fp8-quant-per-token": (336, 336, 336),
                 "topk-logits": (448, 448, 449)}
        for name, us in table.items():
            for i, want in enumerate(us):
                with self.subTest(task=name, shape=i):
                    _, a = acc(name, i)
                    self.assertEqual(round(a["roofline_us"]), want)
                    self.assertTrue(a["bytes_match_task"])
                    self.assertEqual(a["task_bytes"], a["R"] + a["W"])

    def test_split_of_several_tasks(self):
        dims, a = acc("layernorm", 1)
        T, H = dims["T"], dims["H"]
        self.assertEqual((a["R"], a["W"]), (T * H * 2 + 2 * H * 2, T * H * 2))
        dims, a = acc("silu-and-mul", 2)
        T, I = dims["T"], dims["I"]
        self.assertEqual((a["R"], a["W"]), (T * 2 * I * 2, T * I * 2))
        dims, a = acc("cross-entropy", 0)
        T, V = dims["T"], dims["V"]
        self.assertEqual((a["R"], a["W"]), (T * V * 2 + T * 8, T * 4))
        dims, a = acc("fp8-quant-per-token", 0)
        T, H = dims["T"], dims["H"]
        self.assertEqual(a["writes"], [("q", T * H, False), ("scale", T * 4, False)])
        dims, a = acc("topk-logits", 2)
        B, V = dims["B"], dims["V"]
        self.assertEqual((a["R"], a["W"]), (B * V * 4, B * 50 * (4 + 8)))

    def test_rotary_counts_the_cache_once_where_the_task_counts_rows(self):
        # The task counts T*D*4 of cos/sin (a row gathered per token); read once, the cache is P*D*4.
        for i in range(3):
            dims, a = acc("rotary-embedding", i)
            T, HQ, HK, D, P = (dims[k] for k in ("T", "HQ", "HK", "D", "P"))
            q, k = T * HQ * D * 2, T * HK * D * 2
            self.assertEqual(a["reads"], [("positions", T * 8), ("query", q), ("key", k), ("cos_sin_cache", P * D * 4)])
            self.assertEqual(a["writes"], [("query", q, True), ("key", k, True)])
            self.assertEqual(a["task_bytes"] - (a["R"] + a["W"]), T * D * 4 - P * D * 4)
            self.assertEqual(a["bytes_match_task"], T == P)

    def test_an_in_place_input_not_among_the_outputs_is_written(self):
        raw = read_json(os.path.join(TASKS, "rmsnorm-residual", "task.json"))
        raw["definition"]["outputs"] = raw["definition"]["outputs"][:1]  # y only; residual still in place
        a = ceiling.account(ceiling.task_mod.Task(raw), {"T": 4, "H": 8}, BW)
        self.assertEqual(a["writes"], [("y", 64, False), ("residual", 64, True)])

    def test_all_graded_shapes_by_default(self):
        task = ceiling.load_task(os.path.join(TASKS, "silu-and-mul", "task.json"))
        self.assertEqual([i for i, _ in ceiling.graded_dims(task)], [0, 1, 2])


class Malformed(unittest.TestCase):
    def write(self, d, raw):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "task.json"), "w") as f:
            json.dump(raw, f)
        return d

    def test_errors_name_the_fault(self):
        raw = read_json(os.path.join(TASKS, "layernorm", "task.json"))
        with tempfile.TemporaryDirectory() as tmp:
            bad = json.loads(json.dumps(raw))
            bad["definition"]["outputs"][0]["shape"] = ["T", "Q"]
            task = ceiling.load_task(self.write(os.path.join(tmp, "a"), bad))
            (_, dims), = ceiling.graded_dims(task, [0])
            with self.assertRaisesRegex(ceiling.task_mod.TaskError, "tensor 'y' shape"):
                ceiling.account(task, dims, BW)
            bad = json.loads(json.dumps(raw))
            del bad["definition"]["inputs"][1]["dtype"]
            with self.assertRaisesRegex(ceiling.task_mod.TaskError, "needs name, shape and dtype"):
                ceiling.load_task(self.write(os.path.join(tmp, "b"), bad))
            bad = json.loads(json.dumps(raw))
            bad["workloads"]["synthetic"]["graded"] = []
            with self.assertRaisesRegex(ceiling.task_mod.TaskError, "no graded shapes"):
                ceiling.graded_dims(ceiling.load_task(self.write(os.path.join(tmp, "c"), bad)))
            with self.assertRaisesRegex(ceiling.task_mod.TaskError, "graded shape 7 does not exist"):
                ceiling.graded_dims(ceiling.load_task(os.path.join(TASKS, "layernorm")), [7])
            with self.assertRaisesRegex(ceiling.task_mod.TaskError, "cannot read task"):
                ceiling.load_task(os.path.join(tmp, "missing"))

    def test_main_reports_a_bad_task_without_touching_the_gpu(self):
        with tempfile.TemporaryDirectory() as tmp:
            out, js = io.StringIO(), os.path.join(tmp, "o.jsonl")
            with contextlib.redirect_stdout(out):
                ceiling.main([os.path.join(tmp, "nope"), "--json", js])
            self.assertIn("error cannot read task", out.getvalue())
            with open(js) as f:
                self.assertIn("cannot read task", json.loads(f.readline())["error"])


class Kernel(unittest.TestCase):
    def test_every_chunk_of_every_stream_once(self):
        for J in (1, 2, 7, 64, 100):
            for c in range(1, J + 1):
                got = [ceiling.slot_chunk(j, c, J) for j in range(J)]
                ks = [k for k in got if k is not None]
                self.assertEqual(ks, list(range(c)), (J, c))  # each chunk once, in slot order
        self.assertEqual([ceiling.slot_chunk(j, 4, 4) for j in range(4)], [0, 1, 2, 3])  # equal streams in step

    def test_fold_keeps_bytes_and_merges_the_smallest(self):
        s = [("a", 100), ("b", 1), ("c", 2), ("d", 50), ("e", 3)]
        f = ceiling.fold(s, 4)
        self.assertEqual(len(f), 4)
        self.assertEqual(sum(x[1] for x in f), 156)
        self.assertIn(("b+c", 3, False), f)
        w = [("y", 8, False), ("r", 8, True)]
        self.assertEqual(ceiling.fold(w, 3), w)

    def test_best_config_skips_failures(self):
        rs = [{"config": {"BLOCK": 1024}, "us": 510.0}, {"config": {"BLOCK": 4096}, "error": "OutOfResources"},
              {"config": {"BLOCK": 8192}, "us": 498.5}, {"config": {"BLOCK": 2048}, "us": 498.5}]
        self.assertEqual(ceiling.best(rs)["config"], {"BLOCK": 8192})  # the first of equals
        self.assertIsNone(ceiling.best([{"config": {}, "error": "x"}]))
        self.assertIsNone(ceiling.best([]))

    def test_configs_give_16_byte_accesses(self):
        cs = ceiling.configs(132)
        self.assertEqual(len(cs), 42)
        self.assertEqual(sum(c["hint"] for c in cs), 14)
        for c in cs:
            self.assertGreaterEqual(c["BLOCK"] // (32 * c["num_warps"]), 4)
            self.assertEqual(c["grid_cap"], c["per_sm"] * 132)
        self.assertEqual({c["per_sm"] for c in cs}, {0, 4, 8, 16})


if __name__ == "__main__":
    unittest.main()
