import triton

# pasted from the perf_report run
perf = {"N": [1024, 2048, 4096], "triton_ms": [0.0123, 0.0456, 0.1789], "torch_ms": [0.0201, 0.0712, 0.2831]}
