"""Containment: every process of the run but the judge and the side being timed, stopped.

Why not the child's process group (as until 2026-12): anything that leaves the group
(`setsid`, `setpgid`, a new session) escaped SIGSTOP. On an H200 a submission whose
helper, in a session of its own and with a CUDA context of its own, kept the GPU busy
whenever the submission was stopped -- that is, while the incumbent was timed -- was
accepted as 2.33x faster than the very same code (issue 10).

Why not cgroups (cgroup.freeze): the judge runs inside the sandbox as an unprivileged
user with no delegated cgroup subtree, so it cannot make groups for its children; the
runner's cgroup holds the whole run. What the judge can rely on instead is the process
tree: it makes itself a child subreaper (PR_SET_CHILD_SUBREAPER), so every orphan of
its descendants -- a double fork, a daemon -- is re-parented to the judge, never
outside it. Every process of the run is then a descendant of the judge, and the judge
can name them all by walking /proc.

The rule, per timed batch: stop every descendant of the judge except the judge's own
helpers (present before any submitted code ran: torch's shared-memory manager) and the
tree of the child being timed. Orphans (re-parented to the judge after that) are
stopped whichever side runs: an honest child leaves none. Stopped processes cannot
start work; work they queued on the GPU before they stopped is what
Judge._await_quiet_device looks for.

And on a GPU, no process of the run but the judged children may hold a CUDA context
(gpu_holders). Why: stopping a helper does not stop the kernels it queued, and the
judge's probe for a busy device did not see them reliably. On the H200 the same saboteur
(a helper in a session of its own that queues 25 ms kernels whenever it sees its side
stopped) swayed identical code in three of seven runs (3.53x, 4.02x, and 0.91x the other
way), on main and on 765be8a alike, where its runs had passed before: it queued in the moment between the
signals that stop or continue its parent and itself. Stopping the deepest first and
continuing the shallowest first (freeze, thaw) closes that moment, but a helper can take
its cue from anything else (its own stops, the clock), and what it queued still runs
(docs/JUDGE.md).
"""

import ctypes
import os
import re
import signal
import time

PR_SET_CHILD_SUBREAPER = 36

# Pids of the children the judge spawned through subprocess (channel.Child): their Popen
# objects reap them; every other child of the judge is an adopted orphan, reaped here.
SPAWNED = set()


def become_subreaper():
    """Orphans of the judge's descendants are re-parented to the judge (not to init). Best effort:
    returns False where prctl refuses (then an orphan may escape the scan, as before)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except OSError:
        return False


def _stat(pid):
    """(ppid, state) of a process, or None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            rest = f.read().rsplit(b")", 1)[1].split()
        return int(rest[1]), rest[0].decode()
    except (OSError, IndexError, ValueError):
        return None


def children_map():
    """{ppid: [pid, ...]} of every process visible in /proc."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        st = _stat(int(name))
        if st is not None:
            out.setdefault(st[0], []).append(int(name))
    return out


def descendants(root, kids):
    """Every descendant of `root` (not root itself) in the {ppid: [pid]} map `kids`."""
    out, todo = set(), list(kids.get(root, []))
    while todo:
        p = todo.pop()
        if p in out:
            continue
        out.add(p)
        todo.extend(kids.get(p, []))
    return out


# A CUDA context maps the driver's device files into its process. A process that merely
# inherited the descriptors across exec maps none of them.
GPU_MAPS = re.compile(r"/dev/nvidia(?:\d+|ctl|-uvm)\b")


def maps_file(pid, pattern):
    """The first file of /proc/PID/maps that `pattern` finds, or None (none, or gone)."""
    try:
        with open("/proc/%d/maps" % pid, errors="replace") as f:
            for line in f:
                m = pattern.search(line)
                if m:
                    return m.group(0)
    except OSError:
        return None
    return None


def cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
    except OSError:
        return ""


def _by_depth(pids, root, kids, deepest_first, late=()):
    """`pids` grouped by their depth below `root` in the {ppid: [pid]} map `kids`, as a list of
    sets, deepest or shallowest level first; a pid not found below root comes last either way.
    `late`: children of root (adopted orphans) whose trees count as deeper than every other
    tree -- stopped before it, continued after it -- whatever their depth below root."""
    depth, todo, d = {}, [root], 0
    while todo:
        nxt = []
        for p in todo:
            for c in kids.get(p, []):
                if c not in depth:
                    depth[c] = d + 1
                    nxt.append(c)
        todo, d = nxt, d + 1
    in_late = set()
    for o in late:
        if o in depth:
            in_late |= {o} | descendants(o, kids)
    levels = {}
    for p in pids:
        key = None if p not in depth else (p in in_late, depth[p])
        levels.setdefault(key, set()).add(p)
    known = sorted((k for k in levels if k is not None), reverse=deepest_first)
    return [levels[k] for k in known] + ([levels[None]] if None in levels else [])


class Freezer:
    def __init__(self, judge_pid=None):
        self.judge = judge_pid or os.getpid()
        self.own = set()  # the judge's own helper processes (adopt_helpers)
        self._gpu_seen = set()  # pids that mapped the GPU at the last gpu_holders scan

    def adopt_helpers(self, sides):
        """Call before any submitted code runs: the judge's direct children that are not the
        children it judges (`sides`: their pids) are its own helpers and are never stopped."""
        self.own = set(children_map().get(self.judge, [])) - set(sides)

    def reap(self):
        """Collect the adopted orphans that have exited: a subreaper that never waits for them
        keeps one zombie for each (a child's shared-memory manager outlives every child)."""
        for p in children_map().get(self.judge, []):
            if p in SPAWNED or p in self.own:
                continue
            st = _stat(p)
            if st is not None and st[1] == "Z":
                try:
                    os.waitpid(p, os.WNOHANG)
                except ChildProcessError:
                    pass

    def _helpers(self, kids):
        """The judge's own helpers and their descendants in the {ppid: [pid]} map `kids`: never
        stopped, never killed, never counted as a stranger."""
        out = set(self.own)
        for h in self.own:
            out |= descendants(h, kids)
        return out

    def _orphans(self, kids):
        """The judge's children in the {ppid: [pid]} map `kids` that it neither spawned nor kept
        as its own helpers: processes of the run re-parented to it (it is their subreaper)."""
        return set(kids.get(self.judge, [])) - SPAWNED - self.own

    def freeze(self, keep=None, timeout_s=10.0):
        """Stop every descendant of the judge but its helpers and the tree of pid `keep` (None:
        stop them all), the deepest first: each level is stopped before its parents are, so no
        process ever runs while an ancestor of its is stopped (a helper that acts when it sees
        its side stopped never sees it). Orphans have lost their line of ancestors: their trees
        are stopped before every side's, since the side each came from may be either. Repeats
        until no such process is left running (one may fork between the scan and the signal).
        Returns the set of pids it stopped (for thaw)."""
        self.reap()
        stopped = set()
        deadline = time.monotonic() + timeout_s
        while True:
            kids = children_map()
            spared = self._helpers(kids)
            if keep is not None:
                spared |= {keep} | descendants(keep, kids)
            targets = {p for p in descendants(self.judge, kids) - spared - stopped if (_stat(p) or (0, "Z"))[1] != "Z"}
            if not targets:
                break
            for level in _by_depth(targets, self.judge, kids, deepest_first=True, late=self._orphans(kids)):
                sent = set()
                for p in level:
                    try:
                        os.kill(p, signal.SIGSTOP)
                        sent.add(p)
                    except ProcessLookupError:
                        pass
                self._wait_stopped(sent, deadline)
                stopped |= sent
            if time.monotonic() > deadline:
                break
        return stopped

    def gpu_holders(self, pattern=GPU_MAPS):
        """{pid: (the device file it maps, its command line)} for every process of the run but
        the judge's helpers and the children it judges (SPAWNED) that maps the GPU's device
        files at this scan AND the previous one. Why two scans: a process forked from a judged
        child keeps that child's mappings until it execs (microseconds; Triton's ptxas, a
        compile worker), where a helper with a context of its own maps them for its whole life."""
        kids = children_map()
        spared = self._helpers(kids) | SPAWNED
        now = {}
        for p in descendants(self.judge, kids) - spared:
            hit = maps_file(p, pattern)
            if hit:
                now[p] = hit
        held = {p: (f, cmdline(p)) for p, f in now.items() if p in self._gpu_seen}
        self._gpu_seen = set(now)
        return held

    @staticmethod
    def _wait_stopped(pids, deadline):
        """Until every pid is really stopped (SIGSTOP is asynchronous) or gone."""
        for p in pids:
            while time.monotonic() < deadline:
                st = _stat(p)
                if st is None or st[1] in ("T", "t", "Z", "X"):
                    break
                time.sleep(0.0002)

    def thaw(self, pids, timeout_s=10.0):
        """Continue `pids`, the shallowest first: each level runs again before its descendants
        do, the reverse of freeze. Why: continued in any order, a helper continued before its
        stopped parent saw it stopped and went to work (a session helper of the CPU saboteur
        burned the timing CPU through its own side's next batch: identical code read 0.78-0.81,
        2026-12-02). Orphans' trees come last, for the same reason: one continued beside the
        side it came from (both are children of the judge) could find that side still stopped
        and go to work on the CPU its side pinned it to."""
        deadline = time.monotonic() + timeout_s
        kids = children_map()
        for level in _by_depth(set(pids), self.judge, kids, deepest_first=False, late=self._orphans(kids)):
            sent = set()
            for p in level:
                try:
                    os.kill(p, signal.SIGCONT)
                    sent.add(p)
                except ProcessLookupError:
                    pass
            for p in sent:
                while time.monotonic() < deadline:
                    st = _stat(p)
                    if st is None or st[1] not in ("T", "t"):
                        break
                    time.sleep(0.0002)

    def kill_all(self):
        """SIGKILL every descendant but the judge's helpers: the run is over."""
        for _ in range(20):
            kids = children_map()
            targets = {p for p in descendants(self.judge, kids) - self._helpers(kids) if (_stat(p) or (0, "Z"))[1] != "Z"}
            if not targets:
                break
            for p in targets:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
            self.reap()
        self.reap()
