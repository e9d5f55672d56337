"""The early child (kzoo_judge.spawn): started before the judge imports torch, taken once by the
judge's first child of the same workdir and device, and never left running untaken."""

import os
import tempfile
import unittest

from kzoo_judge import freezer, spawn


class EarlyChild(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def test_no_early_child_without_a_source_folder_or_a_known_device(self):
        self.assertIsNone(spawn.early(os.path.join(self.dir, "missing"), "cpu"))
        self.assertIsNone(spawn.early(self.dir, None))
        self.assertIsNone(spawn.early(self.dir, "tpu"))

    def test_it_is_taken_once_by_a_child_of_its_workdir_and_device(self):
        e = spawn.early(self.dir, "cpu")
        self.addCleanup(e.kill)
        self.assertIn(e.proc.pid, freezer.SPAWNED)  # one of the judged, never a helper
        got = e.take(self.dir, "cpu")
        self.assertIsNotNone(got)
        proc, sock = got
        self.addCleanup(proc.kill)
        self.addCleanup(sock.close)
        self.assertIsNone(proc.poll())
        self.assertIsNone(e.take(self.dir, "cpu"))  # once

    def test_a_child_of_another_workdir_or_device_kills_it_instead(self):
        for workdir, device in ((tempfile.mkdtemp(), "cpu"), (self.dir, "cuda")):
            e = spawn.early(self.dir, "cpu")
            proc = e.proc
            self.assertIsNone(e.take(workdir, device))
            self.assertIsNotNone(proc.poll(), "the untaken early child must be dead")
            self.assertNotIn(proc.pid, freezer.SPAWNED)

    def test_killing_it_untaken_leaves_no_process(self):
        e = spawn.early(self.dir, "cpu")
        proc = e.proc
        e.kill()
        self.assertIsNotNone(proc.poll())
        e.kill()  # twice is harmless

    def test_its_environment_carries_no_seed(self):
        os.environ["KZOO_SEED_FD"], os.environ["KZOO_SECRET_X"] = "7", "s"
        try:
            env = spawn._scrubbed_env("/x")
        finally:
            del os.environ["KZOO_SEED_FD"], os.environ["KZOO_SECRET_X"]
        self.assertNotIn("KZOO_SEED_FD", env)
        self.assertNotIn("KZOO_SECRET_X", env)


if __name__ == "__main__":
    unittest.main()
