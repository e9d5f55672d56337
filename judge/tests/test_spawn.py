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

    def test_an_ab_run_starts_the_incumbents_child_and_the_timing_child_too(self):
        inc = tempfile.mkdtemp()
        e = spawn.early(self.dir, "cpu", incumbent=inc)
        self.addCleanup(e.kill)
        self.assertEqual([m.workdir for m in e.members], [self.dir, inc, self.dir])
        # The timing child, idle until the correctness trials end, makes no CUDA context before
        # its "setup" (child.main reads this from its environment).
        environs = [open("/proc/%d/environ" % m.proc.pid, "rb").read().split(b"\0") for m in e.members]
        self.assertEqual([b"KZOO_CHILD_DEFER_CUDA=1" in env for env in environs], [False, False, True])
        mine, theirs, later = e.take(self.dir, "cpu"), e.take(inc, "cpu"), e.take(self.dir, "cpu")
        for proc, sock in (mine, theirs, later):
            self.addCleanup(proc.kill)
            self.addCleanup(sock.close)
        self.assertEqual([mine[0].pid, theirs[0].pid, later[0].pid], [m.pid for m in (mine[0], theirs[0], later[0])])
        self.assertEqual(len({mine[0].pid, theirs[0].pid, later[0].pid}), 3, "first taken, first started")
        # an incumbent folder that is not there starts nothing for it, nor a timing child
        e2 = spawn.early(self.dir, "cpu", incumbent=os.path.join(inc, "missing"))
        self.addCleanup(e2.kill)
        self.assertEqual(len(e2.members), 1)

    def test_a_pool_started_before_its_job_is_fitted_to_the_job_it_gets(self):
        # warm.py starts the A/B's three children on the skeleton; a job without an incumbent
        # keeps the submission's child alone, one with it keeps all three.
        inc = tempfile.mkdtemp()
        alone = spawn.early(self.dir, "cpu", incumbent=inc)
        self.addCleanup(alone.kill)
        dropped = [m.proc for m in alone.members[1:]]
        alone.fit(self.dir, None)
        self.assertEqual([(m.workdir, m.deferred) for m in alone.members], [(self.dir, False)])
        for proc in dropped:
            self.assertIsNotNone(proc.poll(), "an idle child of no use to the job is ended")
        ab = spawn.early(self.dir, "cpu", incumbent=inc)
        self.addCleanup(ab.kill)
        ab.fit(self.dir, inc)
        self.assertEqual([m.workdir for m in ab.members], [self.dir, inc, self.dir])
        other = spawn.early(self.dir, "cpu", incumbent=inc)
        self.addCleanup(other.kill)
        other.fit(self.dir, tempfile.mkdtemp())  # another incumbent folder: the judge starts its own
        self.assertEqual([m.workdir for m in other.members], [self.dir, self.dir])

    def test_the_first_child_taken_is_the_first_started(self):
        inc = tempfile.mkdtemp()
        e = spawn.early(self.dir, "cpu", incumbent=inc)
        self.addCleanup(e.kill)
        first = e.members[0].proc.pid
        proc, sock = e.take(self.dir, "cpu")
        self.addCleanup(proc.kill)
        self.addCleanup(sock.close)
        self.assertEqual(proc.pid, first)

    def test_killing_all_but_one_workdir_keeps_its_waiting_child(self):
        inc = tempfile.mkdtemp()
        e = spawn.early(self.dir, "cpu", incumbent=inc)
        self.addCleanup(e.kill)
        taken = e.take(self.dir, "cpu")
        self.addCleanup(taken[0].kill)
        self.addCleanup(taken[1].close)
        theirs = e.members[1].proc
        e.kill(keep=self.dir)
        self.assertIsNotNone(theirs.wait(timeout=10))
        self.assertTrue(e.waiting(self.dir))
        self.assertFalse(e.waiting(inc))
        self.assertEqual([m.workdir for m in e.members], [self.dir])

    def test_killing_the_pool_ends_every_child_not_taken_and_it_can_start_more(self):
        inc = tempfile.mkdtemp()
        e = spawn.early(self.dir, "cpu", incumbent=inc)
        taken = e.take(self.dir, "cpu")
        self.addCleanup(taken[0].kill)
        self.addCleanup(taken[1].close)
        left = [m.proc for m in e.members if m.proc is not None]
        self.assertEqual(len(left), 2)
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
