#!/usr/bin/env bash
# The judge's figures on a GPU machine, in one device call (docs/PERF.md "Judge on an H200").
# Runs from the repository root with .device/ carried, built on the Debian 12 machine:
#   .device/bin/kzoo (stripped), .device/lib/ (the shared libraries `ldd build/kzoo` lists, glibc's
#   left out) and Debian's bubblewrap .deb (`apt-get download bubblewrap`), unpacked here with dpkg -x.
#   usage: bash scripts/gpu/judge_h200.sh STEP...
#   steps: tests, grade:TASK[:TAG], ncu:TASK[:none], events:TASK, iso:TASK (isolated_eager.py),
#          ipc:TASK (ipc_eager.py), variants:TASK:V1,V2 (judge_variants.py), tail:TASK (tail_eager.py), judge:TASK (the judge without the sandbox), nsys:TASK (kernels AND memcpys in-stream, where nsys is installed)
# Each step has its own timeout; everything lands under $OUT; a summary table is printed last.
# JUDGE_DIR (default judge) picks the judge the steps use: a second checkout's judge/ copied into the
# working tree (untracked, e.g. judge_b/) lets one device call compare two judges, step by step.
set -u
OUT=${OUT:-/tmp/kzoo-out}; mkdir -p "$OUT"
PY=${KZOO_PYTHON:-/opt/torch/.venv/bin/python3}
. scripts/gpu/unbundle.sh
export KZOO_PYTHON=$PY
K=.device/bin/kzoo
S="$OUT/summary.txt"
JD=${JUDGE_DIR:-judge}
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
      (cd "$JD" && timeout "${TESTS_TIMEOUT:-360}" "$PY" -m unittest -v tests.test_exploits.GpuTricks tests.test_judge.OnTheGpu \
        tests.test_judge.HardenedJudgeOnTheGpu) > "$OUT/gpu_tests.txt" 2>&1
      echo "tests rc=$? wall_s=$(since "$t0") $(tail -1 "$OUT/gpu_tests.txt")" >> "$S" ;;
    grade)  # kzoo grade in the sandbox, default 100 timed calls per case
      f="$OUT/grade_${task}${tag:+_$tag}${JUDGE_DIR:+_$JD}"
      timeout "${GRADE_TIMEOUT:-280}" $K grade "$(pkg_of "$task")" --device cuda --json --catalog catalog --judge-dir "$JD" \
        --python "$PY" --timeout "$(( ${GRADE_TIMEOUT:-280} - 10 ))" -v > "$f.json" 2> "$f.err"
      echo "grade $task ${tag:-} judge=$JD rc=$? wall_s=$(since "$t0")" >> "$S"
      grep -o '"message": "median [^;"]*' "$f.json" | sed 's/^/    /' >> "$S"
      grep 'kzoo-judge: time:' "$f.err" | tail -1 | sed 's/^/    /' >> "$S" ;;
    events)  # the same package timed in-process with CUDA events, three ways (events_eager.py)
      # with the clocks and power sampled alongside (is the device throttling under a long run?)
      nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active \
        --format=csv -lms 20 > "$OUT/smi_$task.csv" 2>&1 & smi=$!
      timeout 200 "$PY" scripts/gpu/events_eager.py "catalog/tasks/$task/task.json" "$(pkg_of "$task")/src" 0 30 \
        > "$OUT/events_$task.txt" 2>&1
      rc=$?; kill $smi 2>/dev/null
      echo "events $task rc=$rc wall_s=$(since "$t0") $(tail -1 "$OUT/events_$task.txt")" >> "$S"
      "$PY" - "$OUT/smi_$task.csv" >> "$S" <<'PYEOF'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if r and r[0][:1].isdigit()]
def col(i):
    return sorted(float(r[i].split()[0]) for r in rows if r[i].split() and r[i].split()[0].replace(".", "").isdigit())
for name, i in (("sm MHz", 1), ("mem MHz", 2), ("power W", 3)):
    v = col(i)
    if v:
        print("    %s over %d samples: min %.0f, median %.0f, max %.0f" % (name, len(v), v[0], v[len(v) // 2], v[-1]))
reasons = sorted({r[5].strip() for r in rows if len(r) > 5})
print("    clock event reasons seen: %s" % ", ".join(reasons))
PYEOF
      ;;
    judge)  # the judge itself, no sandbox
      f="$OUT/judge_${task}${tag:+_$tag}${JUDGE_DIR:+_$JD}"
      (cd "$JD" && timeout 200 "$PY" -m kzoo_judge run --task "../catalog/tasks/$task/task.json" \
        --module-dir "../$(pkg_of "$task")/src" --device cuda) > "$f.json" 2> "$f.err"
      echo "judge $task ${tag:-} judge=$JD rc=$? wall_s=$(since "$t0")" >> "$S"
      grep -o '"message": "median [^;"]*' "$f.json" | sed 's/^/    /' >> "$S"
      grep 'clocks per timed' "$f.err" | sed 's/^/    /' >> "$S" ;;
    variants)  # the judge with one part of its structure taken away per variant (judge_variants.py)
      timeout "${VARIANTS_TIMEOUT:-240}" "$PY" scripts/gpu/judge_variants.py "$JD" "catalog/tasks/$task/task.json" "$(pkg_of "$task")/src" \
        ${tag//,/ } > "$OUT/variants_$task.txt" 2> "$OUT/variants_$task.err"
      echo "variants $task judge=$JD rc=$? wall_s=$(since "$t0")" >> "$S"; sed 's/^/    /' "$OUT/variants_$task.txt" >> "$S" ;;
    tail)  # what the window's tail is made of: drains after trivial, sleeping and real calls (tail_eager.py)
      timeout 200 "$PY" scripts/gpu/tail_eager.py "catalog/tasks/$task/task.json" "$(pkg_of "$task")/src" 0 30 $tag \
        > "$OUT/tail_$task${tag:+_$tag}.txt" 2>&1
      echo "tail $task rc=$? wall_s=$(since "$t0")" >> "$S"; sed 's/^/    /' "$OUT/tail_$task${tag:+_$tag}.txt" >> "$S" ;;
    ipc)  # inputs in another process's memory (as the judge's child gets them) against local copies
      timeout 200 "$PY" scripts/gpu/ipc_eager.py "catalog/tasks/$task/task.json" "$(pkg_of "$task")/src" 0 20 \
        > "$OUT/ipc_$task.txt" 2>&1
      echo "ipc $task rc=$? wall_s=$(since "$t0") $(grep -h 'ipc inputs' "$OUT/ipc_$task.txt")" >> "$S" ;;
    nsys)  # Nsight Systems: the calls' kernels and memory copies as they ran in the stream (ncu sees kernels only)
      NSYS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)
      if [ -z "$NSYS" ]; then echo "nsys $task: not installed" >> "$S"; continue; fi
      timeout 200 "$NSYS" profile -o "$OUT/nsys_$task" -f true --capture-range=cudaProfilerApi -t cuda \
        "$PY" scripts/gpu/ncu_eager.py "catalog/tasks/$task/task.json" "$(pkg_of "$task")/src" 0 5 > "$OUT/nsys_$task.log" 2>&1
      "$NSYS" stats -q -r cuda_gpu_kern_sum,cuda_gpu_mem_time_sum -f csv -o "$OUT/nsys_$task" "$OUT/nsys_$task.nsys-rep" >> "$OUT/nsys_$task.log" 2>&1
      echo "nsys $task wall_s=$(since "$t0") $("$PY" - "$OUT"/nsys_"$task"_cuda_gpu_kern_sum.csv "$OUT"/nsys_"$task"_cuda_gpu_mem_time_sum.csv <<'PYEOF'
import csv, sys
out = []
for path in sys.argv[1:]:
    try:
        rows = list(csv.DictReader(open(path)))
    except OSError:
        out.append("%s missing" % path.rsplit("_", 1)[-1]); continue
    total = sum(float(r.get("Total Time (ns)", 0) or 0) for r in rows)
    out.append("%s %.1f us/call (%d rows)" % ("kernels" if "kern" in path else "memory ops", total / 5 / 1e3, len(rows)))
print(", ".join(out))
PYEOF
)" >> "$S" ;;
    iso)  # each op of the call alone, as ncu runs kernels, against the whole call in-stream
      timeout 240 "$PY" scripts/gpu/isolated_eager.py "catalog/tasks/$task/task.json" "$(pkg_of "$task")/src" 0 10 \
        > "$OUT/iso_$task.txt" 2>&1
      echo "iso $task rc=$? wall_s=$(since "$t0")" >> "$S"; sed 's/^/    /' "$OUT/iso_$task.txt" >> "$S" ;;
    ncu)  # Nsight Compute's summed kernel time per call, eager baseline, graded shape 0
      timeout 200 ncu --profile-from-start off --clock-control none --cache-control "${tag:-all}" \
        --metrics gpu__time_duration.sum --csv "$PY" scripts/gpu/ncu_eager.py \
        "catalog/tasks/$task/task.json" "$(pkg_of "$task")/src" 0 5 > "$OUT/ncu_$task.csv" 2> "$OUT/ncu_$task.err"
      echo "ncu $task cache-control=${tag:-all} rc=$? wall_s=$(since "$t0") per_call_us,kernels=$("$PY" scripts/gpu/ncu_sum.py "$OUT/ncu_$task.csv" 5 --kernels)" >> "$S" ;;
  esac
done
cat "$S"
