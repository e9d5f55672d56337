"""Containment's scan for CUDA contexts outside the judged children (kzoo_judge.freezer.gpu_holders).
On the CPU the GPU's device files are stood in for by a file whose name a test pattern matches:
what is checked is which processes count, and that a holder counts only when seen twice in a row."""

import mmap
import os
import re
import subprocess
import sys
import tempfile
import signal
import time
import unittest
from unittest import mock

from kzoo_judge import freezer

# A process that maps FILE (as a CUDA context maps /dev/nvidia*), says so, then waits.
HOLDER = r"""
import mmap, sys, time
f = open(sys.argv[1], "r+b")
m = mmap.mmap(f.fileno(), 4096)
print("mapped", flush=True)
time.sleep(120)
"""


class GpuHolders(unittest.TestCase):
    def setUp(self):
        fd, self.path = tempfile.mkstemp(prefix="kzoo-fake-nvidia7-")
        os.write(fd, b"\0" * 4096)
        os.close(fd)
        self.addCleanup(os.unlink, self.path)
        self.pattern = re.compile(re.escape(os.path.basename(self.path)))

    def holder(self):
        p = subprocess.Popen([sys.executable, "-c", HOLDER, self.path], stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.stdout.close)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        self.assertEqual(p.stdout.readline().strip(), "mapped")
        return p

    def test_a_helper_that_maps_the_device_counts_from_the_second_scan_on(self):
        f = freezer.Freezer()
        p = self.holder()
        self.assertEqual(f.gpu_holders(self.pattern), {}, "one sighting could be a fork on its way to exec")
        held = f.gpu_holders(self.pattern)
        self.assertIn(p.pid, held)
        dev, cmd = held[p.pid]
        self.assertIn(os.path.basename(self.path), dev)
        self.assertIn("mmap", cmd)
        self.assertIn(p.pid, f.gpu_holders(self.pattern))

    def test_a_mapping_gone_by_the_next_scan_never_counts(self):
        f = freezer.Freezer()
        p = self.holder()
        f.gpu_holders(self.pattern)
        p.kill()
        p.wait()
        self.assertEqual(f.gpu_holders(self.pattern), {})

    def test_the_judged_children_and_the_judges_own_helpers_never_count(self):
        judged = self.holder()
        freezer.SPAWNED.add(judged.pid)
        self.addCleanup(freezer.SPAWNED.discard, judged.pid)
        own = self.holder()
        f = freezer.Freezer()
        f.adopt_helpers(sides=[judged.pid])  # `own` was there before any submitted code ran
        self.assertIn(own.pid, f.own)
        f.gpu_holders(self.pattern)
        self.assertEqual(f.gpu_holders(self.pattern), {})

    def test_an_open_descriptor_without_a_mapping_does_not_count(self):
        # A process that inherited the device's descriptors across exec maps nothing of it.
        code = "import sys, time; f = open(sys.argv[1], 'rb'); print('open', flush=True); time.sleep(120)"
        p = subprocess.Popen([sys.executable, "-c", code, self.path], stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.stdout.close)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        self.assertEqual(p.stdout.readline().strip(), "open")
        f = freezer.Freezer()
        f.gpu_holders(self.pattern)
        self.assertEqual(f.gpu_holders(self.pattern), {})

    def test_the_device_pattern_matches_a_contexts_files_only(self):
        for line in ("7f1c0000-7f1c0100 rw-s 00000000 00:05 812 /dev/nvidia0",
                     "7f1c0000-7f1c0100 rw-s 00000000 00:05 811 /dev/nvidiactl",
                     "7f1c0000-7f1c0100 rw-s 00000000 00:05 813 /dev/nvidia-uvm"):
            self.assertIsNotNone(freezer.GPU_MAPS.search(line), line)
        for line in ("7f1c0000-7f1c0100 r-xp 00000000 08:01 99 /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
                     "7f1c0000-7f1c0100 r-xp 00000000 08:01 98 /usr/lib/libcuda.so.580.159.04",
                     "7f1c0000-7f1c0100 rw-s 00000000 00:05 9 /dev/nvidia-modeset"):
            self.assertIsNone(freezer.GPU_MAPS.search(line), line)


# A process (a child the judge judges) that starts a helper of its own and prints its pid.
PARENT = r"""
import subprocess, sys, time
h = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print(h.pid, flush=True)
time.sleep(120)
"""


class EachSideAnswersForItsOwnTree(unittest.TestCase):
    """Judge._refuse_foreign_contexts: a holder fails the side whose tree it is in, at that
    side's batch; one outside both trees (an orphan) fails the submission."""

    def side(self):
        p = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
        self.addCleanup(p.stdout.close)
        self.addCleanup(p.wait)
        self.addCleanup(p.kill)
        helper = int(p.stdout.readline())
        self.addCleanup(lambda: os.kill(helper, 9))
        return p, helper

    def judge(self, held, sub, inc):
        from types import SimpleNamespace
        from kzoo_judge.judge import Judge
        stub = SimpleNamespace(freezer=SimpleNamespace(gpu_holders=lambda: held), child=sub,
                               ab=SimpleNamespace(child=inc) if inc is not None else None)
        return lambda chosen: Judge._refuse_foreign_contexts(stub, chosen)

    def test_the_submissions_helper_fails_the_submission_never_the_incumbent(self):
        from kzoo_judge.judge import CaseFailure
        (sub, sub_helper), (inc, _) = self.side(), self.side()
        check = self.judge({sub_helper: ("/dev/nvidia0", "python3 -c ...")}, sub, inc)
        check(inc)  # the incumbent's batch goes on
        with self.assertRaises(CaseFailure) as e:
            check(sub)
        self.assertEqual(e.exception.status, "error")
        self.assertIn("the submission's", str(e.exception))
        self.assertIn("CUDA context", str(e.exception))

    def test_the_incumbents_helper_fails_the_incumbent(self):
        from kzoo_judge.judge import CaseFailure
        (sub, _), (inc, inc_helper) = self.side(), self.side()
        check = self.judge({inc_helper: ("/dev/nvidia0", "x")}, sub, inc)
        check(sub)
        with self.assertRaises(CaseFailure) as e:
            check(inc)
        self.assertIn("the incumbent's", str(e.exception))

    def test_an_orphan_is_the_submissions_and_without_ab_every_holder_fails_the_run(self):
        from kzoo_judge.judge import CaseFailure
        (sub, _), (inc, _) = self.side(), self.side()
        orphan = 999999999  # in neither tree
        check = self.judge({orphan: ("/dev/nvidia-uvm", "")}, sub, inc)
        check(inc)
        with self.assertRaises(CaseFailure):
            check(sub)
        alone = self.judge({orphan: ("/dev/nvidia-uvm", "")}, sub, None)
        with self.assertRaises(CaseFailure):
            alone(sub)
        self.judge({}, sub, inc)(sub)  # nothing held: nothing to refuse


# A side the judge spawned, with a helper of its own (depth 2 below the judge), that leaves an
# orphan on cue: a double fork into a session of its own, with a child of its own, that the
# judge adopts as its subreaper. Prints "helper orphan orphan's-child", then waits.
SIDE = r"""
import os, subprocess, sys, time
helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
sys.stdin.readline()
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    pid = os.fork()
    if pid == 0:
        kid = os.fork()
        if kid == 0:
            time.sleep(120)
            os._exit(0)
        os.write(w, b"%d %d" % (os.getpid(), kid))
        time.sleep(120)
        os._exit(0)
    os._exit(0)
os.wait()
os.close(w)
print(helper.pid, os.read(r, 100).decode(), flush=True)
time.sleep(120)
"""


class OrphansComeLast(unittest.TestCase):
    """freeze stops an orphan's tree before the sides', thaw continues it after them: an orphan
    never runs while the side it came from, whichever that was, is stopped (freezer.thaw)."""

    def setUp(self):
        self.assertTrue(freezer.become_subreaper(), "the test needs PR_SET_CHILD_SUBREAPER")
        side = subprocess.Popen([sys.executable, "-c", SIDE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        freezer.SPAWNED.add(side.pid)
        self.f = freezer.Freezer()
        self.f.adopt_helpers(sides=[side.pid])
        side.stdin.write("go\n")
        side.stdin.flush()
        helper, orphan, orphan_kid = map(int, side.stdout.readline().split())
        self.side, self.helper, self.orphan, self.orphan_kid = side.pid, helper, orphan, orphan_kid
        self.addCleanup(self.stop_all, side)
        deadline = time.monotonic() + 10
        while freezer._stat(orphan)[0] != os.getpid():  # its parent gone, the judge adopts it
            self.assertLess(time.monotonic(), deadline, "the orphan was never adopted")
            time.sleep(0.01)

    def stop_all(self, side):
        for p in (self.orphan_kid, self.orphan, self.helper, side.pid):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        side.stdin.close()
        side.stdout.close()
        side.wait()
        freezer.SPAWNED.discard(side.pid)
        for p in (self.orphan, self.orphan_kid):
            try:
                os.waitpid(p, 0)
            except ChildProcessError:
                pass  # not ours: the orphan reaps its own child

    def signals(self, sig, call):
        sent, real = [], os.kill
        with mock.patch.object(freezer.os, "kill", side_effect=lambda p, s: (sent.append(p) if s == sig else None, real(p, s))):
            out = call()
        return out, sent

    def test_the_orphans_tree_is_stopped_first_and_continued_last(self):
        frozen, stops = self.signals(signal.SIGSTOP, lambda: self.f.freeze(keep=None))
        self.assertEqual(set(frozen), {self.side, self.helper, self.orphan, self.orphan_kid})
        self.assertEqual(set(stops[:2]), {self.orphan, self.orphan_kid}, stops)
        self.assertLess(stops.index(self.orphan_kid), stops.index(self.orphan), "deepest first")
        self.assertLess(stops.index(self.helper), stops.index(self.side), "deepest first")
        _, conts = self.signals(signal.SIGCONT, lambda: self.f.thaw(frozen))
        self.assertEqual(conts, [self.side, self.helper, self.orphan, self.orphan_kid])

    def test_an_orphan_is_stopped_whichever_side_runs(self):
        frozen, stops = self.signals(signal.SIGSTOP, lambda: self.f.freeze(keep=self.side))
        self.assertEqual(stops, [self.orphan_kid, self.orphan])
        self.assertNotIn(freezer._stat(self.side)[1], ("T", "t"), "the side it keeps runs on")
        self.f.thaw(frozen)


if __name__ == "__main__":
    unittest.main()
