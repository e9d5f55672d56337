def achieved_bandwidth(nbytes: int, ms: float) -> float:
    """GB/s moved in `ms` milliseconds (1 GB = 1e9 bytes).

    Args:
        nbytes: bytes read plus bytes written.
        ms: the kernel's time in milliseconds, e.g. from triton.testing.do_bench.
    """
    return nbytes / (ms * 1e-3) / 1e9
