#!/usr/bin/env bash
# Where a verdict's seconds go, on the GPU machine (docs/PERF.md): `kzoo grade` of the softmax
# eager package at the judge's defaults, then the A/B of the fused sample against it
# (`kzoo grade --against`), each twice, with the judge's "profile" and "trace" options; the
# logs (the judge's phases, its startup line, its busiest functions) go to $OUT/profile_*.err.
# Setup as for accept.sh: bash scripts/build.sh && bash scripts/gpu/bundle.sh here, carry .device.
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/kzoo-profile-out}; mkdir -p "$OUT"
PY=${KZOO_PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
[ -x .device/bin/kzoo ] || { echo "profile_judge.sh: .device/bin/kzoo missing: run scripts/gpu/bundle.sh and carry .device" >&2; exit 2; }
. scripts/gpu/unbundle.sh
export KZOO_PYTHON=$PY PYTHONUNBUFFERED=1
K=$PWD/.device/bin/kzoo
eager=catalog/kernel_data/h200/norm/softmax/bf16/softmax_eager
tmp=$(mktemp -d /tmp/kzoo-profile.XXXXXX)
root=$tmp/fused; kid=h200/norm/softmax/bf16/softmax_eager
mkdir -p "$root/$(dirname "$kid")"; touch "$root/.kernel_data"
cp -r "catalog/kernel_data/$kid" "$root/$kid" && cp catalog/samples/softmax_fused.py "$root/$kid/src/softmax.py"
opts='{"profile": true, "trace": true}'
for n in 1 2; do
  t0=$(date +%s.%N)
  "$K" grade "$eager" --device cuda --json --catalog catalog --judge-dir judge --python "$PY" --timeout 140 \
    --judge-options "$opts" -v > "$OUT/profile_grade_$n.json" 2> "$OUT/profile_grade_$n.err"
  echo "grade $n: rc $? wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
  t0=$(date +%s.%N)
  "$K" grade "$root/$kid" --against "$eager" --device cuda --json --catalog catalog --judge-dir judge --python "$PY" \
    --timeout 140 --judge-options "$opts" -v > "$OUT/profile_ab_$n.json" 2> "$OUT/profile_ab_$n.err"
  echo "A/B $n: rc $? wall $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s"
done
grep -h "kzoo-judge: time:\|before its clock" "$OUT"/profile_*.err
rm -rf "$tmp"
