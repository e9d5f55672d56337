"""Comparators: is an output close enough to the reference's?

Runs only in the judge process, on tensors the judge cloned out of shared
memory, on their own device, in chunks. All arithmetic is float64, but for
two 16-bit float outputs (bfloat16, float16), whose figures are taken in
float32 and whose decisions near a boundary are taken again in float64
(_narrow_chunk: 2.3x fewer bytes moved per element). Structure
is checked before values; then non-finite values must match position by
position (a NaN in the expected output is never a wildcard, and an Inf must
have the same sign), and the comparator's measure is taken over the finite
positions.

Measures (the number compared with grading.tolerance.value):
- relative-frobenius: ||out - exp||_F / ||exp||_F, worst output of a tuple;
- relative-frobenius-tuple-max: the same, max over the tuple (identical
  rule, stated explicitly by the task);
- rowwise: per-row (last dim) relative error; passes when the fraction of
  rows within the tolerance is >= row_pass; the measure reported is the
  row_pass-quantile of the row errors;
- exact: bitwise equality (NaN positions must be NaN on both sides); the
  measure is the fraction of differing elements.

Beside the comparator, an elementwise bound (the board's guardrail, "within
atol and rtol, per element"): with `bound=(atol, rtol)` every finite element
must keep |out - exp| <= atol + rtol * |exp|. `bound_ratio` is the largest
|out - exp| / (atol + rtol * |exp|) (<= 1 holds it) and `worst` names the
element where it was reached (index, output value, expected value). Not
applied with the exact comparator, which is stricter.
"""

import math

import torch

from . import dtypes


class Verdict:
    def __init__(self, ok, error_rel, error_abs_max, reason="", bound_ratio=None, worst=None):
        self.ok = ok
        self.error_rel = error_rel
        self.error_abs_max = error_abs_max
        self.reason = reason
        self.bound_ratio = bound_ratio  # largest |out - exp| / (atol + rtol |exp|); None: no bound
        self.worst = worst  # {"output", "index", "out", "expected"} of the element farthest outside, or None
        self.shape = None  # the dims the call ran at (set by the judge)

    def __repr__(self):
        return "Verdict(ok=%r, rel=%r, abs=%r, %r)" % (self.ok, self.error_rel, self.error_abs_max, self.reason)


def structure(out, exp, name, device=None, strict_dtype=True):
    """None if `out` can stand for `exp`, else the reason it cannot."""
    if type(out) is not torch.Tensor:
        return "output %s is a %s, not exactly torch.Tensor (subclasses and lazy results are refused)" % (name, type(out).__name__)
    if tuple(out.shape) != tuple(exp.shape):
        return "output %s has shape %s, expected %s" % (name, list(out.shape), list(exp.shape))
    if strict_dtype and out.dtype != exp.dtype:
        return "output %s has dtype %s, expected %s" % (name, out.dtype, exp.dtype)
    if device is not None and out.device.type != torch.device(device).type:
        return "output %s is on %s, expected %s" % (name, out.device, device)
    return None


def _as_f64(t, fmt):
    if t.dtype == torch.uint8 and fmt in dtypes.FLOAT8:
        return dtypes.to_float(t, fmt).to(torch.float64)
    if "float8" in str(t.dtype):
        return t.to(torch.float32).to(torch.float64)
    return t.to(torch.float64)


# Elements per float64 working chunk: bounds the judge's extra memory (a few
# chunk-sized temporaries, ~0.5 GB) whatever the output's size.
CHUNK = 1 << 24


def _chunks(o, e, cols):
    """(out chunk, expected chunk, flat offset) over the flattened tensors, on the expected's
    device, each chunk whole rows of `cols` elements. Why chunks on the device: a graded
    output can hold half a billion elements; float64 copies of it on the host took seconds
    per timed call and made a GPU grading run outlast its time limit."""
    of = o.detach().to(e.device).contiguous().reshape(-1)
    ef = e.detach().contiguous().reshape(-1)
    step = max(cols, 1) * max(1, CHUNK // max(cols, 1))
    for start in range(0, ef.numel(), step):
        yield of[start:start + step], ef[start:start + step], start


def _unravel(flat, shape):
    idx = []
    for n in reversed(shape):
        idx.append(flat % n if n else 0)
        flat //= max(n, 1)
    return list(reversed(idx))


def _nonfinite_mismatch(o, e):
    """Count of positions where the NaN/Inf patterns differ, and the first such flat index."""
    bad = (torch.isnan(o) != torch.isnan(e))
    inf_e = torch.isinf(e)
    inf_o = torch.isinf(o)
    bad |= inf_e != inf_o
    bad |= inf_e & inf_o & (torch.sign(o) != torch.sign(e))
    n = int(bad.sum())
    first = int(torch.nonzero(bad)[0][0]) if n else None
    return n, first


def _exact(o, e, fmt):
    """Differing elements of two flat chunks of one dtype, bitwise (NaN = NaN, -0.0 != 0.0)."""
    ob = o.contiguous().view(torch.uint8) if o.dtype != torch.bool else o.to(torch.uint8)
    eb = e.contiguous().view(torch.uint8) if e.dtype != torch.bool else e.to(torch.uint8)
    w = o.element_size()
    bitdiff = (ob.reshape(-1, w) != eb.reshape(-1, w)).any(dim=1) if o.numel() else torch.zeros(o.shape, dtype=torch.bool, device=o.device)
    if o.is_floating_point() or fmt in dtypes.FLOAT8:
        of, ef = _as_f64(o, fmt), _as_f64(e, fmt)
        both_nan = torch.isnan(of) & torch.isnan(ef)
        return int(((of != ef) | bitdiff).logical_and(~both_nan).sum())
    return int(bitdiff.sum())


def _exact_values(o, e, fmt):
    """Differing elements of two flat chunks of different dtypes, by value (NaN = NaN)."""
    of, ef = _as_f64(o, fmt), _as_f64(e, fmt)
    return int(((of != ef) & ~(torch.isnan(of) & torch.isnan(ef))).sum())


def _compare_exact(o, e, spec):
    """(differing elements, largest finite |difference|) over the whole tensors."""
    fmt, n, absmax = spec.dtype, 0, 0.0
    for oc, ec, _ in _chunks(o, e, e.shape[-1] if e.dim() else 1):
        n += _exact(oc, ec, fmt) if oc.dtype == ec.dtype else _exact_values(oc, ec, fmt)
        of, ef = _as_f64(oc, fmt), _as_f64(ec, fmt)
        fin = torch.isfinite(of) & torch.isfinite(ef)
        if bool(fin.any()):
            absmax = max(absmax, float((of - ef)[fin].abs().max()))
    return n, absmax


class _Worst:
    """The element farthest outside the elementwise bound, over chunks; without a bound, the
    element with the largest |difference| (what a contributor looks at first on a failure)."""

    def __init__(self):
        self.ratio, self.flat, self.out, self.exp = 0.0, None, None, None

    def take(self, d, of, ef, start, bound):
        atol, rtol = bound if bound is not None else (1.0, 0.0)
        r = d.abs() / (atol + rtol * ef.abs())
        k = int(torch.argmax(r))
        self.offer(float(r[k]), start + k, float(of[k]), float(ef[k]))

    def offer(self, v, flat, out, exp):
        if v > self.ratio or self.flat is None:
            self.ratio, self.flat, self.out, self.exp = v, flat, out, exp


def _finite_chunk(of, ef, bound):
    """The common case, a chunk with nothing non-finite, in fewer passes and one host sync:
    (absmax, worst ratio, its index, out, expected, ||d||, ||ef||) with exactly the values
    the general path computes (same float64 operations in the same order; with no bound the
    ratio is |d| / (1 + 0 |ef|), which is |d| itself when ef is finite). None when the chunk
    holds a NaN or Inf (d = of - ef is then not finite: a finite float64 difference of two
    finite values of a narrower dtype cannot overflow, and a float64 one that does goes to
    the general path, which is exact)."""
    d = of - ef
    if not bool(torch.isfinite(d).all()):
        return None
    a = d.abs()
    if bound is None:
        r = a
    else:
        atol, rtol = bound
        r = torch.div(a, ef.abs().mul_(rtol).add_(atol))
    k = torch.argmax(r)
    vals = torch.stack([a.max(), r[k], k.to(torch.float64), of[k], ef[k], d.norm(), ef.norm()]).tolist()
    return vals


# 16-bit floats whose chunks are compared in float32 first (_narrow_chunk).
_NARROW = (torch.bfloat16, torch.float16)
# How close to its boundary (a ratio of 1, a measure at the tolerance) a float32 figure may
# fall before the decision is taken again in float64. The float32 figures of 16-bit values are
# within a few units in the last place (~2.4e-7 relative), 40x inside this.
MARGIN = 1e-5


def _narrow_fits(oc, ec, bound):
    """Whether two chunks may take _narrow_chunk: both of one 16-bit float dtype, and a bound
    whose float32 denominator (atol + rtol |exp|) can neither underflow (atol a normal float32)
    nor overflow (rtol <= 1)."""
    return (oc.dtype == ec.dtype and oc.dtype in _NARROW
            and (bound is None or (bound[0] >= 1e-30 and 0.0 <= bound[1] <= 1.0)))


def _narrow_chunk(oc, ec, bound):
    """_finite_chunk's figures for two 16-bit float chunks, in float32: 16-bit values are exact
    in float32, their difference is within half a float32 ulp, the norms accumulate in float64.
    The float64 path moves ~174 bytes an element, this one ~76: on an H200 a 0.5 G-element bf16
    output took 26.7 ms against 38.1 (docs/PERF.md, session 27). What stays exact: the worst element's ratio, out and expected
    values, taken again in float64 from its own two values, and every decision, because a chunk
    whose float32 worst ratio lies within MARGIN of 1 returns None (the float64 path takes it),
    as does one with anything non-finite (a NaN or Inf, or a difference beyond float32's range).
    The largest |difference| and the norms may differ from float64's in the last float32 bits;
    compare() takes a measure that lands within MARGIN of its tolerance again in float64."""
    d = oc.float().sub_(ec)
    lo, hi = torch.aminmax(d)
    if bound is None:
        r = d.abs()
    else:
        atol, rtol = bound
        r = ec.abs().float().mul_(rtol).add_(atol)
        torch.div(d, r, out=r).abs_()
    k = torch.argmax(r)
    f64 = torch.float64
    lo, hi, rk, k, out_k, exp_k, dn, en = torch.stack([
        lo.to(f64), hi.to(f64), r[k].to(f64), k.to(f64), oc[k].to(f64), ec[k].to(f64),
        torch.linalg.vector_norm(d, dtype=f64), torch.linalg.vector_norm(ec, dtype=f64)]).tolist()
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return _narrow_figures(max(-lo, hi), rk, k, out_k, exp_k, dn, en, bound)


def _narrow_figures(absmax, rk, k, out_k, exp_k, dn, en, bound):
    """A narrow path's float32 figures (_narrow_chunk's, compare_fused's) as _finite_chunk gives
    them, or None where the float64 path must decide: a figure not finite, or a worst ratio
    within MARGIN of 1. The worst element's ratio is taken again in float64 from its values."""
    if not all(math.isfinite(x) for x in (absmax, rk, dn, en)):
        return None
    if bound is not None and abs(rk - 1.0) <= MARGIN:
        return None
    dk = out_k - exp_k  # exact in float64, as the general path's
    ratio = abs(dk) if bound is None else abs(dk) / (bound[0] + bound[1] * abs(exp_k))
    return absmax, ratio, k, out_k, exp_k, dn, en


# The fused comparison of 16-bit outputs on the GPU (compare_fused.Lazy), when the judge turns it
# on (Options.fused_compare): one kernel over the whole tensors in place of _narrow_chunk's.
_FUSED = None


def use_fused(fused):
    """Sets (or, with None, clears) the fused comparison for every later compare()."""
    global _FUSED
    _FUSED = fused


def _fused_whole(o, e, bound):
    """_narrow_chunk's figures for the whole of two 16-bit tensors from the fused kernel, or None
    (no kernel, not its case, or a figure the float64 path must decide: the chunks then go their
    usual way)."""
    if _FUSED is None or not e.numel() or not _narrow_fits(o, e, bound):
        return None
    of = o.detach().to(e.device).contiguous().reshape(-1)
    ef = e.detach().contiguous().reshape(-1)
    got = _FUSED.figures(of, ef, bound)
    if got is None or got[0]:  # no figures, or a NaN, an Inf or an overflow among the elements
        return None
    _, absmax, rk, k, out_k, exp_k, dn, en = got
    return _narrow_figures(absmax, rk, k, out_k, exp_k, dn, en, bound)


def _compare_values(o, e, spec, rowwise, bound=None, exact=False):
    """Over the whole tensors, chunk by chunk: (reason or None, absmax, sum of squared
    differences, sum of squared expected values, per-row errors when rowwise, the worst
    element against `bound` (a _Worst) or None, whether a chunk's figures were float32's).
    With `exact`, every chunk in float64."""
    fmt = spec.dtype
    cols = e.shape[-1] if e.dim() >= 1 else 1
    absmax, dd, ee, row_errs = 0.0, 0.0, 0.0, []
    mismatches, first = 0, None
    worst = _Worst()
    narrowed = False
    whole = None if exact or rowwise else _fused_whole(o, e, bound)
    if whole is not None and _FUSED.trusted:
        absmax, ratio, k, out_k, exp_k, dn, en = whole
        worst.offer(ratio, int(k), out_k, exp_k)
        return None, absmax, dn ** 2, en ** 2, row_errs, worst, True
    for oc, ec, start in _chunks(o, e, cols):
        fast, of, ef = None, None, None
        if not exact and not rowwise and oc.numel() and _narrow_fits(oc, ec, bound):
            fast = _narrow_chunk(oc, ec, bound)
            narrowed = narrowed or fast is not None
        if fast is None:
            of, ef = _as_f64(oc, fmt), _as_f64(ec, fmt)
            if not rowwise and of.numel():
                fast = _finite_chunk(of, ef, bound)
        if fast is not None:
            cmax, ratio, k, out_k, exp_k, dn, en = fast
            absmax = max(absmax, cmax)
            worst.offer(ratio, start + int(k), out_k, exp_k)
            dd += dn ** 2
            ee += en ** 2
            continue
        fin = torch.isfinite(ef)
        if bool(fin.all()) and bool(torch.isfinite(of).all()):
            d, ez = of - ef, ef  # the common case: nothing non-finite to match or mask
        else:
            n, f = _nonfinite_mismatch(of, ef)
            if n:
                mismatches += n
                if first is None:
                    first = start + f
                continue
            d = torch.where(fin, of - ef, torch.zeros_like(ef))
            ez = torch.where(fin, ef, torch.zeros_like(ef))
        if d.numel():
            absmax = max(absmax, float(d.abs().max()))
            if worst is not None:
                worst.take(d, of, ef, start, bound)
        if rowwise:
            if cols == 0 or d.numel() == 0:
                continue
            dn = d.reshape(-1, cols).norm(dim=1)
            en = ez.reshape(-1, cols).norm(dim=1)
            row_errs.append(torch.where(en > 0, dn / torch.where(en > 0, en, torch.ones_like(en)),
                                        torch.where(dn > 0, torch.full_like(dn, math.inf), torch.zeros_like(dn))).cpu())
        else:
            dd += float(d.norm()) ** 2
            ee += float(ez.norm()) ** 2
    if whole is not None:  # the fused kernel's first figures, held to these before it is trusted
        _FUSED.settle(*_agree(whole, absmax, dd, ee, worst))
    if mismatches:
        where = _unravel(first, list(e.shape)) if e.dim() else []
        return ("output %r: NaN/Inf pattern differs from the reference at %d positions (first at index %s)"
                % (spec.name, mismatches, where)), math.inf, dd, ee, row_errs, worst, narrowed
    return None, absmax, dd, ee, row_errs, worst, narrowed


def _agree(whole, absmax, dd, ee, worst):
    """(whether, and if not where) the fused figures of a whole tensor are the torch path's: within
    1e-6 relative, what the two float32 paths may differ by (a chunk the torch path took in float64,
    the sums' order); a kernel that computes something else misses by far more."""
    f_absmax, f_ratio, _, _, _, dn, en = whole
    pairs = (("absmax", f_absmax, absmax), ("worst ratio", f_ratio, worst.ratio),
             ("sum of squared differences", dn ** 2, dd), ("sum of squared expected values", en ** 2, ee))
    off = ["%s %r against %r" % (name, f, t) for name, f, t in pairs if abs(f - t) > 1e-6 * max(abs(f), abs(t))]
    return not off, "; ".join(off)


def _rel(dd, ee):
    """||out - exp|| / ||exp|| from the two sums of squares."""
    dn, en = math.sqrt(dd), math.sqrt(ee)
    return dn / en if en > 0 else (0.0 if dn == 0 else math.inf)


def compare(outs, exps, specs, comparator, tolerance, row_pass=1.0, device=None, strict_dtype=True, bound=None):
    """Verdict for outputs `outs` against expected `exps` (lists in the same order); with
    `bound` = (atol, rtol), every element is also held to atol + rtol * |expected|."""
    if len(outs) != len(exps):
        return Verdict(False, math.inf, math.inf, "returned %d outputs, expected %d" % (len(outs), len(exps)))
    worst_rel, worst_abs = 0.0, 0.0
    reasons = []
    if comparator == "exact":
        bound = None
    bound_ratio, worst_doc, worst_ratio = (0.0 if bound is not None else None), None, 0.0
    for o, e, spec in zip(outs, exps, specs):
        why = structure(o, e, repr(spec.name), device, strict_dtype)
        if why:
            return Verdict(False, math.inf, math.inf, why)
        if comparator == "exact":
            n, absmax = _compare_exact(o, e, spec)
            worst_abs = max(worst_abs, absmax)
            worst_rel = max(worst_rel, n / max(o.numel(), 1))
            if n:
                reasons.append("output %r differs from the exact expected value in %d of %d elements" % (spec.name, n, o.numel()))
            continue
        rowwise = comparator == "rowwise"
        why, absmax, dd, ee, row_errs, worst, narrowed = _compare_values(o, e, spec, rowwise, bound)
        if not why and narrowed and abs(_rel(dd, ee) - tolerance) <= MARGIN * tolerance:
            # float32's measure too close to the tolerance to decide by: the float64 one decides
            why, absmax, dd, ee, row_errs, worst, _ = _compare_values(o, e, spec, rowwise, bound, exact=True)
        if why:
            return Verdict(False, math.inf, math.inf, why)
        worst_abs = max(worst_abs, absmax)
        if worst is not None and worst.flat is not None and (worst_doc is None or worst.ratio > worst_ratio):
            worst_ratio = worst.ratio
            if bound is not None:
                bound_ratio = worst.ratio
            worst_doc = {"output": spec.name, "index": _unravel(worst.flat, list(e.shape)) if e.dim() else [],
                         "out": worst.out, "expected": worst.exp}
        if comparator == "rowwise":
            if not row_errs:
                continue
            err = torch.cat(row_errs)
            passing = float((err <= tolerance).to(torch.float64).mean())
            q = float(torch.quantile(err.clamp(max=1e300), min(max(row_pass, 0.0), 1.0)))
            worst_rel = max(worst_rel, q)
            if passing < row_pass:
                reasons.append("output %r: %.4f of rows within %g, need %g (row error at the row_pass quantile %.3e)"
                               % (spec.name, passing, tolerance, row_pass, q))
            continue
        rel = _rel(dd, ee)
        worst_rel = max(worst_rel, rel)
        if not rel <= tolerance:
            reasons.append("output %r: relative Frobenius error %.3e exceeds %g" % (spec.name, rel, tolerance))
    if comparator == "exact" and tolerance > 0 and worst_rel <= tolerance:
        reasons = []  # a task may allow a small fraction of differing elements
    if bound_ratio is not None and not bound_ratio <= 1.0:
        w = worst_doc
        reasons.append("output %r at index %s is %.6g where the reference has %.6g: |difference| %.3g exceeds "
                       "atol %g + rtol %g x |reference| = %.3g (the board's elementwise bound; %.2fx over)"
                       % (w["output"], w["index"], w["out"], w["expected"], abs(w["out"] - w["expected"]), bound[0], bound[1],
                          bound[0] + bound[1] * abs(w["expected"]), bound_ratio))
    return Verdict(not reasons, worst_rel, worst_abs, "; ".join(reasons), bound_ratio, worst_doc)


def measure(outs, exps, specs, comparator, row_pass=1.0):
    """The comparator's measure alone (for calibration): error_rel with a tolerance of 0."""
    v = compare(outs, exps, specs, comparator, 0.0, row_pass, strict_dtype=False)
    return v.error_rel
