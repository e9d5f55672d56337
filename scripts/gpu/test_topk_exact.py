"""The catalog's top-k packages that run on the CPU (the eager baseline and the CPU solution) are
exact on lab/topk-logits/adversarial_gpu.py's rows -- ties, all-equal rows, -0.0 with +0.0,
infinities, duplicates at the 50th place -- compared bitwise with a stable sort, as the task is
graded. The script is the GPU's check of the GPU sources; here it runs on the CPU.

Run from scripts/gpu: python3 -m unittest -v test_topk_exact
"""
import io
import json
import os
import runpy
import sys
import unittest
from contextlib import redirect_stdout
from unittest import mock

import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "lab", "topk-logits", "adversarial_gpu.py")
PKG = "catalog/%s/h200/sampling/topk/fp32/topk_logits_eager/src"


class TopkExact(unittest.TestCase):
    def test_the_cpu_runnable_packages_are_exact_on_adversarial_rows(self):
        srcs = [os.path.join(ROOT, PKG % "kernel_data"), os.path.join(ROOT, PKG % "solutions/cpu")]
        out = io.StringIO()
        with mock.patch.object(torch.Tensor, "cuda", lambda self, *a, **k: self), \
                mock.patch.object(torch.cuda, "synchronize", lambda *a, **k: None), \
                mock.patch.object(sys, "argv", ["adversarial_gpu.py"] + srcs), redirect_stdout(out):
            runpy.run_path(SCRIPT, run_name="__main__")
        lines = [json.loads(l) for l in out.getvalue().splitlines()]
        self.assertEqual(len(lines), 2)
        for line in lines:
            self.assertNotIn("error", line)
            self.assertGreater(line["rows"], 100)
            self.assertEqual(line["wrong"], 0, line)


if __name__ == "__main__":
    unittest.main()
