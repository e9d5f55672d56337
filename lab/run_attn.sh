#!/usr/bin/env bash
# Issue 19's lab bench on the H200: catalog_helper.py lab for both attention tasks, decode first,
# in one 168 s budget (Triton builds included). Each run checks every correctness and graded shape
# against the comparator and the board's elementwise bound, then times every graded shape beside
# the task's eager package. Decode: `decode` = the solution alone (round 7's cufd, CUDA C++, since
# session 23), `decode_cand` = the solution + DECODE_CANDS, its own process and timeout so that a
# fault or hang in a new kernel costs only its own lines; it repeats the solution as its drift
# reference.
# Prefill: the solution + fa3v1 (CUDA C++ FlashAttention-3-style kernel for sm_90a, built by nvcc at
# import, ~15 s, inside the prefill run's remaining budget).
# Each run gets a hard timeout and a --deadline-s 7 s inside it (no new work after that).
# Output under "${OUT:-/tmp/out}/attn/": <run>.jsonl (stdout JSON lines), <run>.stderr,
# <run>_sweep.jsonl (the sweeps' lines), rc.txt (exit status, timeout and wall seconds of each run).
set -u
cd "$(dirname "$0")/.." || exit 2
PY="${KZOO_PYTHON:-python3}"
DIR="${OUT:-/tmp/out}/attn"
mkdir -p "$DIR"
: >"$DIR/rc.txt"
SOL=catalog/solutions/gpu/h200/attention
PRE=catalog/tasks/flash-attention-prefill
DEC=catalog/tasks/paged-attention-decode
LAB=lab
BUDGET=168
START=$(date +%s)

run() {  # run NAME WANT_S TASK_DIR SRC...
    local name=$1 want=$2 t0 left t rc
    shift 2
    t0=$(date +%s)
    left=$(( BUDGET - (t0 - START) ))
    t=$(( want < left ? want : left ))
    if [ "$t" -lt 20 ]; then
        echo "$name skipped: ${left}s left" >>"$DIR/rc.txt"
        return
    fi
    timeout -k 2 "$t" "$PY" scripts/gpu/catalog_helper.py lab "$@" --calls 20 --deadline-s $(( t - 7 )) \
        >"$DIR/$name.jsonl" 2>"$DIR/$name.stderr"
    rc=$?
    echo "$name rc=$rc timeout_s=$t wall_s=$(( $(date +%s) - t0 ))" >>"$DIR/rc.txt"
    grep '^{"variant"' "$DIR/$name.stderr" >"$DIR/${name}_sweep.jsonl"
}

DSOL="$SOL/paged_decode/fp8/paged_attention_decode_eager/src"
run decode 45 "$DEC" "$DSOL"
# Round 7's cufd is the solution since session 23 (its CPU harness stays in cufd/). DECODE_CANDS="NAME
# ..." (folders under lab/paged-attention-decode/) times the next round's candidates beside it.
if [ -n "${DECODE_CANDS:-}" ]; then
    dc=(); for c in $DECODE_CANDS; do dc+=("$LAB/paged-attention-decode/$c"); done
    run decode_cand $(( 105 - ($(date +%s) - START) )) "$DEC" "$DSOL" "${dc[@]}"
fi
run prefill "$BUDGET" "$PRE" "$SOL/flash_prefill/bf16/flash_attention_prefill_eager/src" "$LAB/flash-attention-prefill/fa3v1"
cat "$DIR/rc.txt"
