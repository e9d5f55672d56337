"""The judge's end of the child: spawn, talk, stop, kill.

Everything the child sends is read with a restricted unpickler: plain
containers, numbers, strings and tensors rebuilt by torch's own shared-memory
functions, nothing else. An ordinary unpickler would let a submission run
code in the judge (a pickle can call any importable function).
"""

import io
import os
import pickle
import signal
import subprocess
import sys
import time

import torch
import torch.multiprocessing as tmp
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler

from . import bell, freezer, spawn
from .spawn import timing_cpu
from .spin import spin_until

_REBUILDERS = {
    "rebuild_tensor", "rebuild_storage_filename", "rebuild_typed_storage", "rebuild_cuda_tensor",
    "rebuild_storage_empty", "rebuild_typed_storage_child",
}


class ChildFailure(RuntimeError):
    """The child died, timed out or broke the protocol."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind  # "died" | "timeout" | "protocol"


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module == "torch.multiprocessing.reductions" and name in _REBUILDERS:
            return getattr(__import__(module, fromlist=[name]), name)
        if module == "torch" and name in ("Tensor", "Size", "device"):
            return getattr(torch, name)
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        if module in ("torch", "torch.storage", "torch.cuda") and name.endswith("Storage") and not name.startswith("_load"):
            obj = getattr(__import__(module, fromlist=[name]), name, None)
            if isinstance(obj, type):
                return obj
        raise pickle.UnpicklingError("the child sent a %s.%s object; only plain data and tensors may cross" % (module, name))


def restricted_loads(data):
    return _Unpickler(io.BytesIO(data)).load()


def keep_off_timing_cpu():
    """CPU timing: move the judge, and its torch threads, off the CPU its children are pinned
    to (timing_cpu). True when that leaves the judge a CPU of its own: then judge and child
    may spin-wait for each other around a timed call (spin.py) instead of sleeping in the kernel.

    Why: paced timed batches (Judge._one_by_one) cross the pipe twice per call. On a 2-vCPU
    VM each wake-up of a sleeping process cost 20-70 us, more after a real call than after
    the calibration's trivial one, and honest batches of a 150 us call ran at 0.39-0.73 of
    the judge's clock: nearly every batch was flagged. A spinning peer needs no wake-up
    (and the doorbell, bell.py, none of the pipe's crossings either)."""
    cpus = set(os.sched_getaffinity(0))
    mine = cpus - {timing_cpu()}
    if not mine:
        return False
    os.sched_setaffinity(0, mine)
    torch.set_num_threads(len(mine))
    return True


class Child:
    def __init__(self, workdir, device, l2_bytes, setup_timeout=300.0, wait=True, spawned=None):
        """Spawns the child (or adopts `spawned`, spawn.spawn's (process, socket)); with
        wait=False the caller calls finish_setup() later, so that several children import torch
        and bring up CUDA at the same time (seconds each)."""
        tmp.set_sharing_strategy("file_system")
        # A process entry.py started before the judge imported torch (spawn.py), when it is
        # this child's: its interpreter and torch came up meanwhile.
        self.proc, a = spawned if spawned is not None else spawn.spawn(workdir, device)
        self.conn = Connection(a.detach())
        self.device = device
        self.arrived_ns = None
        self.pid = self.proc.pid
        self.sleep_rate = 0.0
        self.pad_note = None  # GPU: the child's launch pad (pad.py), as it reported it
        self.spans_ok = False  # GPU: its calls can be timed by device spans (spans.py)
        self.spans_note = None  # why not, or what they are
        self._setup_timeout = setup_timeout
        self.send(("setup", device, l2_bytes))
        self._set_up = False
        self.in_arena = None
        self.out_arena = None
        self.out_shadow = None
        self.bell = None  # the doorbell of paced timed calls (bell.py), made with the arenas
        self.bell_seq = 0
        # Per timed shape (Judge._dims_key): the least stream-to-device tails of the judge-owned
        # calibration calls, by their length (Judge._calibrate, timing.TailFloors); a shape not
        # calibrated in this child gets the device-wide window.
        self.tail_floors = {}
        # The floors of the calls that spin the device (Judge._calibrate_floors), measured once a
        # child at its first calibrated shape and shared by every shape: they time the harness's
        # drain after the call, which never touches the shape's tensors.
        self.level_floors = None
        if wait:
            self.finish_setup()

    def finish_setup(self):
        """The reply to "setup": the child is up (torch imported, the device initialised)."""
        if self._set_up:
            return
        r = self.recv(self._setup_timeout)
        if r[0] != "ok":
            raise ChildFailure("protocol", "child setup failed: %s" % (r[1:],))
        # cycles of torch.cuda._sleep per microsecond, measured before any submitted code ran
        info = r[1] if isinstance(r[1], dict) else {}
        self.sleep_rate = float(info.get("sleep_cycles_per_us", 0.0))
        self.pad_note = str(info["pad"])[:200] if "pad" in info else None
        self.spans_ok = info.get("spans") is True
        self.spans_note = str(info["spans_note"])[:400] if "spans_note" in info else None
        self._set_up = True

    def arenas(self, in_bytes, out_bytes):
        """CPU: make sure this child's input and output arenas (arena.py) hold at least
        these many bytes; a grown pair is mapped into the child once. Each child has its
        own pair, so the submission's child never sees the incumbent's memory."""
        from . import arena
        if (self.in_arena is not None and self.in_arena.numel() >= in_bytes
                and self.out_arena is not None and self.out_arena.numel() >= out_bytes):
            return self.in_arena, self.out_arena
        # Grow by half again so that a slowly rising need does not re-map on every batch.
        grow = lambda have, need: need if have is None else max(need, have.numel() * 3 // 2)  # noqa: E731
        self.in_arena = arena.new(grow(self.in_arena, in_bytes))
        self.out_arena = arena.new(grow(self.out_arena, out_bytes))
        # The judge's private copy of each timed call's output slot, taken the moment the
        # call is over (Judge._one_by_one): what the child writes into the shared arena
        # later is never read.
        self.out_shadow = torch.empty_like(self.out_arena)
        if self.bell is None:
            self.bell = bell.Bell(bell.new())
        r = self.request(("arena", self.in_arena, self.out_arena, self.bell.words), 60)
        if r[0] != "ok":
            raise ChildFailure("protocol", "the child refused its arenas: %s" % (r[1:],))
        return self.in_arena, self.out_arena

    def device_out_arena(self, out_bytes):
        """GPU: this child's output arena (arena.new_on_device) of at least `out_bytes`, handed
        over once per size, with the doorbell of its paced calls (bell.py). The child copies each
        call's outputs into it after the call's window and drops its own tensors (Harness.go).
        The judge's shadow of the arena, as on the CPU: the slot of each timed call it checks is
        copied out the moment the call is over (Judge._copy_slot), so what the child writes into
        the arena later is never read."""
        from . import arena
        if self.out_arena is not None and self.out_arena.numel() >= out_bytes:
            return self.out_arena
        # the old ones go before the new ones are made: device memory is the limit
        self.out_arena = self.out_shadow = None
        self.out_arena = arena.new_on_device(out_bytes)
        self.out_shadow = torch.empty_like(self.out_arena)
        if self.bell is None:
            self.bell = bell.Bell(bell.new())
        r = self.request(("arena", None, self.out_arena, self.bell.words), 60)
        if r[0] != "ok":
            raise ChildFailure("protocol", "the child refused its arena: %s" % (r[1:],))
        return self.out_arena

    def send(self, msg):
        try:
            self.conn.send_bytes(ForkingPickler.dumps(msg))
        except (BrokenPipeError, ConnectionResetError, OSError) as e:
            raise ChildFailure("died", self._death_note("while the judge was sending (%s)" % e))

    def recv(self, timeout, spin_s=0.0):
        """The child's next message; with spin_s, spin-wait that long (keep_off_timing_cpu) first."""
        deadline = time.monotonic() + timeout
        if spin_s > 0:
            spin_until(self.conn.fileno(), time.perf_counter_ns() + int(min(spin_s, timeout) * 1e9))
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChildFailure("timeout", "the child did not answer within %.0f s" % timeout)
            try:
                ready = self.conn.poll(min(left, 1.0))
            except (EOFError, OSError):
                ready = True
            if ready:
                break
            if self.proc.poll() is not None:
                raise ChildFailure("died", self._death_note("while the judge waited"))
        try:
            data = self.conn.recv_bytes()
        except (EOFError, OSError):
            raise ChildFailure("died", self._death_note("before answering"))
        # The judge's clock stops when the reply has arrived, before it is unpickled:
        # opening the outputs' CUDA IPC handles here costs the judge, not the child,
        # and varies with the allocator's history (timing.cross_check).
        self.arrived_ns = time.perf_counter_ns()
        try:
            msg = restricted_loads(data)
        except Exception as e:  # noqa: BLE001 - anything malformed is the child's fault
            raise ChildFailure("protocol", "the child sent something the judge refuses: %s" % e)
        if not isinstance(msg, tuple) or not msg or not isinstance(msg[0], str):
            raise ChildFailure("protocol", "the child sent a malformed reply")
        return msg

    def request(self, msg, timeout):
        self.send(msg)
        return self.recv(timeout)

    def _death_note(self, when):
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            return "the child stopped talking %s" % when
        if code < 0:
            return "the child was killed by signal %d %s" % (-code, when)
        return "the child exited with code %d %s (os._exit or sys.exit in the submission?)" % (code, when)

    def close(self):
        try:
            if self.proc.poll() is None:
                try:
                    self.send(("exit",))
                    self.proc.wait(timeout=10)
                except (ChildFailure, subprocess.TimeoutExpired):
                    pass
        finally:
            self.kill()

    def signal_kill(self):
        """SIGKILL to the child's process group, not waited for (kill() reaps it)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self):
        self.signal_kill()
        try:
            self.proc.wait(timeout=10)
            freezer.SPAWNED.discard(self.proc.pid)
        except subprocess.TimeoutExpired:
            pass
        try:
            self.conn.close()
        except OSError:
            pass
