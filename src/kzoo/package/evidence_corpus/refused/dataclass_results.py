from dataclasses import dataclass


@dataclass
class Run:
    shape: tuple
    time_ms: float
    bandwidth_gbps: float


RUNS = [
    Run(shape=(4096, 4096), time_ms=0.1783, bandwidth_gbps=752.6),
    Run(shape=(8192, 8192), time_ms=0.7012, bandwidth_gbps=765.8),
]
