# Device smoke test of a cuda1-style variant: python3 smoke_cuda1.py VARIANT_DIR [timing].
# A few shapes on the kernel path against the task's reference (the board's bound 0.3 + 0.01|ref|),
# then events timing at the first graded shape. Prints one line per check.
import importlib.util
import json
import os
import sys
import time

import torch

src = sys.argv[1]
t0 = time.time()
spec = importlib.util.spec_from_file_location("v", os.path.join(src, "fp8_blockscale_gemm.py"))
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
print("import+build %.1f s" % (time.time() - t0), flush=True)
task = json.load(open("catalog/tasks/fp8-blockscale-gemm/task.json"))
ns = {}
exec(task["definition"]["reference"]["source"], ns)
ref = ns["fp8_blockscale_gemm"]


def inputs(M, N, K):
    f8 = torch.float8_e4m3fn
    A = (torch.randn(M, K, device="cuda") * 2).to(f8)
    B = (torch.randn(N, K, device="cuda") * 2).to(f8)
    nkb = -(-K // 128)
    sa = torch.pow(2.0, torch.randint(-3, 3, (M, nkb), device="cuda").float())
    sb = torch.pow(2.0, torch.randint(-3, 3, (-(-N // 128), nkb), device="cuda").float())
    return A, sa, B, sb


# (300, 184, 512) and (300, 150, 512): an odd count of 128-row tiles and a last 128-column tile
# whose upper 64 rows of B lie past N (c128's cluster loads neither box), through the TMA-store
# epilogue (N % 8 == 0) and the register one.
for M, N, K in [(1, 128, 128), (256, 384, 512), (129, 257, 1008), (64, 128, 4112), (300, 200, 256),
                (300, 184, 512), (300, 150, 512), (1000, 1000, 2048), (2048, 2048, 8192)]:
    x = inputs(M, N, K)
    o = m.fp8_blockscale_gemm(*x).float()
    torch.cuda.synchronize()
    r = ref(*x).float()
    ratio = ((o - r).abs() / (0.3 + 0.01 * r.abs())).max().item()
    rel = ((o - r).norm() / r.norm()).item()
    print("shape %s bound_ratio %.3f relfro %.2e %s" % ((M, N, K), ratio, rel, "ok" if ratio <= 1 else "FAIL"), flush=True)
    if (M, N, K) == (1, 128, 128) and hasattr(m._lib, "kzoo_fp8_grid"):  # c128: the launch shape
        import ctypes
        v = [ctypes.c_int() for _ in range(3)]
        m._lib.kzoo_fp8_grid(*[ctypes.byref(x) for x in v])
        print("grid: cluster %d, clusters resident %d, smem %d B" % tuple(x.value for x in v), flush=True)
if len(sys.argv) > 2:
    for M, N, K in task["workloads"]["synthetic"]["graded"]:
        x = inputs(M, N, K)
        for _ in range(3):
            m.fp8_blockscale_gemm(*x)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(10):
            m.fp8_blockscale_gemm(*x)
        e1.record()
        torch.cuda.synchronize()
        us = e0.elapsed_time(e1) * 100
        print("time %s %.0f us (%.0f%% of 555.6)" % ((M, N, K), us, 100 * 555.6 / us), flush=True)
