#!/usr/bin/env bash
# Issue 19's lab bench on the H200 (round 5): catalog_helper.py lab for both attention tasks, decode
# first, in one 168 s budget (Triton builds included). Each run checks every correctness and graded
# shape against the comparator and the board's elementwise bound, then times every graded shape
# beside the task's eager package.
#   decode (105 s in all, two processes so that a fault or a hang in the wgmma candidates cannot
#   take the others' figures with it; the catalog solution, round 4's `btnext`, is in both as the
#   drift reference):
#     decode    (up to 45 s): the solution and `vh16` (V dequantised to fp16 in registers by a
#               non-hoistable asm cvt, read by ldmatrix.trans; sweeps (128,4,3), (128,4,2), (64,4,4)).
#     decode_f8 (the rest of the 105 s): the solution, `f8qk` (Q K^T as an fp8 wgmma reading K from
#               the cp.async buffer, q as two e4m3 halves; sweeps (128,4,3), (64,4,3), (64,4,4)) and
#               `f8v16` (both; sweeps (64,4,3), (128,4,2), (64,4,4)).
#     The candidates sweep on the first call at each graded shape and log every timing, a float32
#     spot check of each config, and each build's registers/spills/shared memory/programs an SM as
#     a JSON line on stderr (collected into <run>_sweep.jsonl).
#   prefill (the rest, at least 63 s): the catalog solution only (no round-5 candidate).
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
run decode 45 "$DEC" "$DSOL" "$LAB/paged-attention-decode/vh16"
run decode_f8 $(( 105 - ($(date +%s) - START) )) "$DEC" "$DSOL" \
    "$LAB/paged-attention-decode/f8qk" "$LAB/paged-attention-decode/f8v16"
run prefill "$BUDGET" "$PRE" "$SOL/flash_prefill/bf16/flash_attention_prefill_eager/src"
cat "$DIR/rc.txt"
