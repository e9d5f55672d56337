#!/usr/bin/env python3
"""compare.py's two ways with a 16-bit output on the GPU: the torch path (_narrow_chunk, chunk by
chunk) and the fused kernel (compare_fused.py), timed on the same tensors, with their verdicts
side by side (they must agree: error_rel within 1e-12, everything else to the bit).

Per size: a bf16 (or --dtype float16) expected output from randn, an output within ~1% of it,
the board's bound (atol 1e-2, rtol 1e-2); each way best of --repeat, the device synchronised
around each compare() call (a compare() ends in a host read anyway). --blocks-per-sm tries the
fused kernel's grid at several sizes (compare_fused.BLOCKS_PER_SM, 256 threads a block).

Usage (GPU machine, repository root):
  python3 scripts/gpu/compare_probe.py [--elements 536870912 ...] [--dtype bfloat16] [--repeat 5] [--blocks-per-sm 4 ...]
"""
import argparse
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "judge"))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--elements", type=int, action="append", help="output elements (repeatable; default 2^29 and 2^24)")
    ap.add_argument("--cols", type=int, default=4096)
    ap.add_argument("--dtype", choices=("bfloat16", "float16"), default="bfloat16")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--blocks-per-sm", type=int, action="append", help="the fused kernel's blocks an SM (default 4)")
    a = ap.parse_args()
    import torch
    from kzoo_judge import compare, compare_fused
    from kzoo_judge.task import TensorSpec
    dtype = getattr(torch, a.dtype)
    spec = TensorSpec({"name": "y", "shape": ["R", "C"], "dtype": a.dtype}, "probe")
    bound = (1e-2, 1e-2)
    print("compare_probe: %s, %s, bound %s" % (torch.cuda.get_device_name(0), a.dtype, bound))
    for n in a.elements or [1 << 29, 1 << 24]:
        rows = max(1, n // a.cols)
        g = torch.Generator(device="cuda").manual_seed(n)
        exp = torch.randn(rows, a.cols, device="cuda", generator=g).to(dtype)
        out = (exp.float() * (1 + 1e-3 * torch.randn(rows, a.cols, device="cuda", generator=g))).to(dtype)
        torch.cuda.synchronize()

        def timed(fused):
            compare.use_fused(fused)
            try:
                best, v = math.inf, None
                for _ in range(a.repeat):
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    v = compare.compare([out], [exp], [spec], "relative-frobenius", 1e-2, bound=bound)
                    torch.cuda.synchronize()
                    best = min(best, time.perf_counter() - t0)
                return best * 1e3, v
            finally:
                compare.use_fused(None)

        torch_ms, want = timed(None)
        print("  %11d elements: torch path %8.2f ms  (error_rel %.9e, bound_ratio %.9e, worst %s)"
              % (rows * a.cols, torch_ms, want.error_rel, want.bound_ratio, want.worst))
        for bps in a.blocks_per_sm or [compare_fused.BLOCKS_PER_SM]:
            compare_fused.BLOCKS_PER_SM = bps
            said = []
            lazy = compare_fused.Lazy(said.append)
            ms, got = timed(lazy)
            # A fused path that turned itself off answered through the torch path: the same
            # verdict, but not the kernel's, so it does not count as agreeing.
            same = lazy.trusted and not said and (got.ok == want.ok and got.reason == want.reason and got.error_abs_max == want.error_abs_max
                    and got.bound_ratio == want.bound_ratio and got.worst == want.worst
                    and math.isclose(got.error_rel, want.error_rel, rel_tol=1e-12))
            print("  %11s           fused, %d blocks/SM %8.2f ms  %.1fx  %s%s" % (
                "", bps, ms, torch_ms / ms if ms else 0, "same verdict and figures" if same else "DIFFERS (trusted %s): %r" % (lazy.trusted, got.__dict__),
                ("; " + "; ".join(said)) if said else ""))
        del exp, out
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
