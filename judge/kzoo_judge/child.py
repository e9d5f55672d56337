"""The child process: imports the submission and calls its entry point.

Started fresh (`python3 -m kzoo_judge.child FD`, never forked from the
judge), with the seed descriptor not inherited, stdin closed and fd 1 already
pointing at the judge's stderr. Nothing here is trusted by the judge: the
submission shares this process and may patch any of it. The judge relies on
this code only for convenience (running calls in a loop near the device) and
checks everything that matters itself: its own clock, its own comparison,
its own copies of the inputs. See docs/JUDGE.md.

Protocol (one message, one reply, pickled with torch's reductions so tensors
travel through shared memory / CUDA IPC): the handler table in main(). A
"go" replies ("done", per-call ns, outputs, per-call tail ns): see Harness.go.
"""

import ctypes
import importlib.util
import os
import sys
import traceback

# Bound before any submitted code runs, so patching time.perf_counter_ns
# afterwards does not reach these names (patching this module still can:
# the judge's own clock catches that).
from time import perf_counter_ns as _clock

from .spin import SPIN_S, spin_until


def _harden():
    """Best effort: no new privileges, no capabilities (so a child running as
    root cannot ptrace or read /proc/<judge>/mem of the non-dumpable judge)."""
    notes = []
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        PR_SET_NO_NEW_PRIVS = 38
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            notes.append("no_new_privs failed")
        PR_SET_SECUREBITS = 28
        # NOROOT and NO_SETUID_FIXUP, both locked, KEEP_CAPS locked off: uid 0 gains nothing on exec.
        libc.prctl(PR_SET_SECUREBITS, 0x2F, 0, 0, 0)

        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

        class Data(ctypes.Structure):
            _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

        hdr = Header(0x20080522, 0)
        data = (Data * 2)()
        if libc.capset(ctypes.byref(hdr), ctypes.byref(data)) != 0:
            notes.append("capset failed errno %d" % ctypes.get_errno())
    except Exception as e:  # noqa: BLE001 - hardening is best effort, the sandbox is the real wall
        notes.append("hardening error: %s" % e)
    return notes


def _places(args, r):
    """Where a call's tensors sit (trace mode): each tensor argument's and output's device
    address and its offset from its storage's start (an input arrives as a view into the CUDA
    IPC mapping of the judge's allocation), as hex: to read a batch's time against placement."""
    import torch
    try:
        outs = list(r) if isinstance(r, (tuple, list)) else [r]
        return [("%x+%x" % (t.untyped_storage().data_ptr(), t.data_ptr() - t.untyped_storage().data_ptr()))
                if type(t) is torch.Tensor and t.is_cuda else "-" for t in list(args) + outs]
    except Exception as e:  # noqa: BLE001 - a diagnostic must not fail the call
        return ["?: %s" % type(e).__name__]


class Harness:
    def __init__(self, conn):
        self.conn = conn
        self.device = "cpu"
        self.fn = None
        self.flush_buf = None
        self.sets = []
        self.keep = None  # outputs of the last reply stay alive until the next command (CUDA IPC)
        self._device_sync = None
        self._ctx_sync = None  # GPU: the driver's cuCtxSynchronize, the drain's timed sync (_drain)
        self._event = None
        self._flush_sink = None  # the flush's result, held so the read is not a dead value
        self.out_arena = None  # CPU: the judge's output arena (arena.py); outputs are copied there
        self.spin_next = False  # spin-wait for the next message (prepare)
        self.bell = None  # the doorbell that starts and ends a paced timed call (bell.py)
        self.sleep_rate = 0.0  # GPU: cycles of torch.cuda._sleep per microsecond (_busy)
        self.pad = None  # GPU: the launch pad that holds every SM (pad.py); None: calls run unpadded
        self.recorder = None  # GPU: the device's activity records (spans.Recorder), once its self-test passed
        self.span_calls = 0  # calls marked since the records were last taken
        self.span_pad_us = 0.0  # their pad's length (spans.per_call_detail checks the records' clock by it)
        self.span_trace = False  # log each call's busy time and record count beside its span
        # A marked call's pad went out since the records were last read: the next batch's first
        # call drops them with a forced flush (a calibration batch's, one broken off). Otherwise
        # "spans" left nothing of a call behind and the flush is skipped. (Session 25's A/B jobs
        # spent 0.5-0.9 s more in their batches and 0.3-0.6 s more unattributed than session 24's;
        # how much of it the flushes were is not measured apart.)
        self.span_dirty = False

    # --- messages -----------------------------------------------------------
    def setup(self, device, l2_bytes):
        import torch
        self.device = device
        if device == "cuda":
            torch.cuda.init()
            # Bound before any submitted code runs (patching torch.cuda afterwards does not
            # reach the window; patching this module still can: the judge's clock catches that).
            self._device_sync = torch.cuda.synchronize
            self._event = torch.cuda.Event
            if l2_bytes:
                self.flush_buf = torch.zeros(int(l2_bytes) * 2 // 4, dtype=torch.int32, device="cuda")
            self.sleep_rate = self._sleep_rate()
            self._ctx_sync = _driver_sync()
            from . import pad
            self.pad, why = pad.ExclusivePad.load()
            spans_why = self._spans_self_test() if self.pad else "no launch pad to open a call's span"
            return ("ok", {"pid": os.getpid(), "torch": str(torch.__version__), "sleep_cycles_per_us": self.sleep_rate,
                           "pad": "every SM, %d blocks" % self.pad.blocks if self.pad else "none: %s" % why,
                           "spans": spans_why is None, "spans_note": spans_why or "device activity records"})
        return ("ok", {"pid": os.getpid(), "torch": str(torch.__version__)})

    def _sleep_rate(self):
        """Cycles of torch.cuda._sleep per microsecond: the judge's calibration spins the device
        for set times (timing.TailFloors). Measured here, before any submitted code is loaded."""
        import torch
        rates = []
        for cycles in (1_000_000, 4_000_000, 4_000_000):
            a, b = self._event(enable_timing=True), self._event(enable_timing=True)
            a.record()
            torch.cuda._sleep(cycles)
            b.record()
            b.synchronize()
            rates.append(cycles / max(a.elapsed_time(b) * 1e3, 1.0))
        return max(rates[1:])

    def load(self, path, entry, src_dir):
        if src_dir not in sys.path:
            sys.path.insert(0, src_dir)
        name = os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None:
            return ("error", "cannot load %s" % path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        fn = getattr(mod, entry, None)
        if not callable(fn):
            return ("error", "module %s has no callable %r" % (path, entry))
        self.fn = fn
        return ("ok", None)

    def arena(self, in_arena, out_arena, bell_words=None):
        # The input arena needs no handle here: the sets arrive as views of it.
        from .bell import Bell
        self.out_arena = out_arena
        if bell_words is not None:
            try:
                self.bell = Bell(bell_words)
            except ValueError as e:
                return ("error", str(e))
        return ("ok", None)

    def _pack(self, i, r, offset):
        """Call i's outputs copied into the judge's output arena: (descriptors, next offset, None)
        or (None, offset, the reason they cannot be sent). Without an arena (a run before the
        judge handed one over), the tensors themselves."""
        lst, why = _normalise(r, self.sets[i])
        if why:
            return None, offset, ("bad_output", i, why)
        if self.out_arena is None:
            return lst, offset, None
        from .arena import pack
        try:
            d, offset = pack(self.out_arena, lst, offset)
        except ValueError as e:
            return None, offset, ("bad_output", i, str(e))
        return d, offset, None

    def _send_outputs(self, outs):
        """The reply's outputs of a batch whose calls returned them all (the profiler pass):
        descriptors into the output arena, or the tensors, kept alive until the next command."""
        sent, offset = [], 0
        for i, r in enumerate(outs):
            d, offset, bad = self._pack(i, r, offset)
            if bad:
                return None, bad
            sent.append(d)
        if self.out_arena is None:
            self.keep = sent
        return sent, None

    def _spans_self_test(self):
        """None when this process's device records show a padded, marked call (spans.py), else
        why not (no libcupti, CUPTI refused, records not as read there). The recorder is kept,
        stopped, for the timed batches."""
        import torch
        from . import spans
        rec, why = spans.Recorder.load()
        if rec is None:
            return why
        try:
            why = rec.start()
            if why:
                return why
            stream = torch.cuda.current_stream().cuda_stream
            why = self.pad.launch(0.001, stream)
            torch.cuda._sleep(1000)  # a call's work
            why = why or self.pad.mark(stream)
            torch.cuda.synchronize()
            why = why or rec.stop()
            recs = rec.take()
        except Exception as e:  # noqa: BLE001 - any failure means: time by events
            return "the device records failed: %s: %s" % (type(e).__name__, str(e)[:200])
        if why:
            return why
        if spans.per_call(recs, 1)[0] <= 0:
            return "the device records did not show a marked call (%d records: %s)" % (
                len(recs), ", ".join(sorted({r[0][:40] for r in recs}))[:300])
        self.recorder = rec
        import atexit
        atexit.register(rec.stop)  # no record delivered into a finalising interpreter
        return None

    def _spans_begin(self):
        """A batch timed by spans begins: the records so far (a batch broken off before its
        "spans", the calibration's) are dropped. Returns None or why it cannot record."""
        self.span_calls = 0
        if self.recorder.on:
            if self.span_dirty:
                self.recorder.take()  # a forced flush: only when a pad went out since the last read
            else:
                self.recorder.records = []  # nothing of a call since "spans" read them: no flush
            self.span_dirty = False
            return None
        return self.recorder.start()

    def spans(self):
        """The device span of each call marked since the batch began (spans.per_call_detail), -1 where
        the records cannot say."""
        from . import spans
        n, self.span_calls = self.span_calls, 0
        if not n or self.recorder is None or not self.recorder.on:
            return ("spans", [-1] * n)
        detail = spans.per_call_detail(self.recorder.take(), n, int(self.span_pad_us * 1000))
        self.span_dirty = False
        if self.span_trace:
            # What of each span the device was busy with the call's own work (its gaps between
            # kernels are the rest), and how many records it had: a diagnostic beside Nsight Compute.
            print("kzoo-child: trace: device records: busy %s us of spans %s us; records %s"
                  % (["%.1f" % (b / 1e3) for _, b, _ in detail], ["%.1f" % (s / 1e3) for s, _, _ in detail],
                     [k for _, _, k in detail]), file=sys.stderr, flush=True)
        return ("spans", [d[0] for d in detail])

    def prepare(self, sets, opts=None):
        """The input sets of the next "go". With opts["spin"] (a paced CPU call whose judge has a
        CPU of its own) the child spin-waits for that "go" instead of sleeping (main)."""
        self.sets = sets
        self.keep = None
        self.spin_next = bool((opts or {}).get("spin"))
        return ("ready", len(sets))

    def _sync(self):
        if self.device == "cuda":
            self._device_sync()

    def _flush(self):
        """Evict the L2 by READING twice its size. Zeroing a buffer (the usual way) leaves the
        L2 full of dirty lines, and writing them back then lands in the next call's window:
        4-60 us per call on an H200 (docs/PERF.md), a sizeable part of a 300 us kernel, that
        Nsight Compute (whose flush is an invalidate) never charges. Read, the previous call's
        dirty lines are written back here, outside the window, and the call starts on a clean L2."""
        import torch
        self._flush_sink = torch.sum(self.flush_buf)

    def _drain(self, stream_end):
        """Wait for the whole device after a call. Spinning on the stream's end event first
        (not blocking) keeps the gap between that event and the device-wide end to the
        harness's own few microseconds, the same for every call: a longer gap is work the
        call left running on another stream (timing.window_ns). Returns the host's ns the
        device sync blocked once the stream's end was seen (the "sync" tail).
        That sync is the driver's own call (_driver_sync), not torch.cuda.synchronize: on an
        H200, once a call's stream end was seen, torch's sync took 5.5-12 us (p90 up to 27) in
        a plain process and 16-49 us in the child, the driver's 1.0-2.5 us (p90 under 4): the
        Python around it is host time the tail would charge (docs/GPU.md, session 20)."""
        while not stream_end.query():
            pass
        t0 = _clock()
        if self._ctx_sync is None or self._ctx_sync() != 0:
            # No driver entry point, or it failed: torch's sync raises what went wrong.
            self._device_sync()
        return _clock() - t0

    def _poison(self, nbytes):
        """Leave NaN-patterned freed memory where an output allocation would land."""
        if nbytes <= 0:
            return
        import torch
        p = torch.empty(int(nbytes), dtype=torch.uint8, device=self.device)
        p.fill_(0xFF)
        del p

    def _busy(self, us):
        """Keep the device busy for `us` microseconds with one spinning thread (the warm-up)."""
        if us > 0 and self.sleep_rate > 0:
            import torch
            torch.cuda._sleep(int(us * self.sleep_rate))

    def _pad(self, us):
        """Hold every SM for `us` microseconds before a call's start event (pad.py), so that the
        host's launch of the call's kernels overlaps this wait instead of opening the window
        with an idle device, and nothing the call queues elsewhere can run before the start.
        Why: Nsight Compute counts kernels only; the window started on an idle device counted
        the launch latency too (a Triton launch is tens of microseconds, several percent of a
        500 us call). Without a pad (it did not load, or a launch failed) calls are timed with
        their launch inside the window: a figure that can only read high."""
        if us > 0 and self.pad is not None:
            import torch
            why = self.pad.launch(us, torch.cuda.current_stream().cuda_stream)
            if why:
                self.pad = None
                print("kzoo-child: %s; calls from here on run without a launch pad" % why, file=sys.stderr, flush=True)

    def go(self, mode, opts):
        fn = self.fn if mode != "trivial" else _trivial_factory(opts.get("out_specs", []), self.device,
                                                                 int(opts.get("sleep_cycles", 0)))
        if fn is None:
            return ("error", "no submission loaded")
        cuda = self.device == "cuda"
        times, outs = [], []
        # Each call's outputs are copied into the judge's arena as soon as the call is over --
        # on the CPU inside its window, on a GPU right after its device end (a device copy of
        # a graded output is a sizeable part of a call) -- and the call's own tensors dropped.
        # What the judge checks is then the output as it stood when the call returned: a thread
        # that finished outputs while the next call ran used to pass with part of each call's
        # work outside its figure. On a GPU the next call also reuses the memory it would
        # outside the judge; kept alive for the whole batch, the outputs pushed every call onto
        # memory the allocator had not just used.
        per_call = self.out_arena is not None
        offset, bad = int(opts.get("out_offset", 0)), None  # the judge's slot for this "go" (paced batches)
        flush = self.flush_buf is not None and opts.get("flush", True)
        pad_us = float(opts.get("pad_us", 0)) if cuda else 0.0
        warm_us = float(opts.get("warm_us", 0)) if cuda else 0.0
        # A paced call started and ended through the doorbell (bell.py): one call per "go".
        ring = int(opts.get("bell", 0)) if self.bell is not None and len(self.sets) == 1 else 0
        trace, enqueue, places, phases = bool(opts.get("trace")), [], [], []
        # The tail (Options.tail): the GPU events' ("events") or the device sync's own ("sync").
        synced, blocked = opts.get("tail") == "sync", []
        # Timed by spans (spans.py): each call opened by the pad and closed by a mark after its
        # device sync; "spans" reads them. A batch's first call ("span_first") drops older records.
        marked = cuda and bool(opts.get("spans")) and self.pad is not None and self.recorder is not None
        if marked:
            self.span_pad_us, self.span_trace = pad_us, trace
        if marked and opts.get("span_first"):
            why = self._spans_begin()
            if why:
                print("kzoo-child: %s; calls are timed by their events" % why, file=sys.stderr, flush=True)
                self.recorder = None
                marked = False
        if cuda:
            # Per call: start, the stream's end (right after the call, in stream order) and the
            # device's end (after a device-wide sync). The judge takes the stream's figure unless
            # the device went on past it (timing.window_ns): side-stream work stays inside.
            starts = [self._event(enable_timing=True) for _ in self.sets]
            mids = [self._event(enable_timing=True) for _ in self.sets]
            # (The device's end is an event only for the "events" tail; "sync" times the drain.)
            ends = None if synced else [self._event(enable_timing=True) for _ in self.sets]
        for i, args in enumerate(self.sets):
            if opts.get("poison"):
                self._poison(opts["poison"])
            if flush:
                self._flush()
            try:
                if ring:
                    if cuda:
                        # The warm-up: the device kept busy after the flush, so that the SM clock,
                        # dropped during the hand-over, is back up when the call starts; waited
                        # for here, with the flush, before the judge's clock starts. (Inside that
                        # clock, as a longer pad, its clock-dependent length made the judge's
                        # cross-check flag honest batches.)
                        self._busy(warm_us)
                        self._device_sync()  # the flush is done before the judge's clock starts
                    if not self.bell.arm_and_wait(ring, float(opts.get("ring_timeout_s", 60))):
                        return ("error", "the judge did not ring the doorbell")
                if cuda:
                    h0 = _clock()
                    self.span_dirty = self.span_dirty or marked
                    self._pad(pad_us if pad_us > 0 or not marked else 0.001)
                    starts[i].record()
                    r = fn(*args)
                    mids[i].record()
                    if trace:
                        # The host's time from the pad's launch to the call's return: past the
                        # pad's length, the stream window opened on an idle device (launch in it).
                        enqueue.append((_clock() - h0) / 1e3)
                    h2 = _clock() if trace else 0
                    blocked.append(self._drain(mids[i]))
                    if ends is not None:
                        ends[i].record()
                    if marked and self.pad is not None:
                        import torch
                        why = self.pad.mark(torch.cuda.current_stream().cuda_stream)
                        if why:
                            return ("error", why)
                        self.span_calls += 1
                    h3 = _clock() if trace else 0
                    if trace:
                        places.append(_places(args, r))  # after the window: host work of its own
                    h4 = h5 = _clock() if trace else 0
                    if per_call:
                        r, offset, bad = self._pack(i, r, offset)
                        h5 = _clock() if trace else 0
                        # The copy is done before the call's tensors can be reused by work
                        # on another stream (the allocator orders reuse per stream only), and
                        # before "done": the judge's clock covers it, so work cannot hide in it.
                        self._device_sync()
                    if trace:
                        # Where the host's time of a call goes, inside the judge's clock: from
                        # the pad's launch to the call's return, the wait for the device (the
                        # stream's end, then the sync), the output's copy into the arena queued
                        # (its checks included), and the sync after it. Why the last two apart:
                        # on an H200 an honest paged-decode call's copy took 329 us against 152
                        # for the calibration's calls with the same inputs (docs/GPU.md, session
                        # 20); which of the two grows says whether it is host or device work.
                        phases.append((h2 - h0, h3 - h2, h5 - h4, _clock() - h5))
                else:
                    t0 = _clock()
                    r = fn(*args)
                    if per_call:
                        r, offset, bad = self._pack(i, r, offset)
                    times.append(_clock() - t0)
                if ring:
                    self.bell.done(ring)
            except BaseException as e:  # noqa: BLE001 - any failure of the submission is a value
                if isinstance(e, KeyboardInterrupt):
                    raise
                return ("raised", i, "".join(traceback.format_exception(type(e), e, e.__traceback__))[-4000:])
            if bad:
                return bad
            outs.append(r)
        self._sync()
        if enqueue:
            # With the device sync's own blocked time beside, whatever the tail option: one traced
            # grade shows both tails of the same calls (Options.tail).
            print("kzoo-child: trace: %shost enqueue %s us (pad %.0f us); places %s; sync %s us; host to return, drain, copy, its sync %s us"
                  % ("calibration call, " if mode == "trivial" else "", ["%.1f" % x for x in enqueue], pad_us, places,
                     ["%.1f" % (b / 1e3) if isinstance(b, int) else "-" for b in blocked],
                     [["%.1f" % (x / 1e3) for x in ph] for ph in phases]), file=sys.stderr, flush=True)
        if cuda:
            times = [int(s.elapsed_time(m) * 1e6) for s, m in zip(starts, mids)]
            # A _drain patched to return nothing gives a malformed tail: the judge's clock decides.
            tails = ([b if isinstance(b, int) else -1 for b in blocked] if synced
                     else [int(m.elapsed_time(e) * 1e6) for m, e in zip(mids, ends)])
        else:
            tails = [0] * len(times)
        if per_call:
            return ("done", times, outs, tails)
        sent, bad = self._send_outputs(outs)
        return bad or ("done", times, sent, tails)

    def profile(self, opts):
        """Untimed profiler pass over the prepared sets: op/kernel names, and the outputs (checked too)."""
        from . import profiling  # here: the child imports torch only once it is pinned (main)
        outs = []
        if self.recorder is not None and self.recorder.on:
            self.recorder.stop()  # torch's profiler takes CUPTI over; the next timed batch takes it back
            self.recorder.take()
        with profiling.session(self.device) as prof:
            for args in self.sets:
                outs.append(self.fn(*args))
            self._sync()
        sent, bad = self._send_outputs(outs)
        return bad or ("profile", profiling.events(prof, self.device), len(self.sets), sent)


def _normalise(r, args):
    """Outputs as a list, or the reason they cannot be sent. The aliasing check
    here is a courtesy (a clear message for an honest mistake); what aliasing
    could buy -- a mutated read-only input, late writes -- the judge checks on
    its own copies."""
    import torch
    from .arena import overlap, span
    if r is None:
        return [], None
    items = list(r) if isinstance(r, (tuple, list)) else [r]
    for j, t in enumerate(items):
        if type(t) is not torch.Tensor:
            return None, "output %d is a %s, not exactly torch.Tensor (subclasses and lazy results are refused)" % (j, type(t).__name__)
    in_spans = [span(a) for a in args if isinstance(a, torch.Tensor)]
    out_spans = [span(t) for t in items]
    for j, sp in enumerate(out_spans):
        for k, isp in enumerate(in_spans):
            if overlap(sp, isp):
                return None, "output %d shares memory with input %d (aliasing is refused)" % (j, k)
        for k in range(j):
            if overlap(sp, out_spans[k]):
                return None, "outputs %d and %d share memory (aliasing is refused)" % (k, j)
    return items, None


def _driver_sync():
    """The CUDA driver's cuCtxSynchronize for the current context (torch's, set up by now),
    as a ctypes function returning its CUresult, once it has answered 0; else None."""
    try:
        fn = ctypes.CDLL("libcuda.so.1").cuCtxSynchronize
    except (OSError, AttributeError):
        return None
    fn.restype, fn.argtypes = ctypes.c_int, []
    return fn if fn() == 0 else None


def _trivial_factory(out_specs, device, sleep_cycles=0):
    """The judge-owned stand-in used to measure the harness's own per-call cost; with
    sleep_cycles (a GPU) it first keeps the device busy that long (timing.TailFloors)."""
    import torch

    specs = [(tuple(s), getattr(torch, d)) for s, d in out_specs]

    def trivial(*args):
        if sleep_cycles > 0:
            torch.cuda._sleep(sleep_cycles)
        return tuple(torch.empty(s, dtype=d, device=device) for s, d in specs)
    return trivial


def main():
    fd = int(sys.argv[1])
    cpu = os.environ.pop("KZOO_CHILD_CPU", None)
    if cpu is not None:
        # Before torch is imported, so its thread pools size themselves to this one
        # CPU: both children of an A/B run time on the same CPU (spawn.timing_cpu).
        os.sched_setaffinity(0, {int(cpu)})
    sys.stdout = sys.stderr  # fd 1 is already the judge's stderr; keep Python's view the same
    # torch's profiler (the gates' profiler pass) must leave CUPTI attached when it stops: the
    # device records of the next case's timed calls (spans.Recorder) go through it.
    os.environ["TEARDOWN_CUPTI"] = "0"
    notes = _harden()
    import torch.multiprocessing as tmp
    from multiprocessing.connection import Connection
    from multiprocessing.reduction import ForkingPickler
    tmp.set_sharing_strategy("file_system")
    defer_cuda = os.environ.pop("KZOO_CHILD_DEFER_CUDA", None) == "1"
    if os.environ.get("KZOO_DEVICE") == "cuda":
        # The CUDA context comes up now, while the judge may still be importing torch (the
        # first child starts before it: spawn.py), not after its "setup" arrives -- unless the
        # judge defers it to "setup" (a child started long before its turn: spawn.early).
        # Nothing submitted is loaded before "load".
        import torch
        if not defer_cuda:
            try:
                torch.cuda.init()
                torch.cuda.synchronize()  # the context itself, not only the runtime
            except Exception:  # noqa: BLE001 - "setup" tries again and says what failed
                pass
    conn = Connection(fd)
    h = Harness(conn)
    if notes:
        print("kzoo child: hardening: %s" % "; ".join(notes), file=sys.stderr)
    while True:
        if h.spin_next:
            h.spin_next = False
            spin_until(fd, _clock() + int(SPIN_S * 1e9))  # then sleep as usual
        try:
            msg = ForkingPickler.loads(conn.recv_bytes())
        except EOFError:
            return 0
        op, args = msg[0], msg[1:]
        try:
            if op == "exit":
                return 0
            reply = {
                "setup": h.setup, "load": h.load, "arena": h.arena, "prepare": h.prepare, "go": h.go, "profile": h.profile,
                "spans": h.spans,
            }[op](*args)
        except BaseException as e:  # noqa: BLE001 - reported to the judge as text
            if isinstance(e, KeyboardInterrupt):
                raise
            reply = ("error", "".join(traceback.format_exception(type(e), e, e.__traceback__))[-4000:])
        try:
            data = ForkingPickler.dumps(reply)
        except Exception as e:  # noqa: BLE001 - an unsendable output is the submission's fault
            data = ForkingPickler.dumps(("error", "the child could not send its reply: %s: %s" % (type(e).__name__, e)))
        conn.send_bytes(data)


if __name__ == "__main__":
    sys.exit(main())
