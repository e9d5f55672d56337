#!/usr/bin/env bash
# Runs on the GPU machine (see docs/PERF.md "Judge on an H200"), from the
# repository root, with .device/ carried: bin/ (kzoo, kzoo_runner_test built on
# Debian 12, stripped), lib/ (the shared libraries ldd lists, glibc's left out)
# and Debian's bubblewrap .deb. Writes everything under $OUT.
#   usage: bash scripts/gpu/validate.sh PACKAGE_DIR TASK_NAME [GRADE_TIMEOUT_S]
set -u
OUT=${OUT:-/tmp/kzoo-out}; mkdir -p "$OUT"
pkg=$1; task=$2; gt=${3:-180}
mkdir -p /tmp/bw && dpkg -x .device/bubblewrap_*.deb /tmp/bw
export KZOO_BWRAP=/tmp/bw/usr/bin/bwrap LD_LIBRARY_PATH=$PWD/.device/lib
K=.device/bin/kzoo
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; python3 -c 'import torch,sys; print(sys.executable, torch.__version__, torch.__file__)'; } > "$OUT/env.txt" 2>&1
# 1. The sandbox on this host (cgroup v2, CUDA through bubblewrap).
timeout 120 .device/bin/kzoo_runner_test --gtest_filter='Sandbox*:Cgroup*' > "$OUT/runner_test.txt" 2>&1
echo "runner_test rc=$?" >> "$OUT/summary.txt"
# 2. The judge through kzoo grade, in the sandbox, on the GPU.
start=$(date +%s.%N)
timeout "$gt" $K grade "$pkg" --device cuda --json --catalog catalog --judge-dir judge -v > "$OUT/grade_$task.json" 2> "$OUT/grade_$task.err"
rc=$?; echo "grade $task rc=$rc wall_s=$(python3 -c "import time; print(round(time.time() - $start, 1))")" >> "$OUT/summary.txt"
# 3. Nsight Compute's summed kernel time for the eager baseline, graded shape 0.
timeout 120 ncu --profile-from-start off --clock-control none --cache-control all \
  --metrics gpu__time_duration.sum --csv python3 scripts/gpu/ncu_eager.py \
  catalog/tasks/$task/task.json "$pkg/src" 0 5 > "$OUT/ncu_$task.csv" 2> "$OUT/ncu_$task.err"
echo "ncu $task rc=$? per_call_us,kernels=$(python3 scripts/gpu/ncu_sum.py "$OUT/ncu_$task.csv" 5)" >> "$OUT/summary.txt"
grep -o '"message": "median [^;"]*' "$OUT/grade_$task.json" >> "$OUT/summary.txt"
cat "$OUT/summary.txt"
