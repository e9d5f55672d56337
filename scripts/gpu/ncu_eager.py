#!/usr/bin/env python3
"""Runs a package's entry point at one graded shape under Nsight Compute.

Usage (on the GPU machine, from the repository root):
  ncu --profile-from-start off --clock-control none --cache-control all \
      --metrics gpu__time_duration.sum --csv \
      python3 scripts/gpu/ncu_eager.py TASK.json SRC_DIR SHAPE_INDEX [CALLS]

Inputs come from the judge's own generator (fresh seed per call), the calls
are made between cudaProfilerStart/Stop after a warm-up, so ncu sees exactly
CALLS calls; scripts/gpu/ncu_sum.py divides the summed kernel time by CALLS.
This is the independent cross-check of the judge's median (issue: within 1%).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from eager_package import load  # noqa: E402
from kzoo_judge import inputs  # noqa: E402


def main():
    task_path, src_dir, shape_index = sys.argv[1], sys.argv[2], int(sys.argv[3])
    calls = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    task, name, dims, fn = load(task_path, src_dir, shape_index)
    sets = [inputs.make_inputs(task, dims, 1000 + i, "cuda") for i in range(calls + 2)]
    for s in sets[:2]:
        fn(*s)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for s in sets[2:]:
        fn(*s)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
    print("ncu_eager: %s workload %s shape %s, %d calls" % (task.name, name, dims, calls), file=sys.stderr)


if __name__ == "__main__":
    main()
