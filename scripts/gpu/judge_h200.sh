#!/usr/bin/env bash
# The judge's figures on a GPU machine, in one device call (docs/PERF.md "Judge on an H200").
# Runs from the repository root with .device/ carried, built on the Debian 12 machine:
#   .device/bin/kzoo (stripped), .device/lib/ (the shared libraries `ldd build/kzoo` lists, glibc's
#   left out) and Debian's bubblewrap .deb (`apt-get download bubblewrap`), unpacked here with dpkg -x.
#   usage: bash scripts/gpu/judge_h200.sh STEP...   steps: tests, grade:TASK[:TAG], ncu:TASK[:none], events:TASK
# Each step has its own timeout; everything lands under $OUT; a summary table is printed last.
set -u
OUT=${OUT:-/tmp/kzoo-out}; mkdir -p "$OUT"
PY=${KZOO_PYTHON:-/opt/torch/.venv/bin/python3}
mkdir -p /tmp/bw && dpkg -x .device/bubblewrap_*.deb /tmp/bw
export KZOO_BWRAP=/tmp/bw/usr/bin/bwrap LD_LIBRARY_PATH=$PWD/.device/lib KZOO_PYTHON=$PY
K=.device/bin/kzoo
S="$OUT/summary.txt"
pkg_of() {
  case $1 in
    softmax) echo catalog/kernel_data/h200/norm/softmax/bf16/softmax_eager ;;
    rmsnorm-residual) echo catalog/kernel_data/h200/norm/rmsnorm/bf16/rmsnorm_residual_eager ;;
    fp8-blockscale-gemm) echo catalog/kernel_data/h200/gemm/blockscale/fp8/fp8_blockscale_gemm_eager ;;
  esac
}
now() { date +%s.%N; }
since() { "$PY" -c "import sys; print(round($(now) - $1, 1))"; }
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  "$PY" -c 'import torch,sys; print(sys.executable, torch.__version__)'; } > "$OUT/env.txt" 2>&1
for step in "$@"; do
  IFS=: read -r kind task tag <<<"$step"
  t0=$(now)
  case $kind in
    tests)  # the judge's GPU tests: CUDA IPC, events, L2 flush, the GPU-only tricks
      (cd judge && timeout 240 "$PY" -m unittest -v tests.test_exploits.GpuTricks tests.test_judge.OnTheGpu \
        tests.test_judge.HardenedJudgeOnTheGpu) > "$OUT/gpu_tests.txt" 2>&1
      echo "tests rc=$? wall_s=$(since "$t0") $(tail -1 "$OUT/gpu_tests.txt")" >> "$S" ;;
    grade)  # kzoo grade in the sandbox, default 100 timed calls per case
      f="$OUT/grade_${task}${tag:+_$tag}"
      timeout "${GRADE_TIMEOUT:-280}" $K grade "$(pkg_of "$task")" --device cuda --json --catalog catalog --judge-dir judge \
        --python "$PY" --timeout "$(( ${GRADE_TIMEOUT:-280} - 10 ))" -v > "$f.json" 2> "$f.err"
      echo "grade $task ${tag:-} rc=$? wall_s=$(since "$t0")" >> "$S"
      grep -o '"message": "median [^;"]*' "$f.json" | sed 's/^/    /' >> "$S"
      grep 'kzoo-judge: time:' "$f.err" | tail -1 | sed 's/^/    /' >> "$S" ;;
    events)  # the same package timed in-process with CUDA events, three ways (events_eager.py)
      timeout 200 "$PY" scripts/gpu/events_eager.py "catalog/tasks/$task/task.json" "$(pkg_of "$task")/src" 0 30 \
        > "$OUT/events_$task.txt" 2>&1
      echo "events $task rc=$? wall_s=$(since "$t0") $(tail -1 "$OUT/events_$task.txt")" >> "$S" ;;
    ncu)  # Nsight Compute's summed kernel time per call, eager baseline, graded shape 0
      timeout 200 ncu --profile-from-start off --clock-control none --cache-control "${tag:-all}" \
        --metrics gpu__time_duration.sum --csv "$PY" scripts/gpu/ncu_eager.py \
        "catalog/tasks/$task/task.json" "$(pkg_of "$task")/src" 0 5 > "$OUT/ncu_$task.csv" 2> "$OUT/ncu_$task.err"
      echo "ncu $task cache-control=${tag:-all} rc=$? wall_s=$(since "$t0") per_call_us,kernels=$("$PY" scripts/gpu/ncu_sum.py "$OUT/ncu_$task.csv" 5)" >> "$S" ;;
  esac
done
cat "$S"
