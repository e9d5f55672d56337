#!/usr/bin/env bash
# Issues 19-20's kernel labs in one device call, each winner then graded in the catalog's place.
# For each bench of BENCHES (default "gemm bf16 decode"): run it (gemm: lab/run_gemm.sh, its
# FP8_CANDS; bf16: lab/run_bf16.sh, the CUDA C++ base cuda1 and any open round; rows: lab/run_rows.sh's
# ROWS_GROUPS (default layernorm and rmsnorm-residual; session 24 ran round 8's cuda1 there); prefill: the
# flash-attention-prefill solution beside PREFILL_CANDS, folders under lab/flash-attention-prefill/; decode: the paged-decode solution beside
# DECODE_CANDS, folders under lab/paged-attention-decode/; session 23 ran fp8 round 9, cuda1 and
# cufd, which became the decode solution), pick the winner (lab/pick.py: correct everywhere, geomean 1% under the
# solution's events, no shape 1% slower), copy it over the solution's src/ -- in this tree, which on
# the device is the device's own copy -- and grade it there: fidelity.sh KINDS=solution ONLY=TASK
# (the judge at its defaults, beside ncu), unless PROMOTE=0 or less than GRADE_S (160 s) is left
# of DEADLINE_S (560 s). A promotion commits the graded bytes unchanged (sha256 in
# $OUT/grade_TASK/winner_sha.txt).
# Run from the repository root on the H200 with .device carried; everything goes under ${OUT:-/tmp/out}.
set -u
PY="${KZOO_PYTHON:-python3}"
O="${OUT:-/tmp/out}"
mkdir -p "$O"
T0=$(date +%s)
DEADLINE_S=${DEADLINE_S:-560}
GRADE_S=${GRADE_S:-160}
left() { echo $(( DEADLINE_S - ($(date +%s) - T0) )); }
S=catalog/solutions/gpu/h200
promote() {  # promote TASK SOLUTION_SRC JSONL...
    local task=$1 sol=$2 w
    shift 2
    "$PY" lab/pick.py --solution "$sol" "$@" >"$O/pick_$task.txt" 2>&1
    w=$(awk '/^winner /{print $2}' "$O/pick_$task.txt")
    echo "$task: $(tail -n 1 "$O/pick_$task.txt") ($(( $(date +%s) - T0 )) s)" >>"$O/summary.txt"
    [ -n "$w" ] && [ "$w" != none ] && [ "${PROMOTE:-1}" = 1 ] || return 0
    if [ "$(left)" -lt "$GRADE_S" ]; then echo "$task: $w not graded (under $GRADE_S s left)" >>"$O/summary.txt"; return 0; fi
    mkdir -p "$O/grade_$task"
    # Sources only: a log beside them (a ptxas report) breaks the package rules (evidence.log), as
    # session 23's first copy of cufd found.
    local files
    files=$(cd "$w" && find . -maxdepth 1 -type f \( -name '*.py' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cpp' \
        -o -name '*.h' \) | sort)
    (cd "$w" && cp $files "$OLDPWD/$sol"/ && sha256sum $files) >"$O/grade_$task/winner_sha.txt"
    LOGS="$O/grade_$task/logs" OUT="$O/grade_$task" KINDS=solution REPEAT=none ONLY="$task" BUDGET_S=5 \
        GRADE_TIMEOUT=$(( GRADE_S - 30 )) timeout "$(left)" bash scripts/gpu/fidelity.sh >"$O/grade_$task/fidelity.log" 2>&1
    echo "$task: $w graded rc=$? ($(( $(date +%s) - T0 )) s)" >>"$O/summary.txt"
}
cand_bench() {  # cand_bench NAME TASK SOLUTION_SRC TIMEOUT_S LAB_DIR CANDIDATE...: the solution and the
    # candidates (folders under LAB_DIR, or paths) through catalog_helper.py lab in one process, then promote.
    local name=$1 task=$2 sol=$3 to=$4 dir=$5 c cands=()
    shift 5
    for c in "$@"; do case $c in */*) cands+=("$c") ;; *) cands+=("$dir/$c") ;; esac; done  # a path as given
    mkdir -p "$O/$name"
    if [ ${#cands[@]} -eq 0 ]; then echo "$name: no candidates" >>"$O/summary.txt"; return 0; fi
    timeout -k 2 "$to" "$PY" scripts/gpu/catalog_helper.py lab "catalog/tasks/$task" "$sol" "${cands[@]}" \
        --calls 20 --deadline-s $(( to - 8 )) >"$O/$name/${name}_cand.jsonl" 2>"$O/$name/${name}_cand.stderr"
    promote "$task" "$sol" "$O/$name/${name}_cand.jsonl"
}
for b in ${BENCHES:-gemm bf16 decode}; do
    case $b in
      gemm)
        OUT="$O" KZOO_PYTHON="$PY" timeout -k 3 160 bash lab/run_gemm.sh >"$O/gemm.log" 2>&1
        promote fp8-blockscale-gemm $S/gemm/blockscale/fp8/fp8_blockscale_gemm_eager/src "$O"/gemm/*.jsonl ;;
      bf16)
        OUT="$O" KZOO_PYTHON="$PY" timeout -k 3 145 bash lab/run_bf16.sh >"$O/bf16.log" 2>&1
        promote bf16-gemm $S/gemm/dense/bf16/bf16_gemm_eager/src "$O"/bf16/*.jsonl ;;
      rows)
        # lab/run_rows.sh's groups (ROWS_GROUPS, default the two norms with an open round), each
        # task's winner graded in its solution's place.
        OUT="$O" KZOO_PYTHON="$PY" LAB_GROUPS="${ROWS_GROUPS:-layernorm rmsnorm-residual}" timeout -k 3 200 \
            bash lab/run_rows.sh >"$O/rows.log" 2>&1
        for g in ${ROWS_GROUPS:-layernorm rmsnorm-residual}; do
            case $g in
              layernorm) promote layernorm $S/norm/layernorm/bf16/layernorm_eager/src "$O"/rows/layernorm.jsonl ;;
              rmsnorm-residual) promote rmsnorm-residual $S/norm/rmsnorm/bf16/rmsnorm_residual_eager/src "$O"/rows/rmsnorm-residual.jsonl ;;
              *) echo "rows: $g has no promotion here" >>"$O/summary.txt" ;;
            esac
        done ;;
      prefill)
        # PREFILL_CANDS="NAME ..." (folders under lab/flash-attention-prefill/); each CUDA C++
        # candidate builds at import (~15 s).
        cand_bench prefill flash-attention-prefill $S/attention/flash_prefill/bf16/flash_attention_prefill_eager/src \
            150 lab/flash-attention-prefill ${PREFILL_CANDS:-} ;;
      decode)
        cand_bench decode paged-attention-decode $S/attention/paged_decode/fp8/paged_attention_decode_eager/src \
            100 lab/paged-attention-decode ${DECODE_CANDS:-} ;;
      *) echo "run_and_grade.sh: unknown bench '$b' (gemm, bf16, rows, prefill, decode)" >&2; exit 2 ;;
    esac
done
echo "total $(( $(date +%s) - T0 )) s" >>"$O/summary.txt"
cat "$O/summary.txt"
