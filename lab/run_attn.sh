#!/usr/bin/env bash
# Issue 19's lab bench on the H200: catalog_helper.py lab for both attention tasks, decode
# first, in one 168 s budget (Triton builds included). Each run checks every correctness and graded
# shape against the comparator and the board's elementwise bound, then times every graded shape
# beside the task's eager package.
#   decode (up to 105 s): the catalog solution (round 4's `btnext`); no round-5 candidate yet. A
#     candidate that sweeps logs each timing as a JSON line on stderr (decode_sweep.jsonl).
#   prefill (the rest, at least 55 s): the catalog solution only.
# Each run gets a hard timeout and a --deadline-s 7 s inside it (no new work after that).
# Output under "${OUT:-/tmp/out}/attn/": <run>.jsonl (stdout JSON lines), <run>.stderr,
# <run>_sweep.jsonl (the sweeps' lines), rc.txt (exit status, timeout and wall seconds of each run).
set -u
cd "$(dirname "$0")/.."
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

run decode 105 "$DEC" "$SOL/paged_decode/fp8/paged_attention_decode_eager/src"
run prefill "$BUDGET" "$PRE" "$SOL/flash_prefill/bf16/flash_attention_prefill_eager/src"
cat "$DIR/rc.txt"
