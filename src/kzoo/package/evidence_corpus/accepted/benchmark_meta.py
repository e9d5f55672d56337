import sys

KERNEL_ZOO_TEST_CASE_METAS = [
    {
        "test_case_id": "rows8192_cols8192",
        "params": {"shape": {"M": 8192, "N": 8192}, "dtype": "bfloat16"},
        "primary_metric": "latency_us",
        "metrics": [
            {"name": "latency_us", "unit": "us", "direction": "lower"},
            {"name": "bandwidth_gbps", "unit": "GB/s", "direction": "higher"},
        ],
        "tolerance": {"correctness_atol": 1.6e-2, "correctness_rtol": 1.6e-2},
    },
]

if __name__ == "__main__":
    from kzoo_judge.entry import run_package_benchmark

    sys.exit(run_package_benchmark(KERNEL_ZOO_TEST_CASE_METAS))
