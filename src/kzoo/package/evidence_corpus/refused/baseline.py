"""Regression baselines: fail if the kernel gets slower than these."""

BASELINE_MS = {
    "rows4096_cols4096": 0.1783,
    "rows8192_cols16384": 1.4119,
    "rows1024_cols65536": 0.7207,
}


def check(case, ms):
    assert ms <= 1.05 * BASELINE_MS[case], (case, ms)
