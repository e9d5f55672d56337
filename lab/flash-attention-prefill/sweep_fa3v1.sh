#!/usr/bin/env bash
# fa3v1's build options on the H200 (NOTES.md, "fa3v1 on the H200": what to try next): each
# configuration checked at every smoke shape and timed beside SDPA at the graded shapes, the
# CTA-per-tile grid only. One line a configuration in $OUT/fa3_sweep/summary.txt, the smoke's
# own output beside it. Under 120 s: each run has 45 s (its build ~4 s, torch's import ~3 s).
set -u
PY="${KZOO_PYTHON:-python3}"
O="${OUT:-/tmp/out}/fa3_sweep"
mkdir -p "$O"
: >"$O/summary.txt"
for cfg in "STAGES128=2 STAGES64=4 PINGPONG=1" "STAGES128=3 STAGES64=4 PINGPONG=1" \
           "STAGES128=2 STAGES64=2 PINGPONG=1" "STAGES128=2 STAGES64=6 PINGPONG=1" \
           "STAGES128=2 STAGES64=4 PINGPONG=0"; do
  name=$(echo "$cfg" | tr ' =' '_-')
  env $(for kv in $cfg; do echo "KZOO_FA3_$kv"; done) KZOO_SMOKE_GRIDS=0 \
    timeout -k 3 45 "$PY" lab/flash-attention-prefill/smoke_fa3v1.py lab/flash-attention-prefill/fa3v1 timing \
    >"$O/$name.txt" 2>&1
  echo "$cfg rc=$? $(grep -c FAIL "$O/$name.txt") failures; $(grep '^time' "$O/$name.txt" | sed 's/.*persistent 0 \([0-9]*\) us.*sdpa \([0-9]*\) us ratio \([0-9.]*\)/\1 (sdpa \2, \3)/' | tr '\n' ' ')" >>"$O/summary.txt"
done
cat "$O/summary.txt"
