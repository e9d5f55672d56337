"""The judge: correctness trials, timed batches, gates, one benchmark document.

This process holds the secret, makes every input, runs the reference and
decides. It never imports submitted code: that runs in the child
(channel.Child), which only ever sees input tensors in shared memory and
hands back output tensors, which the judge reads while the child is frozen.
"""

import math
import os
import sys
import time

import torch

from . import ab, arena, bell, channel, compare, compare_fused, draw_fused, dtypes, freezer, gates, inputs, profiling, reference, spawn, spin, task, timing
from .arena import overlap, span
from .channel import Child, ChildFailure


def log(*a):
    print("kzoo-judge:", *a, file=sys.stderr, flush=True)


class CaseFailure(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _flag(raw, key, default):
    """A KZOO_OPTIONS switch: JSON true or false (a string "false" is not taken for true)."""
    v = raw.get(key, default)
    if not isinstance(v, bool):
        raise ValueError("KZOO_OPTIONS: %s is true or false (JSON), not %r" % (key, v))
    return v


class Options:
    def __init__(self, raw=None, device="cpu"):
        raw = raw or {}
        self.iterations = int(raw.get("iterations", 100))
        self.warmup = int(raw.get("warmup", 10))
        self.trials = int(raw.get("trials", 5))
        self.cases = raw.get("cases")
        self.batch = raw.get("batch")
        self.call_timeout_s = float(raw.get("call_timeout_s", 120.0))
        self.load_timeout_s = float(raw.get("load_timeout_s", 600.0))
        self.grace_ms = float(raw.get("grace_ms", 2.0 if device == "cpu" else 5.0))
        # Added to a batch's deadline for first-call costs (CUDA init, JIT compiles).
        self.batch_slack_s = float(raw.get("batch_slack_s", 30.0))
        # A/B: the incumbent's source folder (W/.kzoo/incumbent/src), timed
        # side by side with the submission (ab.py). None: the submission alone.
        self.incumbent_src = raw.get("incumbent_src") or None
        # GPU: the device is kept busy this long before each timed call's start event
        # (child.Harness._pad), so the host's launch overlaps it (docs/JUDGE.md, "The launch pad").
        self.pad_us = float(raw.get("pad_us", 1000.0))
        # GPU, paced calls: before that, outside the judge's clock, the device is kept busy
        # this long after the L2 flush, so the SM clock is back up after the hand-over's idle
        # time when the call starts (child.Harness.go; docs/JUDGE.md, "The warm-up").
        self.warm_us = float(raw.get("warm_us", 2000.0))
        # GPU: what a call's tail is (timing.window_ns; docs/JUDGE.md, "The window's tail").
        # "events": the GPU's time from an event at the call's stream end to one recorded after
        # the device sync, the host's round trip between them included. "sync": the host's time
        # the device sync itself blocked once the stream's end was seen, which is what work
        # left on another stream adds, without the Python around it (the driver's own sync:
        # child.Harness._drain). On an H200 the stream windows alone were within 0.8% of Nsight
        # Compute in every case read, and the events' tail carried stretches of a slower host
        # into figures 3-14% high (docs/GPU.md, sessions 19 and 20).
        self.tail = raw.get("tail", "sync")
        if self.tail not in ("events", "sync"):
            raise ValueError("KZOO_OPTIONS: tail is \"events\" or \"sync\", not %r" % (self.tail,))
        # GPU: what a timed call's figure is (docs/JUDGE.md, "The device span"). "span": the
        # device's own records of the call's work, first start to last end on every stream
        # (spans.py), where every child of the run can read them; "window": the CUDA events'
        # stream window plus the tail's charge over calibrated floors (timing.window_ns).
        self.figure = raw.get("figure", "span")
        if self.figure not in ("span", "window"):
            raise ValueError("KZOO_OPTIONS: figure is \"span\" or \"window\", not %r" % (self.figure,))
        # Log every timed call's figures (stream, tail, the judge's clock): a diagnostic.
        self.trace = _flag(raw, "trace", False)
        # Profile the judge's own Python (cProfile) and log its busiest functions at the end:
        # a diagnostic of where a verdict's seconds go (docs/JUDGE.md).
        self.profile = _flag(raw, "profile", False)
        # The share of timed calls whose outputs are compared with the reference, chosen by the
        # secret after the calls ran (never fewer than min_checked per case): every call is
        # timed, checked for structure and aliasing, and its outputs copied out, but only the
        # judge knows which ones it compares. Why: on a GPU the reference and the float64
        # comparison of a graded output cost 10-100x the call itself (a default grade took
        # 67 s, 26 of them in checks), while moving a median takes wrong outputs in more than
        # half the calls, which min_checked random checks miss with odds under 2^-min_checked.
        self.check_share = float(raw.get("check_share", 1.0 if device == "cpu" else 0.1))
        self.min_checked = int(raw.get("min_checked", 10))
        # GPU: two 16-bit outputs compared by one kernel over their bytes (compare_fused.py) in
        # place of compare.py's torch path for them: the same figures and decisions from one pass
        # (6.3x at 0.5 G elements on the H200, session 29; docs/PERF.md).
        self.fused_compare = _flag(raw, "fused_compare", True)
        # GPU: floating input sets drawn by one kernel (draw_fused.py) in place of inputs.py's three
        # torch kernels: the same law, the kernel's own values (1.7-1.9x a 1 GiB set on the H200).
        self.fused_draw = _flag(raw, "fused_draw", True)
        # The board's elementwise guardrail (scienceslack.json), when the worker passes it.
        self.atol = None if raw.get("atol") is None else float(raw["atol"])
        self.rtol = None if raw.get("rtol") is None else float(raw["rtol"])
        if self.iterations < 1 or self.warmup < 0 or self.trials < 1:
            raise ValueError("KZOO_OPTIONS: iterations >= 1, warmup >= 0, trials >= 1")
        if not 0.0 < self.check_share <= 1.0 or self.min_checked < 1:
            raise ValueError("KZOO_OPTIONS: 0 < check_share <= 1, min_checked >= 1")


Case = task.Case  # read with the task (no torch there): the build step needs it too


def elementwise_bound(cases, options):
    """(atol, rtol) every compared call is held to, or None. The cases' own (their metas'
    correctness_atol / correctness_rtol, written with the task and calibrated with it: an fp8
    output is one rounding step, 0.125, from the reference) win over the options' (the board's
    rules, passed by the worker); among cases the strictest. Correctness trials serve every
    case of a workload, so one bound holds for the run."""
    declared_a = [c.atol for c in cases if c.atol is not None]
    declared_r = [c.rtol for c in cases if c.rtol is not None]
    atol = min(declared_a) if declared_a else options.atol
    rtol = min(declared_r) if declared_r else options.rtol
    if atol is None and rtol is None:
        return None
    atol, rtol = float(atol or 0.0), float(rtol or 0.0)
    if atol <= 0 and rtol <= 0:
        return None  # "exactly equal" is the exact comparator's job, not a bound's
    return atol, rtol


def _bits_equal(a, b):
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    va = a.contiguous().reshape(-1).view(torch.uint8) if a.dtype != torch.bool else a.reshape(-1).to(torch.uint8)
    vb = b.contiguous().reshape(-1).view(torch.uint8) if b.dtype != torch.bool else b.reshape(-1).to(torch.uint8)
    return bool(torch.equal(va, vb))


class Judge:
    def __init__(self, task, secret, device, module_path, src_dir, options, device_class, l2_bytes,
                 kernel_id="local", runner_id="local", device_class_name=None, provenance=None, early=None):
        self.task = task
        self.early = early  # spawn.Pool: children started ahead of their turn (entry.py kills those untaken)
        self.secret = secret
        self.device = device
        self.module_path = module_path
        self.src_dir = src_dir
        self.opt = options
        self.device_class = device_class
        self.device_class_name = device_class_name
        self.provenance = provenance
        self.bound = None  # (atol, rtol) of every compared call (elementwise_bound), set by run()
        self.l2_bytes = l2_bytes
        self.kernel_id = kernel_id
        self.runner_id = runner_id
        self.ref = reference.load(task)
        self.specs = reference.expected_specs(task)
        self.child = None
        self.overheads = {}
        self.build_error = None
        self.retried = 0  # timed batches (or A/B pairs) re-run because the clocks disagreed
        self.phases = timing.Phases(torch.cuda.synchronize if device == "cuda" else None)
        # Each judge sets the comparison it uses (compare.py keeps it module-wide): the fused one
        # only on a GPU and when asked for (Options.fused_compare).
        compare.use_fused(compare_fused.Lazy(log) if device == "cuda" and options.fused_compare else None)
        inputs.use_fused(draw_fused.Lazy(log) if device == "cuda" and options.fused_draw else None)
        self.calls_phase = "child batches"  # where the judge's clock over the child's calls is counted
        # Judge and child spin-wait for each other around each timed call (the doorbell,
        # bell.py) when each has a CPU to spin on: on the CPU the judge keeps off the timing
        # CPU (channel.keep_off_timing_cpu); on a GPU any two CPUs do. Why on a GPU too: through
        # the pipe the judge's clock held two pickled crossings and two wake-ups per call, and
        # honest 500 us calls read 0.59-0.83 of it and were flagged (shared/gpu-runs, main 9c5f355).
        if device == "cpu":
            self.spin_s = spin.SPIN_S if channel.keep_off_timing_cpu() else 0.0
        else:
            self.spin_s = spin.SPIN_S if len(os.sched_getaffinity(0)) >= 2 else 0.0
        self.ab = ab.Incumbent(self, options.incumbent_src) if options.incumbent_src else None
        # Containment (freezer.py): the judge adopts the orphans of its descendants, and its own
        # helpers -- torch's shared-memory manager, started now by a first shared tensor -- are
        # named before any child exists, so that every later stranger can be stopped.
        freezer.become_subreaper()
        import torch.multiprocessing as tmp
        tmp.set_sharing_strategy("file_system")  # the children's strategy (channel.Child): its manager
        self._shared_probe = bell.new()
        self.freezer = freezer.Freezer()
        # The early child (spawn.Early) is one of the judged, not a helper.
        self.freezer.adopt_helpers(sides=sorted(freezer.SPAWNED))
        self.quiet_us = None  # GPU: the probe's time on an idle device (_await_quiet_device)
        self._ref_names = {}  # workload -> the reference's profiled op and kernel names (profile)
        # A/B: the last verified batch's (pristine inputs, expected outputs) by (shape, seed), for
        # the other side of its pair (_verify_batch)
        self._pair_refs = {}

    # --- the child -----------------------------------------------------------
    def _start_child(self, cases, timed=True):
        """The submission's child, up and loaded. timed=False: a child that will time nothing (an
        A/B run's correctness trials: the submission is timed in a fresh child, run()) is not
        calibrated; that calibration was ~1 s of every A/B job on an H200, never read."""
        # The incumbent is imported first, before any submitted code runs, so
        # the submission cannot touch it on its way in.
        # The submission's child is spawned first and comes up (torch, CUDA: seconds) while the
        # incumbent's is spawned and loaded; it loads nothing submitted until after that.
        early = self.early.take(self.src_dir, self.device) if self.early is not None else None
        fresh = Child(self.src_dir, self.device, self.l2_bytes, wait=False, spawned=early)
        try:
            if self.ab is not None:
                self.ab.ensure(cases, starting=[fresh])
            if self.early is not None:
                # an incumbent's child that ab did not take must not linger; the submission's
                # timing child waits for its turn (spawn.early)
                self.early.kill(keep=self.src_dir)
            fresh.finish_setup()
        except BaseException:
            fresh.kill()
            raise
        self.child = fresh
        if timed:
            self._calibrate(self.child, cases, self.overheads)
        r = self.child.request(("load", self.module_path, self.task.entry_point, self.src_dir), self.opt.load_timeout_s)
        if r[0] != "ok":
            self.build_error = "importing the submission failed: %s" % (r[1],)
            raise CaseFailure("error", self.build_error)

    def _calibrate(self, child, cases, overheads):
        """The harness's own cost, measured with judge-owned code BEFORE the
        module is imported (it cannot have patched anything yet)."""
        before, self.calls_phase = self.calls_phase, "calibration calls"
        try:
            self._calibrate_cases(child, cases, overheads)
        finally:
            self.calls_phase = before

    def _calibrate_cases(self, child, cases, overheads):
        for case in cases:
            dims = self.timing_dims(case)[0]
            key = self._dims_key(dims)
            if key in overheads and key in child.tail_floors:
                continue
            out_specs = [(list(s), str(dtypes.torch_dtype(sp.dtype)).replace("torch.", ""))
                         for s, sp in zip(self.task.output_shapes(dims), self.task.outputs)
                         if sp.name not in self.task.in_place]
            samples, tails = [], []
            trivial = {"out_specs": out_specs, "flush": True, "pad_us": self.opt.pad_us, "warm_us": self.opt.warm_us,
                       "tail": self.opt.tail, "trace": self.opt.trace}
            out_slot = self._arena_bytes(dims, 1)[1]
            # Each trivial call gets an input set of the shape's tensors, as a timed call does: the
            # protocol measured is the timed calls' own (the inputs handed over, the outputs checked
            # against them before the copy the judge's clock covers). It is not the whole of what
            # the overhead misses: on an H200 the copy after an honest paged-decode call still took
            # 329 us against 152 after these calls (docs/GPU.md, session 20).
            make_set = self._fresh_sets(dims, key, "overhead")
            for _ in range(3):
                for n in timing.CALIBRATION_SIZES:
                    # The same protocol as a timed batch: the harness's cost is what is measured.
                    self._arenas(child, dims, n)
                    try:
                        if self._paced():
                            _, stream, t, _, wall = self._one_by_one(child, n, make_set, out_slot, "trivial", trivial)
                        else:
                            stream, t, _, wall = self._all_at_once(child, [make_set(k) for k in range(n)], "trivial", dims, trivial)
                    except CaseFailure as e:
                        raise ChildFailure("protocol", "harness calibration failed: %s" % e)
                    # less the calls' device-wide windows, as the cross-check counts them (timing.checked_ns)
                    samples.append((n, wall - sum(timing.checked_ns(stream, t))))
                    tails += t
                    if self.opt.trace:
                        log("trace: calibration, trivial batch of %d: harness %.1f us/call (wall %.1f us/call)"
                            % (n, samples[-1][1] / n / 1e3, wall / n / 1e3))
            # The window's floor: the least gap between a call's stream end and the device's
            # end when nothing else runs (timing.window_ns). The least, so that hidden work
            # can only ever lengthen a figure.
            self._check_tails(tails)
            floors = timing.TailFloors()
            floors.add([0] * len(tails), tails)
            if self.device == "cuda" and child.sleep_rate > 0 and not self._spans_own(child):
                # The floors by call length serve the events' window only: a child timed by
                # spans reads side-stream work in the device's records (~0.5 s a child saved).
                if child.level_floors is None:
                    child.level_floors = timing.TailFloors()
                    self._calibrate_floors(child, dims, key, trivial, out_slot, child.level_floors, make_set)
                floors.levels = sorted(floors.levels + child.level_floors.levels)
                log("window tail floors by call length (least stream: least tail, us): %r" % floors)
            child.tail_floors[key] = floors  # per child: a restarted child is calibrated again
            # The least of three repeats at each size: noise only ever adds time.
            best = {}
            for n, w in samples:
                best[n] = min(best.get(n, w), w)
            overheads.setdefault(key, timing.Overhead.fit(sorted(best.items())))

    def _spans_own(self, child):
        """Whether `child` is timed by device spans as far as it alone goes (Options.figure, its
        setup's self-test: child.Harness._spans_self_test)."""
        return self.device == "cuda" and self.opt.figure == "span" and bool(getattr(child, "spans_ok", False))

    def _use_spans(self, chosen):
        """Whether `chosen`'s calls are timed by device spans now: only when every live child of
        the run can be, so that both sides of an A/B run are timed the same way."""
        kids = [chosen, self.child] + ([self.ab.child] if self.ab is not None else [])
        return all(self._spans_own(c) for c in kids if c is not None)

    def _read_spans(self, chosen, n):
        """The device span of each of the last batch's n calls (child.Harness.spans), -1 where
        the records cannot say; a malformed reply is all -1 (each call then gets its device-wide
        window, which can only read high)."""
        r = chosen.request(("spans",), 60)
        ok = (isinstance(r, tuple) and len(r) == 2 and r[0] == "spans" and isinstance(r[1], list) and len(r[1]) == n
              and all(isinstance(x, int) and not isinstance(x, bool) for x in r[1]))
        if not ok:
            log("the child's device spans were malformed; its calls are timed by their device-wide windows")
            return [-1] * n
        return list(r[1])

    def _floors(self, key):
        """The tail floors a timed call of shape `key` is charged against: every live child's
        calibration at that shape merged (timing.TailFloors.merged), so that both sides of an A/B
        run are held to the same floors. Why: each child's own floors differed with the moment
        it was calibrated, and the side with the higher ones was charged less."""
        children = [self.child] + ([self.ab.child] if self.ab is not None and self.ab.child is not None else [])
        return timing.TailFloors.merged([c.tail_floors[key] for c in children if c is not None and key in c.tail_floors])

    def _fresh_sets(self, dims, key, label):
        """make_set(k) for judge-owned calls of a shape: one input set drawn for its shapes and
        dtypes, and each call new tensors like it. Fresh allocations, not fresh values: a trivial
        call never reads its inputs, and drawing a set a call (3.6 ms each for softmax's 1.07 GB,
        scripts/gpu/inputs_probe.py) cost 0.5 s of every GPU grade."""
        with self.phases("inputs"):
            template = inputs.make_inputs(self.task, dims, self.secret.derive(label, key), self.device)

        def make_set(k):
            with self.phases("inputs"):
                return [torch.empty_like(t) for t in template]
        return make_set

    def _calibrate_floors(self, child, dims, key, trivial, out_slot, floors, make_set=None):
        """The tail floors after judge-owned calls that keep the device busy as long as graded
        calls do (timing.TailFloors), each made like a timed call: a fresh input set allocated
        by the judge just before it, handed over, then the call. Once a child, at its first
        calibrated shape, not once a shape: a tail runs from the call's stream end to the device's
        end after the drain, harness work that reads none of the shape's tensors, and the levels'
        ~0.4 s of spinning a shape (on an H200 0.65 s with their protocol) was 1.3 s of a
        three-shape grade and ~4 s of an A/B job. Every shape is still calibrated before the
        submission is imported; its trivial level (the overhead's calls) stays its own.
        Each call's inputs come from `make_set` (the trivial level's, when given; else
        _fresh_sets of its own)."""
        if make_set is None:
            make_set = self._fresh_sets(dims, key, "floor")
        for level in timing.FLOOR_LEVELS_US:
            opts = dict(trivial, sleep_cycles=int(level * child.sleep_rate))
            try:
                _, stream, tails, _, wall = self._one_by_one(child, timing.FLOOR_CALLS, make_set, out_slot, "trivial", opts)
            except CaseFailure as e:
                raise ChildFailure("protocol", "harness calibration failed: %s" % e)
            self._check_tails(tails)
            if self.opt.trace:
                # The harness's cost beside calls that keep the device busy (the trivial level's
                # calls do not): what the cross-check's overhead, fitted on those, leaves out.
                log("trace: calibration, level %d us: harness %.1f us/call (wall %.1f, stream %.1f us/call)"
                    % (level, (wall - sum(timing.checked_ns(stream, tails))) / len(tails) / 1e3,
                       wall / len(tails) / 1e3, sum(stream) / len(stream) / 1e3))
            floors.add(stream, tails)

    @staticmethod
    def _check_tails(tails):
        if any(not isinstance(t, int) or t < 0 for t in tails):
            raise ChildFailure("protocol", "harness calibration sent malformed tails")

    def _ensure_child(self, cases, timed=True):
        if timed and self.child is not None and not self.child.tail_floors:
            # Never calibrated (_start_child(timed=False)), and with the submission loaded it
            # cannot be any more: a fresh child times it.
            self._drop_child()
        if self.child is None or self.child.proc.poll() is not None:
            if self.child is not None:
                self.child.kill()
            self._start_child(cases, timed)

    def _start_standby(self):
        """A/B: the submission is timed in a fresh child after its correctness trials (run());
        that child is started now, so that its interpreter, torch import and CUDA context come
        up while the trials run (when entry.py did not start it already, with the others).
        Started after them, they were ~3.9 s of an A/B job on an H200 (docs/GPU.md, session 17).
        It loads nothing until it is taken (_start_child), and is killed untaken when the trials
        fail (_drop_all)."""
        if self.ab is None or not self.ab.usable():
            return
        if self.early is None:
            self.early = spawn.Pool(self.device)
        if not self.early.waiting(self.src_dir):  # entry.py started none (spawn.early)
            self.early.start(self.src_dir)

    def _drop_child(self):
        if self.child is not None:
            self.child.kill()
            self.child = None

    def _drop_all(self):
        self._drop_child()
        if self.early is not None:
            self.early.kill()
        if self.ab is not None:
            self.ab.drop()
        self.freezer.kill_all()  # whatever the children left behind (freezer.py)

    @staticmethod
    def _dims_key(dims):
        import json
        return json.dumps(dims, sort_keys=True)

    # --- shapes ----------------------------------------------------------------
    def timing_dims(self, case):
        """(dims timed, note): the graded shape on a GPU; on the CPU a measure shape."""
        if self.device != "cpu":
            return case.dims, ""
        _, w = self.task.workload(case.workload)
        measure = [self.task.bind(w, s) for s in w.get("measure", [])]
        if measure:
            d = measure[min(case.graded_index, len(measure) - 1)]
            return d, "timed on the CPU at measure shape %s, not the graded shape" % self._dims_key(d)
        corr = [self.task.bind(w, s) for s in w.get("correctness", [])]
        d = max(corr, key=self.task.work)
        return d, "timed on the CPU at correctness shape %s (no measure shapes), not the graded shape" % self._dims_key(d)

    # --- one batch -------------------------------------------------------------
    def _batch(self, dims, labels, mode, record, child=None, lenient=None, checked=None):
        """Run one batch of input sets in `child` (default: the submission's); verify every output
        for structure and aliasing, and compare those of the calls in `checked` (indices into the
        batch; None: all) with the reference. Returns (child_ns, wall_ns). With `lenient` (a
        list), an incorrect output found after the batch ran is appended to it instead of raised,
        so the batch's times still count (A/B: the incumbent's correctness is reported, not
        required)."""
        chosen = child or self.child
        seeds = [self.secret.derive(*lab) for lab in labels]
        in_arena, out_arena = self._arenas(chosen, dims, len(seeds))
        in_slot, out_slot = self._arena_bytes(dims, 1)

        def make_set(k):
            if in_arena is None:
                with self.phases("inputs"):
                    return inputs.make_inputs(self.task, dims, seeds[k], self.device)
            # Each set starts at its own page offset (from its seed): where the inputs sit
            # relative to the outputs the child allocates (4K aliasing, cache sets) then
            # varies from call to call instead of favouring one child for a whole run. The set
            # is made in its slots, not made aside and copied in (the CPU's input arena: a GPU
            # has none, its sets cross as CUDA IPC tensors).
            slots, _ = arena.slots(in_arena, inputs.layout(self.task, dims),
                                   k * in_slot + (seeds[k] % (4096 // arena.ALIGN)) * arena.ALIGN)
            with self.phases("inputs"):
                return inputs.make_inputs(self.task, dims, seeds[k], self.device, out=slots)

        # Every other process of the run is stopped while this child runs (freezer.py): the other
        # side of an A/B run, and anything that left its process group or was orphaned.
        # The containment's own time and the spans' reading are phases of their own, to tell where
        # the 2.5-3.3 s an A/B job's judge could not place goes (docs/GPU.md, session 25).
        with self.phases("containment"):
            frozen = self.freezer.freeze(keep=chosen.pid)
        try:
            with self.phases("containment"):
                if self.device == "cuda":
                    self._refuse_foreign_contexts(chosen)
                if mode == "timed" and self.device == "cuda":
                    self._await_quiet_device(chosen)
            spans = None
            if mode == "timed" and self._paced():
                sets, stream, tails, outs, wall = self._one_by_one(chosen, len(seeds), make_set, out_slot, keep=checked)
                if self._use_spans(chosen):
                    with self.phases("device spans"):
                        spans = self._read_spans(chosen, len(seeds))
            else:
                sets = [make_set(k) for k in range(len(seeds))]
                stream, tails, outs, wall = self._all_at_once(chosen, sets, mode, dims)
        except BaseException:
            self.freezer.thaw(frozen)
            raise
        if mode == "timed":
            self.phases.note("of which timed calls (child's figures)", sum(stream) / 1e9)
            if spans is not None:
                child_ns = timing.span_figures(spans, stream, tails)
            else:
                child_ns = timing.window_ns(stream, tails, self._floors(self._dims_key(dims)))
            check_ns = timing.checked_ns(stream, tails)
            if self.opt.trace:
                log("trace: stream %s us; tails %s us%s" % (
                    ["%.1f" % (x / 1e3) for x in stream], ["%.1f" % (x / 1e3) for x in tails],
                    "" if spans is None else "; spans %s us" % ["%.1f" % (x / 1e3) for x in spans]))
        else:
            child_ns, check_ns = stream, None  # the profiler pass: (events, calls)
        if out_arena is not None:
            # timed (paced) calls: the copies the judge took as each call ended (_one_by_one)
            outs = self._unpack_outputs(chosen.out_shadow if mode == "timed" and self._paced() else out_arena, outs)
        # The outputs are read with the whole run stopped, the timed child too.
        with self.phases("containment"):
            frozen |= self.freezer.freeze(keep=None)
        t_checks = time.perf_counter_ns()
        try:
            with self.phases("checks"):
                self._verify_batch(dims, seeds, sets, outs, labels, record, checked)
            if self.opt.trace and mode == "timed":
                # Which batches were followed by the reference and the comparison on the device:
                # to read the next batch's figures against the judge's own work before it.
                log("trace: t=%.3f checks: %s of %d calls compared, %.1f ms" % (
                    time.time(), len(seeds) if checked is None else len(checked), len(seeds),
                    (time.perf_counter_ns() - t_checks) / 1e6))
        except CaseFailure as e:
            if lenient is None or e.status != "incorrect":
                raise
            lenient.append(str(e))
        finally:
            with self.phases("containment"):
                self.freezer.thaw(frozen)
        return child_ns, wall, check_ns

    # GPU: how long the device may stay busy with work the judge did not start, every other
    # process of the run stopped, before a timed batch gives up on it.
    QUIET_WAIT_S = 5.0

    def _refuse_foreign_contexts(self, chosen):
        """Before a batch of `chosen` on a GPU: a process of the run, other than the children
        the judge judges, that holds a CUDA context of its own (freezer.gpu_holders) fails the
        side it belongs to. Its kernels outlive its stop and time-slice with the calls being
        timed (freezer.py says what it did on the H200). Each side answers for its own tree at
        its own batches, so that a submission's helper can never fail the incumbent: an orphan
        (re-parented to the judge) is counted as the submission's."""
        held = self.freezer.gpu_holders()
        if not held:
            return
        inc = self.ab.child if self.ab is not None else None
        inc_tree = freezer.descendants(inc.pid, freezer.children_map()) if inc is not None else set()
        mine = {p: v for p, v in held.items() if (p in inc_tree) == (chosen is inc)}
        if not mine:
            return
        pid, (dev, cmd) = sorted(mine.items())[0]
        side = "the incumbent's" if chosen is inc else "the submission's"
        raise CaseFailure("error", "process %d of %s run (%s) holds a CUDA context of its own (it maps %s): only the "
                          "judged process may use the GPU. Stopping a helper does not stop the kernels it queued, and "
                          "they would run inside the other side's timed calls; do the GPU work in the submitted "
                          "function itself" % (pid, side, cmd or "?", dev))

    def _probe_us(self):
        """The least of three launch-to-completion times of a judge-owned one-element kernel.
        On an idle device tens of microseconds; while another context has work resident the
        device time-slices between contexts and the probe waits for its turn."""
        if not hasattr(self, "_probe_buf"):
            self._probe_buf = torch.zeros(1, device="cuda")
        best = math.inf
        for _ in range(3):
            t0 = time.perf_counter_ns()
            self._probe_buf.add_(1)
            torch.cuda.synchronize()
            best = min(best, (time.perf_counter_ns() - t0) / 1e3)
        return best

    def _await_quiet_device(self, chosen):
        """Before a timed GPU batch, with everyone but `chosen` stopped: wait until no other
        context keeps the device busy. Stopped processes cannot launch, but kernels they queued
        before they stopped run on, and would slow whichever side is timed now (issue 10's
        saboteur). A device that stays busy for QUIET_WAIT_S fails the case, saying why."""
        torch.cuda.synchronize()  # the judge's own work (the last batch's checks) is not a stranger's
        limit = max(10 * (self.quiet_us or 30.0), 300.0)
        deadline = time.monotonic() + self.QUIET_WAIT_S
        waited = 0
        while True:
            us = self._probe_us()
            if us <= limit:
                if waited:
                    log("the device was busy with work the judge did not start; quiet after %d probes" % waited)
                return
            waited += 1
            if time.monotonic() > deadline:
                side = "the incumbent" if self.ab is not None and chosen is self.ab.child else "the submission"
                raise CaseFailure("error", "the GPU stayed busy for %.0f s with work the judge did not start while every "
                                  "process but %s's was stopped (a probe kernel took %.0f us, %.0f us when idle): a "
                                  "helper process or kernels left running keep the device from being timed fairly"
                                  % (self.QUIET_WAIT_S, side, us, self.quiet_us))
            time.sleep(0.01)

    def _paced(self):
        """Timed batches are handed over one input set per call (_one_by_one), on both devices.
        A method so that a diagnostic can hand them over whole (scripts/gpu/judge_variants.py)."""
        return True

    def _one_by_one(self, chosen, n, make_set, out_slot, go="submission", opts=None, keep=None):
        """A timed batch, paced by the judge: one input set per "go", made just before its call,
        so the child never holds a later call's inputs. Why: holding the whole batch, one call
        could compute the batch's outputs and the others return them at once (the median then
        fell to the light calls), or a thread on another CPU could compute ahead while the
        current call ran. The output slot of each call in `keep` (None: all) is copied into the
        judge's shadow the moment the call is over. Returns (sets, stream ns, tail ns, outputs,
        the judge's clock), per call."""
        opts = opts or {"poison": 0, "flush": True, "pad_us": self.opt.pad_us, "warm_us": self.opt.warm_us, "tail": self.opt.tail,
                        "trace": self.opt.trace}
        sets, stream, tails, outs, wall = [], [], [], [], 0
        spin = self.spin_s
        cpu = self.device == "cpu"
        # Timed by device spans, each call is marked on the device (child.Harness.go) -- the
        # calibration's calls too, so that the harness's cost measured is the timed calls' own.
        spans = not cpu and self._use_spans(chosen)
        for k in range(n):
            st = make_set(k)
            chosen.request(("prepare", [st], {"spin": spin > 0}), 120)
            if not cpu:
                torch.cuda.synchronize()
            msg = ("go", go, dict(opts, out_offset=k * out_slot, spans=spans, span_first=k == 0))
            slot = slice(k * out_slot, (k + 1) * out_slot) if keep is None or k in keep else None
            if spin > 0 and chosen.bell is not None:
                r, clock = self._rung_call(chosen, msg, slot)
            else:
                t0 = time.perf_counter_ns()
                r = self._go(chosen, msg, 1, spin)
                clock = chosen.arrived_ns - t0
                self.phases.add(self.calls_phase, (time.perf_counter_ns() - t0) / 1e9)
                self._copy_slot(chosen, slot)
            wall += clock
            r = self._checked_reply(r, 1, k)
            sets.append(st)
            stream += r[1]
            outs += r[2]
            tails += r[3]
        return sets, stream, tails, outs, wall

    @staticmethod
    def _copy_slot(chosen, slot):
        """One call's output slot, copied out of the shared arena into the judge's shadow the
        moment the call is over; what the child writes into the arena later is never read. On
        a GPU the copy is the judge's own device work, queued now and finished before the next
        call starts (the judge synchronises before every "go")."""
        if slot is not None and chosen.out_shadow is not None:
            chosen.out_shadow[slot].copy_(chosen.out_arena[slot])

    def _rung_call(self, chosen, msg, slot):
        """One paced call started and ended through the doorbell (bell.py); its output slot
        copied the moment the child says "done", before the reply is read. Returns (the child's
        reply, the judge's clock)."""
        chosen.bell_seq += 1
        seq = chosen.bell_seq
        msg[2]["bell"] = seq
        start = time.perf_counter_ns()
        deadline = start + int((self.opt.call_timeout_s + self.opt.batch_slack_s) * 1e9)
        chosen.send(msg)
        fd = chosen.conn.fileno()
        armed = chosen.bell.wait_armed(seq, deadline, fd)
        t0 = time.perf_counter_ns()
        finished = False
        if armed:
            chosen.bell.ring(seq)
            finished = chosen.bell.wait_done(seq, deadline, fd)
        t1 = time.perf_counter_ns()
        self._copy_slot(chosen, slot)
        left = max(1.0, (deadline - t1) / 1e9)
        try:
            r = chosen.recv(left, self.spin_s)
        except ChildFailure as e:
            raise CaseFailure("timeout" if e.kind == "timeout" else "error", str(e))
        self.phases.add(self.calls_phase, (time.perf_counter_ns() - start) / 1e9)
        if r[0] == "done" and not (armed and finished):
            # An honest harness always rings: a "done" without it would time nothing.
            raise CaseFailure("error", "the child broke the protocol: it answered a doorbell call without %s"
                              % ("arming" if not armed else "marking it done"))
        return r, t1 - t0

    def _all_at_once(self, chosen, sets, mode, dims, opts=None):
        """Every set in one "go" (correctness trials, the profiler pass, the GPU's timed batches).
        Returns (stream ns, tail ns, outputs, the judge's clock); the profiler pass returns
        ((events, calls), None, outputs, clock)."""
        if opts is None:
            opts = {"poison": 2 * self._set_bytes(dims) + 4096 if mode in ("call", "profile") else 0,
                    "flush": mode == "timed", "tail": self.opt.tail}
        chosen.request(("prepare", sets), 120)
        if self.device == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        go = "trivial" if mode == "trivial" else "submission"
        r = self._go(chosen, ("profile", opts) if mode == "profile" else ("go", go, opts), len(sets))
        wall = chosen.arrived_ns - t0
        self.phases.add(self.calls_phase, (time.perf_counter_ns() - t0) / 1e9)
        if mode == "profile" and r[0] == "profile" and len(r) == 4 and isinstance(r[3], list) and len(r[3]) == len(sets):
            return r[1:3], None, r[3], wall
        r = self._checked_reply(r, len(sets), 0)
        return r[1], r[3], r[2], wall

    def _go(self, chosen, msg, n, spin_s=0.0):
        chosen.send(msg)
        try:
            return chosen.recv(self.opt.call_timeout_s * n + self.opt.batch_slack_s, spin_s)
        except ChildFailure as e:
            raise CaseFailure("timeout" if e.kind == "timeout" else "error", str(e))

    def _checked_reply(self, r, n, first):
        """A "go" reply for n calls, the first of them call `first` of the batch, or the CaseFailure it means."""
        if r[0] == "raised":
            raise CaseFailure("error", "the submission raised on call %d: %s"
                              % (first + r[1], r[2].strip().splitlines()[-1] if r[2].strip() else "?"))
        if r[0] == "bad_output":
            raise CaseFailure("incorrect", "call %d: %s" % (first + r[1], self._name_indices(str(r[2]))))
        if r[0] == "error":
            raise CaseFailure("error", "the child reported: %s" % str(r[1]).strip()[-800:])
        if r[0] != "done" or len(r) != 4 or not all(isinstance(x, list) and len(x) == n for x in r[1:4]):
            raise CaseFailure("error", "the child broke the protocol: %r" % (r[0],))
        return r

    def _arenas(self, child, dims, n):
        """(input arena, output arena) of `child` for a batch of n calls: both on the CPU; on a
        GPU only the output arena (inputs cross as CUDA IPC tensors, their addresses made no
        difference to the figures: docs/PERF.md)."""
        if self.device == "cpu":
            return child.arenas(*self._arena_bytes(dims, n))
        return None, child.device_out_arena(self._arena_bytes(dims, n)[1])

    def _arena_bytes(self, dims, n):
        """(input, output) arena bytes for a batch of n calls. On the CPU the output side has
        room for four times the declared outputs, so that a wrong dtype or shape still arrives
        and is refused by the structure check with its real reason; a GPU's memory is too
        precious for that (a larger output is refused by the child's copy, with its dtype and
        shape in the message)."""
        room = 4 if self.device == "cpu" else 1
        def slots(specs, shapes):
            return sum(arena.aligned(self._tensor_bytes(sp, sh)) for sp, sh in zip(specs, shapes))
        ret = self.task.returned_outputs()
        ret_shapes = [self.task.output_shapes(dims)[self._ret_index(j)] for j in range(len(ret))]
        # + up to a page per set: the inputs' per-set page offset (_batch)
        return n * (slots(self.task.inputs, self.task.input_shapes(dims)) + 4096), n * (room * slots(ret, ret_shapes) + arena.ALIGN)

    def _unpack_outputs(self, out_arena, descs):
        """The outputs of a CPU batch as views of the judge's output arena; the child's
        descriptors are checked, never trusted."""
        if not isinstance(descs, list):
            raise CaseFailure("error", "the child broke the protocol: outputs are not a list")
        taken, outs = [], []
        for i, d in enumerate(descs):
            views, why = arena.unpack(out_arena, d, taken)
            if why:
                raise CaseFailure("incorrect", "call %d: %s" % (i, self._name_indices(why)))
            outs.append(views)
        return outs

    def _verify_batch(self, dims, seeds, sets, outs, labels, record, checked=None):
        """Every call: its outputs' structure and aliasing. The calls in `checked` (None: all):
        late writes, read-only inputs, and the outputs against the reference."""
        inplace = [self.task.input_index(n) for n in self.task.in_place]
        nret = len(self.task.returned_outputs())
        compared = [i for i in range(len(sets)) if checked is None or i in checked]
        for i, (st, o) in enumerate(zip(sets, outs)):
            if not isinstance(o, list) or len(o) != nret:
                raise CaseFailure("incorrect", "call %d returned %d outputs, the task declares %d"
                                  % (i, len(o) if isinstance(o, list) else -1, nret))
            for j, t in enumerate(o):
                why = compare.structure(t, torch.empty(tuple(self.task.output_shapes(dims)[self._ret_index(j)]),
                                                       dtype=dtypes.torch_dtype(self.task.returned_outputs()[j].dtype), device="meta"),
                                        repr(self.task.returned_outputs()[j].name), self.device)
                if why:
                    raise CaseFailure("incorrect", "call %d: %s" % (i, why))
            self._check_aliasing(i, st, o, inplace)
        if not compared:
            self._pair_refs = {}
            return
        snaps = {i: [t.clone() for t in outs[i]] + [sets[i][k].clone() for k in inplace] for i in compared}
        if self.device == "cuda":
            torch.cuda.synchronize()
        # Anything still writing after "done" (a background thread, a grandchild,
        # a kernel left running on a side stream) shows up as a change once the
        # grace has passed. The first compared call's reference and comparison run
        # during the grace instead of a sleep (they read only the snapshots): on an
        # H200 the grace (5 ms) was ~0.4 s of sleeping a grade.
        settled = time.monotonic() + self.opt.grace_ms / 1e3
        late_checked = False

        def late_writes():
            nonlocal late_checked
            late_checked = True
            left = settled - time.monotonic()
            if left > 0:
                time.sleep(left)
            for i in compared:
                live = list(outs[i]) + [sets[i][k] for k in inplace]
                for t, snap in zip(live, snaps[i]):
                    if not _bits_equal(t, snap):
                        raise CaseFailure("incorrect", "call %d: outputs changed after the child reported done "
                                          "(work finishing late, outside the timed window)" % i)
        # A/B pairs run both sides on the same labels, so the same seeds (ab.py): the second
        # side's compared calls reuse the first side's pristine inputs and expected outputs
        # instead of drawing and computing them again (the reference's 0.7 s and a share of the
        # inputs' 3 s of an A/B job on an H200). Only the last batch's are kept; nothing compares
        # against them or changes them (the read-only check reads the pristine inputs).
        shape = self._dims_key(dims) if self.ab is not None and self.ab.usable() else None
        kept = {}
        try:
            for i in compared:
                st, seed = sets[i], seeds[i]
                pair = self._pair_refs.get((shape, seed)) if shape is not None else None
                if pair is None:
                    with self.phases("inputs"):
                        pristine = inputs.make_inputs(self.task, dims, seed, self.device)
                    try:
                        with self.phases("reference"):
                            expected = reference.run(self.ref, self.task, pristine)
                    except reference.ReferenceError_ as e:
                        raise CaseFailure("error", "reference failed (a task problem, not the submission's): %s" % e)
                    pair = (pristine, expected)
                pristine, expected = pair
                if shape is not None:
                    kept[(shape, seed)] = pair
                v = compare.compare(snaps[i], expected, self.specs, self.task.comparator, self.task.tolerance,
                                    self.task.row_pass, bound=self.bound)
                # Late writes are the first verdict, and the inputs are read after the grace.
                if not late_checked:
                    late_writes()
                if self.task.read_only_inputs:
                    for k, (a, b) in enumerate(zip(st, pristine)):
                        if k not in inplace and not _bits_equal(a, b):
                            raise CaseFailure("incorrect", "call %d modified input %r, which is read-only"
                                              % (i, self.task.inputs[k].name))
                v.shape = dict(dims)
                record(v)
                if not v.ok:
                    raise CaseFailure("incorrect", "%s at shape %s: %s" % (labels[i][0] + " " + "/".join(str(x) for x in labels[i][1:]),
                                                                         self._dims_key(dims), v.reason))
        except CaseFailure:
            self._pair_refs = {}
            # Work that finished late explains a wrong snapshot better than the values do.
            if not late_checked:
                late_writes()
            raise
        self._pair_refs = kept

    @staticmethod
    def _tensor_bytes(spec, shape):
        return int(torch.Size(shape).numel()) * torch.empty((), dtype=dtypes.torch_dtype(spec.dtype)).element_size()

    def _set_bytes(self, dims):
        """Bytes of one input set plus its outputs (what a batch holds per call)."""
        total = 0
        for specs, shapes in ((self.task.inputs, self.task.input_shapes(dims)), (self.task.outputs, self.task.output_shapes(dims))):
            total += sum(self._tensor_bytes(sp, sh) for sp, sh in zip(specs, shapes))
        return total

    def _name_indices(self, reason):
        """The child speaks in indices ("output 0 ... input 1"); the message names the tensors."""
        import re
        outs = [sp.name for sp in self.task.returned_outputs()]
        ins = [sp.name for sp in self.task.inputs]
        pick = lambda names, i: repr(names[i]) if i < len(names) else str(i)  # noqa: E731
        reason = re.sub(r"\boutputs (\d+) and (\d+)", lambda m: "outputs %s and %s" % (pick(outs, int(m.group(1))), pick(outs, int(m.group(2)))), reason)
        reason = re.sub(r"\boutput (\d+)", lambda m: "output %s" % pick(outs, int(m.group(1))), reason)
        return re.sub(r"\binput (\d+)", lambda m: "input %s" % pick(ins, int(m.group(1))), reason)

    def _ret_index(self, j):
        names = [s.name for s in self.task.outputs]
        return names.index(self.task.returned_outputs()[j].name)

    def _check_aliasing(self, i, st, outs, inplace):
        in_spans = [(self.task.inputs[k].name, span(t)) for k, t in enumerate(st)]
        out_spans = [span(t) for t in outs]
        names = [s.name for s in self.task.returned_outputs()]
        for j, sp in enumerate(out_spans):
            for name, isp in in_spans:
                if overlap(sp, isp):
                    raise CaseFailure("incorrect", "call %d: output %r shares memory with input %r (aliasing is refused)"
                                      % (i, names[j], name))
            for k in range(j):
                if overlap(sp, out_spans[k]):
                    raise CaseFailure("incorrect", "call %d: outputs %r and %r share memory" % (i, names[k], names[j]))

    # --- phases ----------------------------------------------------------------
    def correctness(self, workload):
        """Every correctness shape, `trials` fresh input sets each, checked. Returns (ok, message, verdicts)."""
        verdicts = []
        shapes = self.task.shapes(workload, "correctness")
        before, self.calls_phase = self.calls_phase, "correctness calls"
        try:
            for si, dims in enumerate(shapes):
                labels = [("correctness", workload, si, t) for t in range(self.opt.trials)]
                self._batch(dims, labels, "call", verdicts.append)
        except CaseFailure as e:
            # The checks made so far, the failed one last, travel with the failure: its errors
            # and worst element are what the submitter reads (_case_doc).
            e.verdicts = verdicts
            raise
        finally:
            self.calls_phase = before
        return verdicts

    def timed(self, case, dims, verdicts):
        """Warm-up, then `iterations` timed calls in batches of fresh inputs; every output checked."""
        per_set = self._set_bytes(dims) + 1
        if self.opt.batch:
            bsize = int(self.opt.batch)
        elif self.device == "cuda":
            free = torch.cuda.mem_get_info()[0]
            bsize = int(max(1, min(25, (free // 4) // (3 * per_set))))
        else:
            bsize = 10
        key = self._dims_key(dims)
        overhead = self.overheads.get(key, timing.Overhead())
        if self.ab is not None and self.ab.usable():
            return self.ab.timed(case, dims, verdicts, bsize, overhead)
        warm = self.checked_calls(case, "warmup", self.opt.warmup)
        timed = self.checked_calls(case, "timed", self.opt.iterations)
        done = 0
        while done < self.opt.warmup:
            n = min(bsize, self.opt.warmup - done)
            self._batch(dims, [("warmup", case.id, done + k) for k in range(n)], "timed", verdicts.append,
                        checked=timing.in_batch(warm, done, n))
            done += n
        samples, flagged, figures = [], 0, []
        done = 0
        while done < self.opt.iterations:
            n = min(bsize, self.opt.iterations - done)
            def attempt(k):
                child_ns, wall, check_ns = self._batch(dims, timing.timed_labels(case.id, done, n, k), "timed",
                                                       verdicts.append, checked=timing.in_batch(timed, done, n))
                f = self.figure(child_ns, wall, overhead, check_ns)
                return f, f.flagged
            fig = self._rerun_while_flagged(attempt)
            figures.append(fig)
            flagged += fig.flagged
            samples.extend(fig.samples_ns)
            done += n
        return samples, flagged, figures, overhead

    def checked_calls(self, case, kind, total):
        """Which of a case's `total` calls of `kind` ("warmup" | "timed") are compared with the
        reference: None for all, else a set of call indices. Ranked by the secret, so the child
        can neither predict nor recognise them; the share is Options.check_share, never fewer
        than min_checked timed calls (a fifth of that for warm-ups, which are not timed)."""
        least = self.opt.min_checked if kind == "timed" else max(1, self.opt.min_checked // 5)
        k = min(total, max(least, int(math.ceil(self.opt.check_share * total))))
        if k >= total:
            return None
        ranked = sorted(range(total), key=lambda i: self.secret.derive("check", kind, case.id, i))
        return set(ranked[:k])

    def figure(self, child_ns, wall, overhead, check_ns=None):
        """One timed batch's samples (`child_ns`): their device-wide windows (`check_ns`, default
        the samples) checked against the judge's clock, and on the GPU evened out when its calls
        are too unequal to be honest (timing.even_out)."""
        bell = self.spin_s > 0  # timed through the doorbell (_rung_call)
        if self.device == "cuda":
            fraction = timing.PLAUSIBLE_FRACTION_GPU
        else:
            fraction = timing.PLAUSIBLE_FRACTION_BELL if bell else timing.PLAUSIBLE_FRACTION
        f = timing.cross_check(child_ns, wall, overhead, fraction, check_ns)
        if self.opt.trace:
            # The Unix time lets a batch be read against samples taken beside the grade
            # (fidelity.sh CLOCKS=1: nvidia-smi's clocks and throttle reasons).
            log("trace: t=%.3f batch of %d: child %s us; judge %.1f us/call (est), wall %.1f us/call, overhead %r; flagged %s"
                % (time.time(), len(child_ns), ["%.1f" % (c / 1e3) for c in child_ns], f.judge_per_call_ns / 1e3,
                   wall / max(len(child_ns), 1) / 1e3, overhead.as_dict(), f.flagged))
        return timing.even_out(f) if self.device == "cuda" else f

    def _rerun_while_flagged(self, attempt):
        """attempt(k) -> (result, flagged) for k = 0, 1, ...: run again on fresh inputs while
        the clocks disagree, at most timing.FLAG_RETRIES times; the last result stands."""
        for k in range(timing.FLAG_RETRIES + 1):
            result, flagged = attempt(k)
            if not flagged:
                break
            if k < timing.FLAG_RETRIES:
                self.retried += 1
        return result

    def profile(self, case, dims, verdicts):
        """Untimed profiler pass (child; its outputs are checked like any other) and the reference's profile (judge)."""
        (events, calls), _, _ = self._batch(dims, [("profile", case.id, k) for k in range(2)], "profile", verdicts.append)
        # The reference's names are profiled once per workload: they feed the library gate, whose
        # families (a GEMM library, cuDNN, BLAS-backed ops) a fixed reference calls at every shape,
        # and each profile of it cost seconds of every grade (docs/PERF.md).
        if case.workload not in self._ref_names:
            pristine = inputs.make_inputs(self.task, dims, self.secret.derive("profile-ref", case.id), self.device)
            with profiling.session(self.device) as prof:
                reference.run(self.ref, self.task, pristine)
                if self.device == "cuda":
                    torch.cuda.synchronize()
            self._ref_names[case.workload] = profiling.names(prof)
            del pristine
        return events, calls, self._ref_names[case.workload]

    # --- the run -----------------------------------------------------------------
    def run(self, cases):
        results = []
        corr_verdicts, corr_fail = [], None
        self.bound = elementwise_bound(cases, self.opt)
        if self.device == "cuda":
            self.quiet_us = self._probe_us()  # before any child exists: the idle device
        try:
            with self.phases("child start and import"):
                self._ensure_child(cases, timed=self.ab is None)
            log("child ready (%s); correctness trials next" % self.phases.summary())
            self._start_standby()
            if self.child.pad_note:
                log("launch pad: %s" % self.child.pad_note)
            if self.device == "cuda":
                log("timed calls' figure: %s" % (
                    "the device span (%s)" % self.child.spans_note if self._spans_own(self.child)
                    else "the events' window%s" % ("" if self.opt.figure == "window"
                                                   else " (no device spans: %s)" % self.child.spans_note)))
            workloads = sorted({c.workload for c in cases})
            for w in workloads:
                try:
                    corr_verdicts += self.correctness(w)
                except CaseFailure as e:
                    corr_fail = e
                    corr_verdicts += getattr(e, "verdicts", [])
                    if e.status in ("timeout", "error"):
                        self._drop_child()
                    break
        except (CaseFailure, ChildFailure) as e:
            status = getattr(e, "status", "error")
            for c in cases:
                results.append(self._case_doc(c, status, False, [], None, {}, str(e)))
            self._drop_child()
            return self._document(results)
        log("correctness trials done (%s)" % self.phases.summary())
        if self.ab is not None and corr_fail is None:
            # The submission is timed in a fresh child, like the incumbent: a child
            # that ran the correctness trials carries their history (allocator,
            # caches, lazily built state) and timed identical code ~2-3% faster
            # than the incumbent's on a loaded CPU, enough for the sign test to
            # crown it. Same history on both sides, no slot advantage.
            self._drop_child()
        for k, c in enumerate(cases):
            results.append(self._run_case(c, corr_verdicts, corr_fail, cases))
            log("case %d/%d %s: %s (%s)" % (k + 1, len(cases), c.id, results[-1]["status"], self.phases.summary()))
        # Killed, not asked to exit: every figure is in. A CUDA child's own exit (interpreter
        # finalisation, its context torn down) took 0.77 s of a grade on an H200, one child
        # after the other (docs/PERF.md); killed, their teardowns run at once.
        for ch in (self.child, self.ab.child if self.ab is not None else None):
            if ch is not None:
                ch.signal_kill()
        self._drop_child()
        if self.ab is not None:
            self.ab.drop()
        log("time: %s" % self.phases.summary())
        return self._document(results)

    def _run_case(self, case, corr_verdicts, corr_fail, cases):
        verdicts = list(corr_verdicts)
        if corr_fail is not None:
            return self._with_ab(case, self._case_doc(case, corr_fail.status, False, verdicts, None, {},
                                                      "correctness trials: %s" % corr_fail))
        dims, note = self.timing_dims(case)
        try:
            with self.phases("child start and import"):  # the A/B's fresh timing child, a restart
                self._ensure_child(cases)
            retried_before = self.retried
            samples, flagged, figures, overhead = self.timed(case, dims, verdicts)
            with self.phases("profiler pass"):
                events, calls, ref_names = self.profile(case, dims, verdicts)
        except (CaseFailure, ChildFailure) as e:
            status = getattr(e, "status", "error")
            if status in ("timeout", "error") or isinstance(e, ChildFailure):
                self._drop_child()
            return self._with_ab(case, self._case_doc(case, status, False, verdicts, None, {},
                                                      "%s%s" % (str(e), ("; " + note) if note else "")))
        med, spread = timing.summarise(samples)
        log("case %s: child/judge clocks per timed batch: least %.4f, median %.4f, greatest %.4f (%d batches)"
            % ((case.id,) + timing.agreement(figures) + (len(figures),)))
        msgs = [note] if note else []
        if self.retried > retried_before:
            msgs.append("%d timed batches were re-run on fresh inputs because the child's times and the judge's clock "
                        "disagreed" % (self.retried - retried_before))
        evened = sum(1 for f in figures if f.evened)
        if evened:
            msgs.append("%d of %d timed batches: their calls' times were too unequal (mean above %.2fx the median: "
                        "work moved between calls?); each call got its batch's mean" % (evened, len(figures), timing.SKEW_LIMIT))
        if flagged:
            msgs.append("%d of %d timed batches: the child's own times were implausibly below the judge's clock "
                        "(harness %.1f us/call); the judge-derived time was used" % (flagged, len(figures), overhead.per_call_ns / 1e3))
        gate_doc = {}
        figs = gates.profile_figures(events, calls, self.device)
        g, gm = gates.extra_gates(self.task, figs)
        gate_doc.update(g)
        msgs += gm
        lg, lm = gates.library_gate([e[0] for e in events], ref_names, self.device)
        gate_doc["library-calls"] = lg
        if lm:
            msgs.append(lm)
        _, w = self.task.workload(case.workload)
        graded = [self.task.bind(w, s) for s in w.get("graded", [])]
        roof_s, how = gates.roofline_seconds(self.task, dims, self.device_class, graded, w.get("roofline_us"))
        rg, rm = gates.roofline_gate(med / 1e9, roof_s, how)
        if rg is not None:
            gate_doc["roofline"] = rg
        if rm:
            msgs.append(rm)
        work = self.task.work(dims)
        value = timing.metric_value(self.task.metric, work, med / 1e9)
        metrics = self._metrics(case, value, med)
        msgs.insert(0, "median %.3f us over %d timed calls, spread %.3f, %s %.6g" % (med / 1e3, len(samples), spread, self.task.metric, value))
        doc = self._case_doc(case, "ok", True, verdicts, (samples, spread), gate_doc, "; ".join(m for m in msgs if m), metrics)
        doc["top_kernels"] = gates.top_kernels(events, calls, self.device)
        return self._with_ab(case, doc, med, work)

    def _with_ab(self, case, doc, med_ns=None, work=None):
        """Adds `incumbent` and `speedup` to a case document when A/B is on."""
        if self.ab is not None:
            doc.update(self.ab.case_fields(case, med_ns, work))
        return doc

    def _metrics(self, case, value, med_ns):
        metas = case.metrics or [{"name": self.task.metric, "unit": self.task.metric}, {"name": "time_us", "unit": "us"}]
        out = {}
        for m in metas:
            unit = str(m.get("unit", "")).strip()
            name = m.get("name")
            if name == "reward" or unit == self.task.metric or name == self.task.metric:
                out[name] = value
            elif unit in ("us", "µs", "usec"):
                out[name] = med_ns / 1e3
            elif unit == "ms":
                out[name] = med_ns / 1e6
            elif unit == "ns":
                out[name] = med_ns
            elif unit == "s":
                out[name] = med_ns / 1e9
        return out

    def _case_doc(self, case, status, correct, verdicts, timing_fig, gate_doc, message, metrics=None):
        rel = max((v.error_rel for v in verdicts), default=None)
        ab = max((v.error_abs_max for v in verdicts), default=None)
        failed = [v for v in verdicts if not v.ok]
        if failed:
            rel = max(v.error_rel for v in failed)
        clean = lambda x: x if isinstance(x, (int, float)) and math.isfinite(x) else None  # noqa: E731
        doc = {
            "test_case_id": case.id,
            "status": status,
            "correct": bool(correct),
            "error_rel": clean(rel),
            "error_abs_max": clean(ab),
            "metrics": ({k: clean(v) for k, v in metrics.items()} if (metrics and correct) else
                        {m["name"]: 0.0 for m in (case.metrics or [])} if case.metrics else {}),
            "samples": len(timing_fig[0]) if timing_fig else 0,
            "spread": clean(timing_fig[1]) if timing_fig else None,
            "gates": gate_doc,
            "message": message,
            "guardrails": self._guardrails(case, verdicts, timing_fig),
        }
        # On a failure, the element to look at first: the first failed check's element farthest
        # outside the bound (or with the largest difference), at the shape it ran.
        w = next((v for v in failed if getattr(v, "worst", None)), None)
        if w is not None:
            doc["worst"] = {"output": str(w.worst["output"]), "index": list(w.worst["index"]),
                            "shape": dict(getattr(w, "shape", None) or {}),
                            "out": clean(w.worst["out"]), "expected": clean(w.worst["expected"])}
        return doc

    def _guardrails(self, case, verdicts, timing_fig):
        """What this case was held to, as enforced (schemas/benchmark_output: guardrails)."""
        _, w = self.task.workload(case.workload)
        ratios = [v.bound_ratio for v in verdicts if v.bound_ratio is not None]
        g = {
            "comparator": self.task.comparator,
            "tolerance": float(self.task.tolerance),
            "correctness_atol": self.bound[0] if self.bound else None,
            "correctness_rtol": self.bound[1] if self.bound else None,
            "bound_ratio_max": max(ratios) if ratios and all(math.isfinite(r) for r in ratios) else None,
            "random_inputs": self.opt.trials,
            "correctness_shapes": len(w.get("correctness", [])),
            "checked_calls": len(verdicts),
            "warmup_runs": self.opt.warmup,
            "timed_runs": self.opt.iterations,
            "timed_samples": len(timing_fig[0]) if timing_fig else 0,
        }
        if self.task.comparator == "rowwise":
            g["row_pass"] = float(self.task.row_pass)
        return g

    def _document(self, cases):
        reasons = []
        for c in cases:
            if c["status"] != "ok" or not c["correct"]:
                why = "%s (%s)" % (c["status"], c["message"])
            else:
                why = "; ".join(gates.gate_failure(name, g) for name, g in c["gates"].items() if not g.get("pass"))
            if not why:
                continue
            # One reason per distinct failure: a correctness failure ends every case of its
            # workload with the same message, and is said once, naming the cases.
            for r in reasons:
                if r[1] == why:
                    r[0].append(c["test_case_id"])
                    break
            else:
                reasons.append(([c["test_case_id"]], why))
        reasons = ["%s: %s" % (", ".join(ids), why) for ids, why in reasons]
        accept = not reasons and bool(cases)
        doc = {
            "schema_version": "1",
            "kernel_id": self.kernel_id,
            "ran_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "runner_id": self.runner_id,
            "arch": arch(self.device),
        }
        if self.device_class_name:
            doc["device_class"] = self.device_class_name if self.device == "cuda" else "cpu"
        if self.provenance:
            doc["provenance"] = self.provenance
        doc.update({
            "overall": {
                "accept": accept,
                "accept_reason": ("all %d cases correct and within their gates" % len(cases)) if accept else "; ".join(reasons)[:4000] or "no cases ran",
                "build_ok": self.build_error is None,
            },
            "cases": cases,
        })
        return doc


def arch(device):
    if device == "cuda" and torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        return "sm_%d%d" % (major, minor)
    return "cpu"
