#!/usr/bin/env bash
# Issue 19's lab bench on the H200: catalog_helper.py lab for both attention tasks. Five runs, so
# that the catalog solutions are checked and timed before any variant can eat the time: prefill
# solution, decode solution, prefill variants, decode variants, the warp-specialised prefill. Each
# run gets a hard timeout out of one 160 s budget (the last run takes what is left; a run with
# under 20 s left is skipped) and a --deadline-s 8 s inside it (no new work after that).
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
BUDGET=160
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
    timeout -k 2 "$t" "$PY" scripts/gpu/catalog_helper.py lab "$@" --calls 20 --deadline-s $(( t - 8 )) \
        >"$DIR/$name.jsonl" 2>"$DIR/$name.stderr"
    rc=$?
    echo "$name rc=$rc timeout_s=$t wall_s=$(( $(date +%s) - t0 ))" >>"$DIR/rc.txt"
}

run prefill 45 "$PRE" "$SOL/flash_prefill/bf16/flash_attention_prefill_eager/src"
run decode 35 "$DEC" "$SOL/paged_decode/fp8/paged_attention_decode_eager/src"
run prefill_variants 40 "$PRE" lab/flash-attention-prefill/bn64 lab/flash-attention-prefill/ptr
run decode_variants 35 "$DEC" lab/paged-attention-decode/prefetch lab/paged-attention-decode/bn64s4 \
    lab/paged-attention-decode/prefetch_bn128w8
# Last and alone: Triton's Hopper warp-specialisation pass can abort the process (a C++ assertion,
# triton issues 9728 / 10284) rather than raise, which would take the other candidates with it.
run prefill_ws "$BUDGET" "$PRE" lab/flash-attention-prefill/ws
cat "$DIR/rc.txt"
