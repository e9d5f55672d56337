"""The profiler session of the gates' pass (kzoo_judge.profiling): the same Kineto events the
gates read, at the cost of the session alone."""

import importlib.util
import os
import subprocess
import sys
import unittest

import torch

from kzoo_judge import gates, profiling

JUDGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ProfilerSession(unittest.TestCase):
    def test_it_records_the_ops_that_the_library_gate_reads(self):
        a = torch.randn(64, 64)
        with profiling.session("cpu") as prof:
            torch.mm(a, a)
            torch.softmax(a, dim=-1)
        names = profiling.names(prof)
        self.assertIn("aten::mm", names)
        self.assertIn("aten::softmax", names)
        ev = profiling.events(prof, "cpu")
        self.assertTrue(all(kind == "op" for _, kind, _ in ev))
        self.assertIn("aten::mm", [n for n, _, _ in ev])
        # a matmul the reference does not make is still refused
        g, msg = gates.library_gate(names, ["aten::softmax"], "cpu")
        self.assertFalse(g["pass"])
        self.assertIn("aten::mm", msg)

    def test_sessions_follow_one_another_in_one_process(self):
        a = torch.randn(8, 8)
        for _ in range(3):
            with profiling.session("cpu") as prof:
                a.add(1)
            self.assertIn("aten::add", profiling.names(prof))

    @unittest.skipUnless(importlib.util.find_spec("torch._inductor") is not None,
                         "this torch has no Inductor to keep out (torch 1.x)")
    def test_a_session_does_not_import_inductor(self):
        # torch.profiler.profile's start imported Inductor in the judge and in the child: seconds
        # on the first case of every grade, and Inductor present in the submission's process.
        code = ("import sys, torch\n"
                "from kzoo_judge import profiling\n"
                "with profiling.session('cpu'):\n"
                "    torch.ones(4).add(1)\n"
                "print('torch._inductor' in sys.modules)\n")
        out = subprocess.run([sys.executable, "-c", code], cwd=JUDGE_DIR, capture_output=True, text=True, timeout=300)
        self.assertEqual(out.returncode, 0, out.stderr[-2000:])
        self.assertEqual(out.stdout.strip().splitlines()[-1], "False")


if __name__ == "__main__":
    unittest.main()
