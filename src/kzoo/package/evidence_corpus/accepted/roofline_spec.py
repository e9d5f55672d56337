"""Roofline bounds for the report the judge prints.

Datasheet peaks (dense, no sparsity), per device.
"""

PEAK = {
    "H100-SXM": {"hbm_tbps": 3.35, "bf16_tflops": 989.4, "fp8_tflops": 1978.9},
    "H200": {"hbm_tbps": 4.8, "bf16_tflops": 989.4, "fp8_tflops": 1978.9},
    "A100-SXM": {"hbm_tbps": 2.039, "bf16_tflops": 312.0, "fp8_tflops": 0.0},
}


def memory_bound_us(bytes_moved: int, device: str) -> float:
    return bytes_moved / (PEAK[device]["hbm_tbps"] * 1e12) * 1e6
