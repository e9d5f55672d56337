"""Starting a child process, torch-free, so that entry.py can start the first one before the
judge imports torch (docs/JUDGE.md, "Two processes").

Why: the child's interpreter, torch import and CUDA start took 4.8 s of a 28.6 s softmax grade
on the H200 (docs/PERF.md), and the judge waited for all of it after its own torch import of
seconds. Started first, the two imports run at once. What the early child can reach is what
any child can: an environment without the seed or the verdict channel, no inherited
descriptor but its socket, and nothing from the judge until its "setup" message.
"""

import functools
import os
import signal
import socket
import subprocess
import sys

from . import freezer


@functools.lru_cache(maxsize=None)
def timing_cpu():
    """The one CPU every child of this judge is pinned to when timing on the CPU
    (chosen once per judge process, by its pid, so that several workers on one
    machine spread over its CPUs while each A/B stays on one).

    Why: the vCPUs of a virtual machine are not equally fast (steal time,
    host neighbours), and the scheduler keeps a process on the CPU it last
    ran on. Unpinned, the incumbent's and the submission's children each
    settled on a different vCPU for a whole run and identical code measured
    0.72x or 1.35x against itself; pinned to one CPU, 0.98-1.01x."""
    cpus = sorted(os.sched_getaffinity(0))
    return cpus[os.getpid() % len(cpus)]


def _scrubbed_env(extra_path, cpu=None, defer_cuda=False):
    env = {k: v for k, v in os.environ.items()
           if k not in ("KZOO_SEED_FD", "KZOO_CHILD_DEFER_CUDA") and not k.startswith("KZOO_SECRET")}
    if cpu is not None:
        env["KZOO_CHILD_CPU"] = str(cpu)
    if defer_cuda:
        env["KZOO_CHILD_DEFER_CUDA"] = "1"  # child.main: torch now, the CUDA context at "setup"
    parts = [extra_path] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    env["PYTHONUNBUFFERED"] = "1"
    # glibc's malloc moves its mmap threshold with each process's allocation
    # history: a child that once freed a large block serves mid-sized tensors
    # from the heap, one that did not maps and faults them in on every call.
    # The submission's child (correctness trials first) and the incumbent's
    # then timed IDENTICAL code 1.6x apart on the CPU. Fixed thresholds make
    # the cost of an allocation the same in every child, whatever ran before.
    env["MALLOC_MMAP_THRESHOLD_"] = str(1 << 30)
    env["MALLOC_TRIM_THRESHOLD_"] = str(1 << 30)
    return env


def spawn(workdir, device, defer_cuda=False):
    """A fresh `python3 -m kzoo_judge.child` in its own session, its stdout and stderr the
    judge's stderr (it never holds the judge's stdout, so it cannot write the benchmark
    document), `workdir` its cwd. defer_cuda: it imports torch at once but makes its CUDA
    context only at "setup". Returns (the process, the judge's end of the socket)."""
    a, b = socket.socketpair()
    judge_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kzoo_judge.child", str(b.fileno())],
            pass_fds=(b.fileno(),), stdin=subprocess.DEVNULL, stdout=sys.stderr.fileno(),
            stderr=sys.stderr.fileno(), env=_scrubbed_env(judge_root, timing_cpu() if device == "cpu" else None, defer_cuda),
            cwd=workdir, start_new_session=True, close_fds=True)
    except BaseException:
        a.close()
        raise
    finally:
        b.close()
    freezer.SPAWNED.add(proc.pid)
    return proc, a


class Early:
    """The child entry.py starts before the judge exists: taken once by the judge's first
    child of the same workdir and device (Judge._start_child), killed if never taken."""

    def __init__(self, workdir, device, defer_cuda=False):
        self.workdir, self.device, self.deferred = workdir, device, defer_cuda
        self.proc, self.sock = spawn(workdir, device, defer_cuda)

    def take(self, workdir, device):
        """(process, socket) for a child of `workdir` and `device`, once; None otherwise (the
        early child is then killed: it must not linger unjudged)."""
        if self.proc is None:
            return None
        ok = (workdir, device) == (self.workdir, self.device) and self.proc.poll() is None
        if not ok:
            self.kill()
            return None
        got, self.proc, self.sock = (self.proc, self.sock), None, None
        return got

    def kill(self):
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
            freezer.SPAWNED.discard(self.proc.pid)
        except subprocess.TimeoutExpired:
            pass
        self.sock.close()
        self.proc = self.sock = None


class Pool:
    """Children started ahead of their turn (Early): entry.py's, one for the submission's src/
    and, in an A/B run, one for the incumbent's; later the judge's standby for the submission's
    timing child (Judge.run). Each is taken once by the judge's child of its workdir and device;
    kill() ends every one not taken, and the pool can start more after it."""

    def __init__(self, device):
        self.device = device
        self.members = []

    def start(self, workdir, defer_cuda=False):
        """One more child for `workdir`; False where none started (no such folder, an unknown
        device, a failed spawn: the judge then starts its own, as it always did)."""
        if self.device not in ("cpu", "cuda") or not os.path.isdir(workdir):
            return False
        try:
            self.members.append(Early(workdir, self.device, defer_cuda))
            return True
        except OSError as e:
            print("kzoo-judge: a child did not start ahead of its turn (%s); the judge starts its own" % e,
                  file=sys.stderr)
            return False

    def take(self, workdir, device):
        """(process, socket) of a live untaken child of `workdir` and `device`, or None."""
        for m in self.members:
            if m.proc is not None and (m.workdir, m.device) == (workdir, device):
                got = m.take(workdir, device)  # a dead one is killed and skipped
                if got is not None:
                    return got
        return None

    def waiting(self, workdir):
        """Whether a live untaken child of `workdir` is here."""
        return any(m.proc is not None and m.proc.poll() is None and m.workdir == workdir for m in self.members)

    def fit(self, workdir, incumbent):
        """Make a pool started as early(workdir, device, ANY) the one early(workdir, device,
        incumbent) would have started (a judge started before its job, warm.py): children of
        another incumbent folder, and without an incumbent the deferred timing child, are
        ended. An idle child's CUDA context would sit on the device while others are timed."""
        for m in self.members:
            if m.proc is None:
                continue
            wanted = (m.workdir == workdir and (incumbent or not m.deferred)) or (incumbent and m.workdir == incumbent)
            if not wanted:
                m.kill()
        self.members = [m for m in self.members if m.proc is not None]

    def kill(self, keep=None):
        """End every child not taken, but those of the workdir `keep`."""
        for m in self.members:
            if keep is None or m.workdir != keep:
                m.kill()
        self.members = [m for m in self.members if m.proc is not None]


def early(workdir, device, incumbent=None):
    """entry.py's pool: the submission's child and, for an A/B run (`incumbent`, the incumbent's
    source folder), the incumbent's and the submission's timing child (Judge.run: a fresh one
    after the correctness trials), all started before the judge imports torch; None where no
    child could start (no src/, an unknown device: the judge then starts its children as it
    always did). Why: started after the judge's torch import, the incumbent's interpreter, torch
    and CUDA context were 3.3 s of an A/B job on an H200, and the timing child, started when the
    correctness trials began, still kept the job waiting 3.2 s (docs/GPU.md, session 17). The
    timing child makes its CUDA context only when it is taken: until then its idle context would
    be one more on the device while the incumbent is calibrated than while it is timed."""
    pool = Pool(device)
    if not pool.start(workdir):
        return None
    if incumbent and pool.start(incumbent):
        pool.start(workdir, defer_cuda=True)
    return pool
