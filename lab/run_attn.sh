#!/usr/bin/env bash
# Issue 19's lab bench on the H200 (round 2): catalog_helper.py lab for both attention tasks in
# two runs inside one 90 s budget. Prefill: `prev` (main at bd9d4f3, the pre-round-1 kernel, which
# is again the catalog solution: the script checks they are the same file), `r1` (round 1's TMA
# solution) and `fma` (prev plus the one-FMA scale, autotune choice printed to stderr), so the old
# and new versions are timed in one run. Decode: the catalog solution (round 1), `prev` (main at
# bd9d4f3), `allheads` (one program reads whole pages for all KV heads) and `bn256w8`. Each run
# gets a hard timeout and a --deadline-s 7 s inside it (no new work after that).
# Output under "${OUT:-/tmp/out}/attn/": <run>.jsonl (stdout JSON lines), <run>.stderr, rc.txt
# (exit status, timeout and wall seconds of each run).
set -u
cd "$(dirname "$0")/.."
PY="${KZOO_PYTHON:-python3}"
DIR="${OUT:-/tmp/out}/attn"
mkdir -p "$DIR"
: >"$DIR/rc.txt"
SOL=catalog/solutions/gpu/h200/attention
PRE=catalog/tasks/flash-attention-prefill
DEC=catalog/tasks/paged-attention-decode
BUDGET=88
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
}

cmp -s lab/flash-attention-prefill/prev/flash_attention.py \
    "$SOL/flash_prefill/bf16/flash_attention_prefill_eager/src/flash_attention.py" \
    && echo "prefill solution == lab prev" >>"$DIR/rc.txt" || echo "prefill solution != lab prev" >>"$DIR/rc.txt"
run prefill 48 "$PRE" lab/flash-attention-prefill/prev lab/flash-attention-prefill/r1 lab/flash-attention-prefill/fma
run decode "$BUDGET" "$DEC" "$SOL/paged_decode/fp8/paged_attention_decode_eager/src" lab/paged-attention-decode/prev \
    lab/paged-attention-decode/allheads lab/paged-attention-decode/bn256w8
cat "$DIR/rc.txt"
