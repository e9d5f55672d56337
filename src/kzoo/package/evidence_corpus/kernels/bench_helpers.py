"""Timing helpers for local experiments (kzoo measures submissions itself)."""
from dataclasses import dataclass

import torch
import triton


@dataclass
class Timing:
    ms: float
    gbps: float


def time_kernel(fn, nbytes: int, warmup: int = 25, rep: int = 100) -> Timing:
    """Median time of `fn` in ms (triton.testing.do_bench) and the bandwidth it implies."""
    ms = triton.testing.do_bench(fn, warmup=warmup, rep=rep, return_mode="median")
    return Timing(ms=ms, gbps=nbytes / (ms * 1e-3) / 1e9)


def report(name: str, t: Timing) -> str:
    return f"{name:<24} {t.ms * 1e3:9.2f} us {t.gbps:8.1f} GB/s"


def l2_flush(size_mb: int = 256) -> None:
    """Evict L2 between runs by writing a buffer larger than it."""
    buf = torch.empty(size_mb * (1 << 20), dtype=torch.int8, device="cuda")
    buf.zero_()
