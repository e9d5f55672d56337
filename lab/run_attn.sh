#!/usr/bin/env bash
# Issue 19's lab bench on the H200: catalog_helper.py lab for both attention tasks, decode first,
# in one 168 s budget (Triton builds included). Each run checks every correctness and graded shape
# against the comparator and the board's elementwise bound, then times every graded shape beside
# the task's eager package. No round-6 candidate yet: the solutions alone (round 5's decode, `btnext`
# with `vh16`; prefill's), a drift reference. A candidate goes in as another source after the
# solution's (round 5's line was `run decode 45 "$DEC" "$DSOL" "$LAB/paged-attention-decode/vh16"`;
# its candidates are at fccccce^:lab/), one process per group of candidates so that a fault or a
# hang in one cannot take the others' figures with it.
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

DSOL="$SOL/paged_decode/fp8/paged_attention_decode_eager/src"
run decode 45 "$DEC" "$DSOL"
run prefill "$BUDGET" "$PRE" "$SOL/flash_prefill/bf16/flash_attention_prefill_eager/src"
cat "$DIR/rc.txt"
