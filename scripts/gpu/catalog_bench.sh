#!/usr/bin/env bash
# The catalog on a GPU machine, in named parts (docs/CATALOG.md, "The H200 table"). Each part fits one
# device call -- under 9 minutes on one H200 for the twelve tasks -- and leaves three files under $OUT:
# PART.jsonl (a `run` line: commit, GPU, torch; then one line per task and graded shape), PART.txt (the
# steps with their times, and what the deadline skipped) and PART_logs.tar.gz (every log).
#   PART=calibrate  E and D on the GPU torch (`kzoo task calibrate --device cuda`) and the tolerance checked
#                   against honest fast-math variants (catalog_helper.py fastmath: the solution, and the
#                   reference with reduced-precision matmuls), JOBS at a time; each line proposes a tolerance.
#   PART=compile    torch.compile(mode="max-autotune") of each reference compiled and autotuned JOBS at a time
#                   into a shared inductor cache, nothing timed; then, one task at a time on the quiet GPU,
#                   timed from that cache with the roofline, the fp32 reference run eagerly and, for T4 tasks,
#                   the vendor library (catalog_helper.py time: CUDA events, L2 flushed, median).
#   PART=eager      each eager package (catalog/kernel_data) graded by `kzoo grade --device cuda --json` in the
#                   sandbox, then, in the time left, timed in-process with CUDA events (catalog_helper.py events).
#   PART=solutions  each GPU solution (catalog/solutions/gpu) the same two ways.
#   PART=ceiling    the GPU's bandwidth ceiling for each memory-bound task (tier T1 or T2) and graded shape:
#                   the fastest probe kernel moving the task's own bytes (ceiling.py); catalog_table.py marks
#                   the targets beyond it. The machine's figures, not the packages': any commit's serve.
#   PART=ncu        each GPU solution's kernels under Nsight Compute: gpu__time_duration summed per call over
#                   NCU_CALLS calls (ncu_eager.py, ncu_sum.py), the ground truth the judge's figure is read against.
# The table comes from the parts' .jsonl files gathered in one folder or several (older commits' parts serve
# where nothing they measured changed since: catalog_table.py read_run):
#   python3 scripts/gpu/catalog_table.py table FOLDER [FOLDER ...]
# Every step is bounded by its own timeout and by the call's deadline (DEADLINE_S, default 520 s): a step that
# would outrun it is skipped and PART.txt names it with the call that finishes the part (TASKS=...). A task
# that fails never stops the others.
# Setup as scripts/gpu/judge_h200.sh: run from the repository root with .device/ carried (.device/bin/kzoo,
# .device/lib/, Debian's bubblewrap .deb, .device/COMMIT). Knobs: TASKS (space-separated, default all), SHAPES
# (graded shape indices, default 0), ITERATIONS (timed calls per graded case, default 30), JOBS (parallel jobs
# in calibrate and compile, default 6 and 4), NCU_CALLS (default 5), OUT, KZOO_PYTHON.
#   usage: PART=eager bash scripts/gpu/catalog_bench.sh
set -u
cd "$(dirname "$0")/../.." || exit 2
START=$(date +%s)
PARTS="calibrate compile eager solutions ncu ceiling"
PART=${PART:-}
case " $PARTS " in
  *" $PART "*) [ -n "$PART" ] ;;
  *) false ;;
esac || {
  echo "catalog_bench.sh: PART must be one of: $PARTS (got '$PART'); each part is one device call, e.g. PART=eager bash $0" >&2
  exit 2
}
DEADLINE=${DEADLINE_S:-520}
OUT=${OUT:-/tmp/kzoo-out}
WORK=${WORK:-$(mktemp -d /tmp/kzoo-catalog.XXXXXX)}
mkdir -p "$OUT" "$WORK/logs"
PY=${KZOO_PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
if [ "$PART" != compile ] && [ "$PART" != ncu ] && [ "$PART" != ceiling ] && [ ! -x .device/bin/kzoo ]; then
  echo "catalog_bench.sh: .device/bin/kzoo missing: run scripts/gpu/bundle.sh here and carry .device" >&2; exit 2
fi
ITER=${ITERATIONS:-30}
SHAPES=${SHAPES:-0}
TASKS=${TASKS:-$(ls catalog/tasks)}
. scripts/gpu/unbundle.sh
export KZOO_PYTHON=$PY
# The compile part's two steps share the compiled and autotuned kernels through this cache.
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/kzoo-inductor}
K=$PWD/.device/bin/kzoo
H=scripts/gpu/catalog_helper.py
T=scripts/gpu/catalog_table.py
LOG="$WORK/steps.txt"
: > "$LOG"
: > "$WORK/records.jsonl"

left() { echo $((DEADLINE - ($(date +%s) - START))); }
step() { echo "[$(($(date +%s) - START)) s] $*" | tee -a "$LOG"; }
# bounded SECONDS WHAT CMD...: CMD under the smaller of SECONDS and the time left; a step the deadline leaves
# no room for is skipped, and WHAT (a task) is listed so that a second call can finish the part.
bounded() {
  local t=$1 what=$2 l
  shift 2
  l=$(left)
  [ "$l" -lt "$t" ] && t=$l
  if [ "$t" -le 10 ]; then
    echo "skipped (deadline): $*" >> "$LOG"
    echo "$what" >> "$WORK/skipped"
    return 124
  fi
  timeout -k 5 "$t" "$@"
}
# The package of TASK under ROOT (catalog/kernel_data or catalog/solutions/gpu): the one whose desc.yaml
# names the task.
pkg_of() {
  local f
  f=$(grep -l -x "    ref: $2" $(find "$1" -path '*/.kernel_package/desc.yaml' 2>/dev/null) 2>/dev/null | head -1)
  [ -n "$f" ] && dirname "$(dirname "$f")"
}
# The test case ids of the graded shapes SHAPES of TASK's first workload (synthetic if it has one).
cases_of() {
  "$PY" -c "import json,sys; w=json.load(open(sys.argv[1]))['workloads']; n='synthetic' if 'synthetic' in w else sorted(w)[0]
print(','.join('%s-%s' % (n, i) for i in sys.argv[2:]))" "catalog/tasks/$1/task.json" $SHAPES
}
# record JSON...: a line for the part's .jsonl, written by the step that measured it.
record() { echo "$1" >> "$WORK/records.jsonl"; }

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  "$PY" -c 'import sys, torch; print(sys.executable, torch.__version__, torch.version.cuda)'
  "$PY" -c 'import triton; print("triton", triton.__version__)'
  command -v nvcc ninja ncu; ls /usr/local/cuda/bin/nvcc "$(dirname "$PY")/ninja" 2>&1; } > "$WORK/env.txt" 2>&1
COMMIT=$(head -c 40 .device/COMMIT 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)
grep -q dirty .device/COMMIT 2>/dev/null && COMMIT="$COMMIT (dirty)"
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
TORCH=$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null)
"$PY" -c 'import json, sys, time
print(json.dumps({"run": {"part": sys.argv[1], "commit": sys.argv[2], "gpu": sys.argv[3] or "no GPU seen", "torch": sys.argv[4] or "?",
                          "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}}))' "$PART" "$COMMIT" "$GPU" "$TORCH" > "$WORK/run.json"

# grade KIND TASK PACKAGE LIMIT: `kzoo grade` in the sandbox at the graded cases SHAPES.
grade() {
  local f="$WORK/logs/grade_$1_$2"
  if [ -z "$3" ]; then record "{\"kind\": \"$1\", \"task\": \"$2\", \"error\": \"no package\"}"; return; fi
  bounded "$4" "$2" "$K" grade "$3" --device cuda --json --catalog catalog --judge-dir judge --python "$PY" \
    --cases "$(cases_of "$2")" --iterations "$ITER" --timeout "$(($4 - 10))" -v > "$f.json" 2> "$f.err"
  echo "  grade $1 $2 rc=$?" >> "$LOG"
  "$PY" "$T" grade-records "$1" "$2" "$f.json" >> "$WORK/records.jsonl" 2>> "$LOG"
}
# events KIND TASK PACKAGE: the package's entry point timed in-process, each graded shape of SHAPES.
events() {
  local s
  [ -n "$3" ] || return
  for s in $SHAPES; do
    bounded "${EVENTS_TIMEOUT:-90}" "" "$PY" "$H" events "catalog/tasks/$2" "$3/src" --shape "$s" \
      > "$WORK/logs/events_$1_$2_$s.json" 2> "$WORK/logs/events_$1_$2_$s.err"
    echo "  events $1 $2 shape $s rc=$?" >> "$LOG"
    "$PY" "$T" tag-records "$1" < "$WORK/logs/events_$1_$2_$s.json" >> "$WORK/records.jsonl" 2>> "$LOG"
  done
}

case $PART in
  calibrate)
    step "calibrate: E and D on the GPU, fast-math variants (${JOBS:-6} at a time)"
    job() {  # job KIND TASK
      local kind=$1 t=$2 sol
      case $kind in
        calibrate) timeout --foreground -k 5 "${CAL_TIMEOUT:-200}" "$K" task calibrate "catalog/tasks/$t" --device cuda --python "$PY" \
                     --judge-dir judge > "$WORK/logs/calibrate_$t.json" 2> "$WORK/logs/calibrate_$t.err" ;;
        fastmath) sol=$(pkg_of catalog/solutions/gpu "$t")
                  [ -n "$sol" ] || { echo '{"error": "no solution package"}' > "$WORK/logs/fastmath_$t.json"; return; }
                  timeout --foreground -k 5 "${FAST_TIMEOUT:-240}" "$PY" "$H" fastmath "catalog/tasks/$t" "$sol/src" \
                    > "$WORK/logs/fastmath_$t.json" 2> "$WORK/logs/fastmath_$t.err" ;;
      esac
      echo "  $kind $t rc=$?" >> "$LOG"
    }
    export -f job pkg_of
    export K H PY WORK LOG
    # The two kinds interleaved, each half the task list apart, so that one task's two jobs -- the big ones
    # hold tens of GB of GPU memory each -- never run side by side.
    { set -- $TASKS; n=$#; list=("$@")
      for ((i = 0; i < n; i++)); do echo "calibrate ${list[i]}"; echo "fastmath ${list[(i + n / 2) % n]}"; done; } |
      bounded "$(left)" "" xargs -P "${JOBS:-6}" -L 1 bash -c 'job "$0" "$1"'
    echo "calibrate done rc=$?" >> "$LOG"
    for t in $TASKS; do
      [ -s "$WORK/logs/calibrate_$t.json" ] && [ -s "$WORK/logs/fastmath_$t.json" ] || echo "$t" >> "$WORK/skipped"
      "$PY" "$T" tolerance-record "$t" "catalog/tasks/$t/task.json" "$WORK/logs/calibrate_$t.json" \
        "$WORK/logs/fastmath_$t.json" >> "$WORK/records.jsonl" 2>> "$LOG"
    done ;;
  compile)
    shape_args=(); for s in $SHAPES; do shape_args+=(--shape "$s"); done
    nshapes=$(echo $SHAPES | wc -w)
    step "compile: warm-up, ${JOBS:-4} tasks at a time, every shape of a task in one process (nothing timed)"
    # --foreground: a timeout of its own makes a process group of its own, which the step's deadline
    # (bounded's timeout, killing its group) never reached; the cut warm-ups then autotuned on through
    # the timed step and tripled its figures (bf16-gemm's cuBLAS 3895 us against 674 at the next
    # shape, H200, 2026-12-03).
    warm() {  # warm TASK
      local limit=$(( ${WARM_TIMEOUT:-240} * nshapes ))
      timeout --foreground -k 5 "$limit" "$PY" "$H" time "catalog/tasks/$1" "${shape_args[@]}" --warm-only \
        --task-timeout "${WARM_TIMEOUT:-240}" > "$WORK/logs/warm_$1.json" 2> "$WORK/logs/warm_$1.err"
      echo "  warm $1 rc=$?" >> "$LOG"
    }
    export -f warm
    export H PY WORK LOG WARM_TIMEOUT nshapes
    export SHAPE_ARGS="${shape_args[*]}"
    for t in $TASKS; do echo "$t"; done |
      bounded "${WARM_BUDGET:-270}" "" xargs -P "${JOBS:-4}" -L 1 bash -c 'shape_args=($SHAPE_ARGS); warm "$0"'
    echo "warm-up done rc=$?" >> "$LOG"
    # Nothing of the warm-up may still run on the GPU while the figures are taken.
    pkill -f -- "$H time .*--warm-only" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do pgrep -f -- "$H time .*--warm-only" >/dev/null || break; sleep 1; done
    pkill -9 -f -- "$H time .*--warm-only" 2>/dev/null
    step "compile: timed one task at a time, every shape of a task in one process"
    for t in $TASKS; do
      f="$WORK/logs/time_$t"
      bounded "$(( ${TIME_TIMEOUT:-75} * nshapes ))" "$t" "$PY" "$H" time "catalog/tasks/$t" "${shape_args[@]}" --calls 20 \
        --task-timeout "$((${TIME_TIMEOUT:-75} - 5))" > "$f.json" 2> "$f.err"
      echo "  time $t rc=$?" >> "$LOG"
      "$PY" "$T" tag-records compile < "$f.json" >> "$WORK/records.jsonl" 2>> "$LOG"
      for s in $SHAPES; do
        grep -q "\"shape_index\": $s[,}]" "$f.json" 2>/dev/null || { echo "$t" >> "$WORK/skipped"; break; }
      done
    done ;;
  eager|solutions)
    kind=${PART%s}
    root=catalog/kernel_data; [ "$PART" = solutions ] && root=catalog/solutions/gpu
    # The grades first (the table's figures), then CUDA events in-process with the time left: the
    # figure that stands in for a grade the deadline skipped, and a cross-check of the others.
    step "$PART: kzoo grade in the sandbox"
    for t in $TASKS; do
      p=$(pkg_of "$root" "$t")
      limit=${GRADE_TIMEOUT:-120}
      [ -n "$p" ] && [ -f "$p/src/build.py" ] && limit=${BUILD_GRADE_TIMEOUT:-240}  # nvcc + ninja in the build step
      grade "$kind" "$t" "$p" "$limit"
    done
    step "$PART: CUDA events in-process"
    for t in $TASKS; do events "$kind" "$t" "$(pkg_of "$root" "$t")"; done ;;
  ncu)
    step "ncu: the solutions' kernels, ${NCU_CALLS:-5} calls each"
    for t in $TASKS; do
      p=$(pkg_of catalog/solutions/gpu "$t")
      [ -n "$p" ] || { record "{\"kind\": \"ncu\", \"task\": \"$t\", \"error\": \"no solution package\"}"; continue; }
      for s in $SHAPES; do
        f="$WORK/logs/ncu_${t}_$s"
        bounded "${NCU_TIMEOUT:-150}" "$t" ncu --profile-from-start off --clock-control none --cache-control all \
          --metrics gpu__time_duration.sum --csv "$PY" scripts/gpu/ncu_eager.py "catalog/tasks/$t/task.json" "$p/src" "$s" \
          "${NCU_CALLS:-5}" > "$f.csv" 2> "$f.err"
        echo "  ncu $t shape $s rc=$?" >> "$LOG"
        "$PY" "$T" ncu-record "$t" "$s" "$f.csv" "${NCU_CALLS:-5}" >> "$WORK/records.jsonl" 2>> "$LOG"
      done
    done ;;
  ceiling)
    dirs=""
    for t in $TASKS; do
      case "$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["difficulty"]["tier"])' "catalog/tasks/$t/task.json" 2>/dev/null)" in
        T1|T2) dirs="$dirs catalog/tasks/$t" ;;
      esac
    done
    shape_args=(); for s in $SHAPES; do shape_args+=(--shape "$s"); done
    step "ceiling: the fastest probe kernel moving each memory-bound task's bytes (${dirs:- none})"
    # ceiling.py stops starting tasks at its own deadline and names what it skipped
    bounded "$(left)" "" "$PY" scripts/gpu/ceiling.py "${shape_args[@]}" --deadline-s "$(( $(left) - 30 ))" \
      --json "$WORK/logs/ceiling_lines.jsonl" $dirs > "$WORK/logs/ceiling.txt" 2>&1
    echo "  ceiling rc=$?" >> "$LOG"
    grep '^{' "$WORK/logs/ceiling_lines.jsonl" >> "$WORK/records.jsonl" 2>> "$LOG"
    grep '^skipped' "$WORK/logs/ceiling.txt" | sed -E 's/^skipped \(deadline\): (catalog\/tasks\/)?([^ ]+).*/\2/' >> "$WORK/skipped" ;;
esac

{ cat "$WORK/run.json" "$WORK/records.jsonl"; } > "$OUT/$PART.jsonl"
{ cat "$WORK/env.txt" "$LOG"
  if [ -s "$WORK/skipped" ]; then
    echo "not finished within the deadline; finish with: PART=$PART SHAPES=\"$SHAPES\" TASKS=\"$(sort -u "$WORK/skipped" | grep . | tr '\n' ' ' | sed 's/ $//')\" bash scripts/gpu/catalog_bench.sh"
  fi
  echo "total $(($(date +%s) - START)) s"; } > "$OUT/$PART.txt"
if [ "$PART" = compile ] && [ -d "$TORCHINDUCTOR_CACHE_DIR" ]; then
  # What inductor generated and what its autotuning chose (the Triton sources and .best_config files,
  # a few MB): the kernels torch.compile's column times, to read against the catalog's own where
  # inductor's is faster (layernorm, rmsnorm-residual, silu-and-mul on the H200, 2026-12-03).
  (cd "$TORCHINDUCTOR_CACHE_DIR" && find . \( -name '*.py' -o -name '*.best_config' \) -size -2M -print0 |
    tar --null -czf "$WORK/inductor_sources.tar.gz" -T -) 2>> "$LOG"
fi
tar -C "$WORK" -czf "$OUT/${PART}_logs.tar.gz" .
cat "$OUT/$PART.txt"
"$PY" "$T" summary "$OUT/$PART.jsonl" 2>&1
