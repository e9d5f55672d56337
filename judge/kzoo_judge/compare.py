"""Comparators: is an output close enough to the reference's?

Runs only in the judge process, on tensors the judge cloned out of shared
memory. All arithmetic is float64. Structure is checked before values; then
non-finite values must match position by position (a NaN in the expected
output is never a wildcard, and an Inf must have the same sign), and the
comparator's measure is taken over the finite positions.

Measures (the number compared with grading.tolerance.value):
- relative-frobenius: ||out - exp||_F / ||exp||_F, worst output of a tuple;
- relative-frobenius-tuple-max: the same, max over the tuple (identical
  rule, stated explicitly by the task);
- rowwise: per-row (last dim) relative error; passes when the fraction of
  rows within the tolerance is >= row_pass; the measure reported is the
  row_pass-quantile of the row errors;
- exact: bitwise equality (NaN positions must be NaN on both sides); the
  measure is the fraction of differing elements.
"""

import math

import torch

from . import dtypes


class Verdict:
    def __init__(self, ok, error_rel, error_abs_max, reason=""):
        self.ok = ok
        self.error_rel = error_rel
        self.error_abs_max = error_abs_max
        self.reason = reason

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


def _nonfinite_mismatch(o, e):
    """Count of positions where the NaN/Inf patterns differ, and the first such index."""
    bad = (torch.isnan(o) != torch.isnan(e))
    inf_e = torch.isinf(e)
    inf_o = torch.isinf(o)
    bad |= inf_e != inf_o
    bad |= inf_e & inf_o & (torch.sign(o) != torch.sign(e))
    n = int(bad.sum())
    first = None
    if n:
        first = [int(i) for i in torch.nonzero(bad.reshape(e.shape))[0]] if e.dim() else []
    return n, first


def _exact(o, e, fmt):
    ob = o.contiguous().view(torch.uint8) if o.dtype != torch.bool else o.to(torch.uint8)
    eb = e.contiguous().view(torch.uint8) if e.dtype != torch.bool else e.to(torch.uint8)
    if o.is_floating_point() or fmt in dtypes.FLOAT8:
        of, ef = _as_f64(o, fmt), _as_f64(e, fmt)
        both_nan = torch.isnan(of) & torch.isnan(ef)
        diff_el = (of != ef) & ~both_nan
        # bitwise on top of value equality: -0.0 vs 0.0 differs too
        w = o.element_size()
        bitdiff = (ob.reshape(-1, w) != eb.reshape(-1, w)).any(dim=1).reshape(o.shape) if o.numel() else diff_el
        diff_el = (diff_el | bitdiff) & ~both_nan
    else:
        w = o.element_size()
        diff_el = (ob.reshape(-1, w) != eb.reshape(-1, w)).any(dim=1).reshape(o.shape) if o.numel() else torch.zeros(o.shape, dtype=torch.bool)
    return int(diff_el.sum())


def compare(outs, exps, specs, comparator, tolerance, row_pass=1.0, device=None, strict_dtype=True):
    """Verdict for outputs `outs` against expected `exps` (lists in the same order)."""
    if len(outs) != len(exps):
        return Verdict(False, math.inf, math.inf, "returned %d outputs, expected %d" % (len(outs), len(exps)))
    worst_rel, worst_abs = 0.0, 0.0
    reasons = []
    for o, e, spec in zip(outs, exps, specs):
        why = structure(o, e, repr(spec.name), device, strict_dtype)
        if why:
            return Verdict(False, math.inf, math.inf, why)
        o = o.detach().cpu()
        e = e.detach().cpu()
        fmt = spec.dtype
        if comparator == "exact":
            n = _exact(o, e, fmt) if o.dtype == e.dtype else int(((_as_f64(o, fmt) != _as_f64(e, fmt))
                                                                   & ~(torch.isnan(_as_f64(o, fmt)) & torch.isnan(_as_f64(e, fmt)))).sum())
            of, ef = _as_f64(o, fmt), _as_f64(e, fmt)
            fin = torch.isfinite(of) & torch.isfinite(ef)
            absmax = float((of - ef)[fin].abs().max()) if bool(fin.any()) else 0.0
            worst_abs = max(worst_abs, absmax)
            frac = n / max(o.numel(), 1)
            worst_rel = max(worst_rel, frac)
            if n:
                reasons.append("output %r differs from the exact expected value in %d of %d elements" % (spec.name, n, o.numel()))
            continue
        of, ef = _as_f64(o, fmt), _as_f64(e, fmt)
        n, first = _nonfinite_mismatch(of, ef)
        if n:
            return Verdict(False, math.inf, math.inf,
                           "output %r: NaN/Inf pattern differs from the reference at %d positions (first at index %s)" % (spec.name, n, first))
        fin = torch.isfinite(ef)
        d = torch.where(fin, of - ef, torch.zeros_like(ef))
        ez = torch.where(fin, ef, torch.zeros_like(ef))
        absmax = float(d.abs().max()) if d.numel() else 0.0
        worst_abs = max(worst_abs, absmax)
        if comparator == "rowwise":
            cols = ef.shape[-1] if ef.dim() >= 1 else 1
            rows = ef.numel() // max(cols, 1) if ef.numel() else 0
            if rows == 0:
                continue
            dn = d.reshape(rows, cols).norm(dim=1)
            en = ez.reshape(rows, cols).norm(dim=1)
            err = torch.where(en > 0, dn / torch.where(en > 0, en, torch.ones_like(en)),
                              torch.where(dn > 0, torch.full_like(dn, math.inf), torch.zeros_like(dn)))
            passing = float((err <= tolerance).to(torch.float64).mean())
            q = float(torch.quantile(err.clamp(max=1e300), min(max(row_pass, 0.0), 1.0))) if rows > 0 else 0.0
            worst_rel = max(worst_rel, q)
            if passing < row_pass:
                reasons.append("output %r: %.4f of rows within %g, need %g (row error at the row_pass quantile %.3e)"
                               % (spec.name, passing, tolerance, row_pass, q))
            continue
        dn = float(d.norm())
        en = float(ez.norm())
        rel = dn / en if en > 0 else (0.0 if dn == 0 else math.inf)
        worst_rel = max(worst_rel, rel)
        if not rel <= tolerance:
            reasons.append("output %r: relative Frobenius error %.3e exceeds %g" % (spec.name, rel, tolerance))
    if comparator == "exact" and tolerance > 0 and worst_rel <= tolerance:
        reasons = []  # a task may allow a small fraction of differing elements
    return Verdict(not reasons, worst_rel, worst_abs, "; ".join(reasons))


def measure(outs, exps, specs, comparator, row_pass=1.0):
    """The comparator's measure alone (for calibration): error_rel with a tolerance of 0."""
    v = compare(outs, exps, specs, comparator, 0.0, row_pass, strict_dtype=False)
    return v.error_rel
