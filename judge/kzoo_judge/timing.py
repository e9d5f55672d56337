"""Timing figures: overhead model, the judge-clock cross-check, median and spread.

Per-call samples come from the child (CUDA events around the call, ending on
its stream unless the device worked on past it: window_ns; perf_counter_ns on
the CPU). The child can lie, so every batch is
also timed by the judge's own clock, from "go" to the moment the child's
outputs have arrived. Before any submitted code is imported the judge runs a
trivial judge-owned function through the same loop to learn the harness's
own cost (fixed per batch + per call). A batch whose child-reported total is
implausibly below the judge's clock minus that cost is flagged, and its
samples are replaced by the judge-derived per-call time: the submission then
gets the honest (slightly pessimistic) figure, never a faster one.
"""

import contextlib
import math
import time

# A flagged batch is run again, on fresh inputs, up to this many times before
# its judge-derived figure is kept. Why: on a loaded machine the harness's own
# cost swings by hundreds of microseconds, enough to flag an honest batch of
# fast calls; noise rarely repeats, a lying timer always does. Without the
# re-run a noise flag inflated one side of an A/B pair and biased the verdict.
FLAG_RETRIES = 2


def in_batch(selected, start, n):
    """The indices within a batch of calls start .. start+n-1 that are in `selected` (a set of
    call indices of the case; None: all of them, returned as None)."""
    if selected is None:
        return None
    return {k for k in range(n) if start + k in selected}


def timed_labels(case_id, start, n, attempt=0):
    """Input labels of one timed batch; a re-run gets fresh inputs (new labels)."""
    kind = "timed" if attempt == 0 else "timed-rerun-%d" % attempt
    return [(kind, case_id, start + k) for k in range(n)]


# A child total below this fraction of the judge's estimate is implausible. Honest
# paced batches ran at 0.93-0.98 of it on an H200 (the per-call hand-over costs more
# after a real call than after the calibration's trivial one) and, for a 150 us call, at
# 0.97-0.997 on the 2-vCPU VM with the CPU's doorbell (bell.py), 0.39-0.90 without it
# (docs/PERF.md).
# Tighten it once more runs show where the honest least lies.
PLAUSIBLE_FRACTION = 0.75
# The bound on the CPU when the judge's clock is the doorbell's (bell.py): that clock is
# the child's window plus a cache line's trip, honest 150 us calls read 0.97-0.997, and a
# flagged batch's judge-derived figure is then as good as the child's own. Why tighter: a
# child whose clock ran at 0.8x its real speed passed the general bound (test_exploits
# Patching.test_a_clock_running_slow_by_a_fifth).
PLAUSIBLE_FRACTION_BELL = 0.9
# The bound on a GPU with the doorbell. Honest paced batches of 500-800 us Triton calls read
# 0.79-0.93 of the judge's estimate on an H200 (2026-12-01): a real call's own harness costs
# (its output's copy after a real kernel, its drain) exceed the trivial calibration call's by
# 40-100 us, which the 0.9 bound flagged as lying. Until that gap is measured and modelled,
# the general bound holds on the GPU (docs/JUDGE.md, residual risks).
PLAUSIBLE_FRACTION_GPU = PLAUSIBLE_FRACTION
# Absolute slack (ns) for scheduler noise on a loaded machine.
SLACK_NS = 200_000


# Judge-owned calls that keep the device busy this long (microseconds) calibrate the
# window's tail floor (TailFloors): graded shapes run from 250 us up. A factor of two
# between levels: on an H200 the least tail grew from ~35 us at 1 ms to 70-146 us at
# 16 ms, and a call is charged the floor of the level below its own length.
FLOOR_LEVELS_US = (250, 500, 1000, 2000, 4000, 8000, 16000, 32000)


# The floor of a calibration level (TailFloors.add): this quantile of its calls' tails.
TAIL_QUANTILE = 0.8
# Judge-owned calls per calibration level (enough for TAIL_QUANTILE to mean something).
FLOOR_CALLS = 6


class TailFloors:
    """The least drain tail of judge-owned calls, by how long each kept the device busy.

    The tail (a call's stream end to the device-wide end the child records after a device
    sync) is the harness's own cost for an honest call, and it is not one figure: on an
    H200 it grew from ~20 us after a trivial call to 25-110 us after 6-23 ms of kernels
    (docs/PERF.md, "The window's tail"). Against the trivial floor alone every honest call
    was charged that growth: 69-111 us of an 8 ms softmax call, ~1%. So the calibration also runs
    calls that spin the device for FLOOR_LEVELS_US, through the same protocol, before the
    submission is imported, and a call's floor is the least tail measured at the longest
    level its own stream time reaches. Hidden work still lengthens the tail past it."""

    def __init__(self):
        self.levels = []  # [(least stream ns of the level's calls, least tail ns)], sorted

    def add(self, streams_ns, tails_ns):
        """One level's calls: their stream times and tails. The level's floor is a high quantile
        of its tails (TAIL_QUANTILE), not the least: an honest call's tail is the harness's
        host round trip (spin, sync, the end event's launch), which jitters by tens of
        microseconds; against the least, every honest call was charged its jitter: +5-15% on
        500 us kernels on an H200, with 6-13% spread between calls (docs/PERF.md, 2026-12-01).
        Work hidden on a side stream still lengthens the tail past it; what a floor lets
        through is the harness's own jitter, and a child that patches its tails is bounded by
        the judge's clock (cross_check) either way."""
        if not streams_ns or len(streams_ns) != len(tails_ns):
            return
        self.levels.append((min(streams_ns), quantile(sorted(tails_ns), TAIL_QUANTILE)))
        self.levels.sort()

    @classmethod
    def merged(cls, floors):
        """One set of floors from several children's calibrations of the same shape: level by
        level the highest floor (the least stream). None without any."""
        floors = [f for f in floors if f is not None and f.levels]
        if not floors:
            return None
        if len({len(f.levels) for f in floors}) != 1:
            return max(floors, key=lambda f: sum(t for _, t in f.levels))
        out = cls()
        out.levels = [(min(lv[i][0] for lv in (f.levels for f in floors)), max(lv[i][1] for lv in (f.levels for f in floors)))
                      for i in range(len(floors[0].levels))]
        return out

    def at(self, stream_ns):
        """The floor for a call of this stream time: the least tail at the longest level it
        reaches, or at any longer level. The least of three calls is itself noisy (on an H200
        one 4 ms level read 86 us between 46 us at 2 ms and 55 us at 16 ms); never charging
        less than a longer level measured keeps one high reading from excusing hidden work."""
        if not self.levels:
            return 0.0
        k = 0
        for i, (s, _) in enumerate(self.levels):
            if s <= stream_ns:
                k = i
        return min(t for _, t in self.levels[k:])

    def __repr__(self):
        return ", ".join("%.0f us: %.1f" % (s / 1e3, t / 1e3) for s, t in self.levels)


def window_ns(stream_ns, tails_ns, floors):
    """Per-call figures on the GPU from the child's two ends of each call's window.

    `stream_ns` runs from the start event to an event recorded on the call's stream
    right after it returned; `tails_ns` from there to an event recorded after a
    device-wide sync. An honest call's tail is the harness's own cost (spin, sync,
    launch); `floors` (TailFloors, or one figure) is what judge-owned calls of the same
    length measured. Work the call left running on another stream lengthens the tail.

    With calibrated floors every call of the batch is charged the batch's MEDIAN excess of
    tail over floor (none when that is below zero), not its own. Why: an honest tail jitters
    by tens to 150 microseconds from call to call on an H200 (the host's spin, sync and the
    end event's launch), and charged per call above a floor it is the likeliest source of the
    5-33% spread of 300-800 us kernels' grades, whose stream windows alone spread ~1%, and of
    medians 1-12% above Nsight Compute (docs/GPU.md, 2026-12-02; inferred, not yet traced call
    by call on a GPU). Work hidden on a side stream in most calls moves the median excess by its
    length and is charged to every call; hidden in fewer than half, it cannot lower the
    median of the case's figures, which is what the judge reports.
    Uncalibrated (None): each call's device-wide window.
    A malformed pair gives NaN, which cross_check flags."""
    ok = [all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 and math.isfinite(v) for v in (s, t))
          for s, t in zip(stream_ns, tails_ns)]
    if not floors:
        return [float(s) + float(t) if good else math.nan for s, t, good in zip(stream_ns, tails_ns, ok)]
    floor = floors.at if isinstance(floors, TailFloors) else (lambda _s: float(floors))
    excess = sorted(float(t) - floor(s) for s, t, good in zip(stream_ns, tails_ns, ok) if good)
    charge = max(0.0, quantile(excess, 0.5)) if excess else 0.0
    return [float(s) + charge if good else math.nan for s, good in zip(stream_ns, ok)]


# A call's device span may fall short of its stream window by the device's steps from the pad to
# the call's first kernel and from its last to the stream's end event (a few microseconds on an
# H200), or by an enqueue that outlasted the pad. Past this, the figure is the window less it: the
# span comes from the child, and the judge's clock checks the windows (checked_ns), so a span
# reported shorter than that is worth no more to a lying child than this slack.
SPAN_SLACK = 0.02
SPAN_SLACK_NS = 10_000


def span_figures(spans_ns, stream_ns, tails_ns):
    """Per-call figures of a batch timed by device spans (spans.py): each call's span, never
    below its stream window less (SPAN_SLACK of it + SPAN_SLACK_NS); a call whose span the
    records could not give (-1) gets its device-wide window (stream + tail), which can only
    read high. A malformed stream or tail gives NaN, which cross_check flags."""
    out = []
    for sp, s, t in zip(spans_ns, stream_ns, tails_ns):
        good = all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 and math.isfinite(v) for v in (s, t))
        if not good:
            out.append(math.nan)
        elif isinstance(sp, int) and not isinstance(sp, bool) and sp > 0:
            out.append(max(float(sp), float(s) * (1.0 - SPAN_SLACK) - SPAN_SLACK_NS))
        else:
            out.append(float(s) + float(t))
    return out


def checked_ns(stream_ns, tails_ns):
    """What the judge's clock is checked against per call: the device-wide window (start to the
    device's end: stream + tail). Why not the figure (window_ns): the figure leaves out the
    harness's tail up to its floor, and the judge's clock holds all of it, so on an H200 honest
    500 us calls, whose tails ran 35-200 us, read 0.75-0.87 of the clock and were flagged. The
    calibration's overhead is measured the same way (Judge._calibrate_cases). A child that
    reports a long tail to stay within the bound raises its own figure by as much, less the
    floor. A malformed pair gives NaN, which cross_check flags."""
    out = []
    for s, t in zip(stream_ns, tails_ns):
        ok = all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 and math.isfinite(v) for v in (s, t))
        out.append(float(s) + float(t) if ok else math.nan)
    return out


# The batch sizes of the harness's calibration (Judge._calibrate_cases): a line through them.
CALIBRATION_SIZES = (2, 8)


class Overhead:
    def __init__(self, fixed_ns=0.0, per_call_ns=0.0):
        self.fixed_ns = max(0.0, fixed_ns)
        self.per_call_ns = max(0.0, per_call_ns)

    @classmethod
    def fit(cls, samples):
        """Least-squares line through [(n_calls, harness_ns)] where harness_ns = wall - child total."""
        if not samples:
            return cls()
        if len({n for n, _ in samples}) < 2:
            n, w = samples[0]
            return cls(0.0, w / max(n, 1))
        mx = sum(n for n, _ in samples) / len(samples)
        my = sum(w for _, w in samples) / len(samples)
        sxx = sum((n - mx) ** 2 for n, _ in samples)
        sxy = sum((n - mx) * (w - my) for n, w in samples)
        slope = sxy / sxx if sxx else 0.0
        return cls(my - slope * mx, slope)

    @classmethod
    def least(cls, overheads):
        """One line for several calibrations of the same harness (an A/B run's two children):
        at each calibrated batch size the least of their costs, as each child's own line is the
        least of its repeats (noise only ever adds time). Why: each side's flagged batches are
        charged wall - overhead; with each child's own line, the side calibrated while the
        machine was busier was charged less in every flagged batch of the run, a bias the
        alternating pairs cannot cancel."""
        if not overheads:
            return cls()
        return cls.fit([(n, min(o.batch_ns(n) for o in overheads)) for n in CALIBRATION_SIZES])

    def batch_ns(self, n):
        return self.fixed_ns + n * self.per_call_ns

    def as_dict(self):
        return {"fixed_us": self.fixed_ns / 1e3, "per_call_us": self.per_call_ns / 1e3}


class BatchFigure:
    def __init__(self, samples_ns, flagged, judge_per_call_ns, child_total_ns, wall_ns):
        self.samples_ns = samples_ns
        self.flagged = flagged
        self.judge_per_call_ns = judge_per_call_ns
        self.child_total_ns = child_total_ns
        self.wall_ns = wall_ns
        self.evened = False  # its calls were given the batch's mean (even_out)


# A batch whose mean exceeds its median by more than this is taken for work moved between
# its calls: the child holds every input set of its batch, so one call can compute several
# calls' outputs and the others return them at once -- the total (and the judge's clock)
# stays honest while the median falls to the light calls (docs/JUDGE.md, residual risks).
# Such a batch's calls all get the batch's mean. Applied on the GPU, where honest calls of
# a batch differ by 1-2% end to end (docs/PERF.md); CPU calls at measure shapes are noisier
# than this limit and are not guarded.
SKEW_LIMIT = 1.10


def even_out(fig, limit=SKEW_LIMIT):
    """`fig` with every sample set to the batch's mean when the mean exceeds limit x median."""
    s = fig.samples_ns
    if fig.flagged or len(s) < 3:
        return fig  # a flagged batch already carries its mean; with two calls the median is the mean
    mean = sum(s) / len(s)
    med = quantile(sorted(s), 0.5)
    if med > 0 and mean > limit * med:
        fig.samples_ns = [mean] * len(s)
        fig.evened = True
    return fig


def cross_check(child_ns, wall_ns, overhead, fraction=PLAUSIBLE_FRACTION, check_ns=None):
    """Samples of one batch after checking the child's times against the judge's clock: a
    child total (of `check_ns`, the calls' device-wide windows, when given; else of the
    samples) below `fraction` of the judge's estimate (less SLACK_NS) is implausible."""
    n = len(child_ns)
    checked = child_ns if check_ns is None else check_ns
    child_total = float(sum(checked))
    est_total = wall_ns - overhead.batch_ns(n)
    if est_total <= 0:
        est_total = min(wall_ns, max(child_total, 0.0)) if child_total > 0 else wall_ns
    judge_per_call = est_total / max(n, 1)
    bad_values = any((not isinstance(t, (int, float))) or t < 0 or math.isnan(t) for t in list(child_ns) + list(checked))
    implausible = child_total < fraction * est_total - SLACK_NS
    # A child claiming MORE than the judge's whole clock is also lying (or broken).
    too_slow = child_total > wall_ns * 1.05 + SLACK_NS
    if bad_values or implausible or too_slow:
        return BatchFigure([judge_per_call] * n, True, judge_per_call, child_total, wall_ns)
    return BatchFigure([float(t) for t in child_ns], False, judge_per_call, child_total, wall_ns)


def agreement(figures):
    """(least, median, greatest) over batches of the child's total / the judge's estimate:
    how close the two clocks ran (logged; docs/PERF.md sets PLAUSIBLE_FRACTION from it)."""
    r = sorted(f.child_total_ns / (f.judge_per_call_ns * len(f.samples_ns)) for f in figures
               if f.samples_ns and f.judge_per_call_ns > 0 and math.isfinite(f.child_total_ns))
    return (r[0], quantile(r, 0.5), r[-1]) if r else (math.nan,) * 3


def quantile(sorted_vals, q):
    if not sorted_vals:
        return math.nan
    pos = q * (len(sorted_vals) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def summarise(samples_ns):
    """(median_ns, spread) with spread = (p90 - p10) / median."""
    s = sorted(samples_ns)
    med = quantile(s, 0.5)
    if not s or not med > 0:
        return med, math.nan
    return med, (quantile(s, 0.9) - quantile(s, 0.1)) / med


SCALE = {"GB/s": 1e9, "TFLOP/s": 1e12}


def metric_value(metric, work, seconds):
    """The task's metric from canonical work and a time: GB/s -> /1e9, TFLOP/s -> /1e12, others -> /1."""
    if not seconds > 0:
        return math.inf
    return work / seconds / SCALE.get(metric, 1.0)


class Phases:
    """Where a judge run's wall time goes (inputs, reference, the child's batches, checks, ...),
    for the progress log and the grading-overhead figure in docs/PERF.md. Each phase counts its
    own time only: a phase nested in another is taken out of the outer one. `notes` are figures
    that are not part of the partition (the child's own per-call total)."""

    def __init__(self, sync=None):
        self.start = time.perf_counter()
        self.totals = {}
        self.notes = {}
        self.sync = sync  # called before reading the clock (CUDA: device work is asynchronous)
        self._inner = [0.0]

    @contextlib.contextmanager
    def __call__(self, name):
        t0 = time.perf_counter()
        self._inner.append(0.0)
        try:
            yield
        finally:
            if self.sync is not None:
                self.sync()
            spent = time.perf_counter() - t0
            inner = self._inner.pop()
            self._inner[-1] += spent
            self.totals[name] = self.totals.get(name, 0.0) + spent - inner

    def add(self, name, seconds):
        """A phase timed elsewhere (the judge's clock over a batch)."""
        self.totals[name] = self.totals.get(name, 0.0) + seconds
        self._inner[-1] += seconds

    def note(self, name, seconds):
        self.notes[name] = self.notes.get(name, 0.0) + seconds

    def summary(self):
        wall = time.perf_counter() - self.start
        parts = ", ".join("%s %.2f s" % (k, v) for k, v in sorted(self.totals.items(), key=lambda kv: -kv[1]))
        notes = "".join("; %s %.2f s" % kv for kv in sorted(self.notes.items()))
        return "wall %.2f s: %s; other %.2f s%s" % (wall, parts, wall - sum(self.totals.values()), notes)
