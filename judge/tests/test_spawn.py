"""Children started ahead of their turn (kzoo_judge.spawn): the submission's and, in an A/B run,
the incumbent's, started before the judge imports torch, and the judge's standby; each taken once
by the judge's child of the same workdir and device, and never left running untaken."""

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
        [m] = e.members
        self.assertIn(m.proc.pid, freezer.SPAWNED)  # one of the judged, never a helper
        self.assertIsNone(e.take(tempfile.mkdtemp(), "cpu"))  # another workdir's child gets none
        self.assertIsNone(e.take(self.dir, "cuda"))
        got = e.take(self.dir, "cpu")
        self.assertIsNotNone(got)
        proc, sock = got
        self.addCleanup(proc.kill)
        self.addCleanup(sock.close)
        self.assertIsNone(proc.poll())
        self.assertIsNone(e.take(self.dir, "cpu"))  # once

    def test_an_ab_run_starts_the_incumbents_child_too(self):
        inc = tempfile.mkdtemp()
        e = spawn.early(self.dir, "cpu", incumbent=inc)
        self.addCleanup(e.kill)
        self.assertEqual(sorted(m.workdir for m in e.members), sorted([self.dir, inc]))
        mine, theirs = e.take(self.dir, "cpu"), e.take(inc, "cpu")
        for proc, sock in (mine, theirs):
            self.addCleanup(proc.kill)
            self.addCleanup(sock.close)
        self.assertNotEqual(mine[0].pid, theirs[0].pid)
        # an incumbent folder that is not there starts nothing for it
        e2 = spawn.early(self.dir, "cpu", incumbent=os.path.join(inc, "missing"))
        self.addCleanup(e2.kill)
        self.assertEqual(len(e2.members), 1)

    def test_killing_the_pool_ends_every_child_not_taken_and_it_can_start_more(self):
        inc = tempfile.mkdtemp()
        e = spawn.early(self.dir, "cpu", incumbent=inc)
        taken = e.take(self.dir, "cpu")
        self.addCleanup(taken[0].kill)
        self.addCleanup(taken[1].close)
        left = [m.proc for m in e.members if m.proc is not None]
        self.assertEqual(len(left), 1)
        e.kill()
        for proc in left:
            self.assertIsNotNone(proc.poll(), "an untaken child must be dead")
            self.assertNotIn(proc.pid, freezer.SPAWNED)
        self.assertIsNone(taken[0].poll(), "a taken child is not the pool's to kill")
        e.kill()  # twice is harmless
        self.assertTrue(e.start(self.dir))  # the judge's standby (Judge._start_standby)
        proc, sock = e.take(self.dir, "cpu")
        proc.kill()
        proc.wait()
        sock.close()

    def test_a_dead_child_is_skipped(self):
        e = spawn.early(self.dir, "cpu")
        self.addCleanup(e.kill)
        e.members[0].proc.kill()
        e.members[0].proc.wait()
        self.assertIsNone(e.take(self.dir, "cpu"))
        self.assertIsNone(e.members[0].proc, "the dead child was cleaned up")

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
