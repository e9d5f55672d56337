#!/usr/bin/env bash
# Issue 13 / issue 10 item 5 on a GPU machine, in one device call: the device class read from the
# GPU, the provenance every result records, the library gate and its profile accounting on real
# CUDA profiles, and the catalog's fused softmax sample (Triton) against the eager package.
# Same set-up as judge_h200.sh: run from the repository root with .device/ carried (.device/bin/kzoo,
# .device/lib/, Debian's bubblewrap .deb).
#   usage: bash scripts/gpu/trust_h200.sh        (about 5 minutes; everything lands under $OUT)
# Prints one table at the end.
set -u
OUT=${OUT:-/tmp/kzoo-out}; mkdir -p "$OUT"
PY=${KZOO_PYTHON:-/opt/torch/.venv/bin/python3}
. scripts/gpu/unbundle.sh
export KZOO_PYTHON=$PY
K=.device/bin/kzoo
T="$OUT/table.txt"; : > "$T"
row() { printf '%-44s %s\n' "$1" "$2" >> "$T"; }
EAGER=catalog/kernel_data/h200/norm/softmax/bf16/softmax_eager

# 1. The device class a CUDA worker picks from the GPU's name (nothing queued: it starts, says, exits).
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/smi.txt" 2>&1
row "nvidia-smi" "$(head -1 "$OUT/smi.txt")"
D="$OUT/data"; rm -rf "$D"
$K init "$D" --catalog catalog/kernel_data > "$OUT/init.txt" 2>&1
timeout 120 $K worker --data "$D" --device cuda --once --catalog catalog --judge-dir judge --python "$PY" \
  > "$OUT/worker_once.txt" 2>&1
rc=$?
row "kzoo worker --device cuda picks" "$(grep -o 'as device class .*' "$OUT/worker_once.txt" | head -1) (rc $rc)"
timeout 60 $K worker --data "$D" --device cuda --device-class h100 --once --catalog catalog --judge-dir judge \
  > "$OUT/worker_h100.txt" 2>&1
rc=$?
row "--device-class h100 on this GPU (must refuse)" "rc $rc $(grep -o 'contradicts[^;]*' "$OUT/worker_h100.txt" | head -1)"

# 2. Grades: the eager package and the fused sample (Triton), with the provenance and the gates.
mkdir -p "$OUT/fused" && cp -r "$EAGER/." "$OUT/fused/" && cp catalog/samples/softmax_fused.py "$OUT/fused/src/softmax.py"
for what in eager fused; do
  pkg=$EAGER; [ $what = fused ] && pkg="$OUT/fused"
  timeout 280 $K grade "$pkg" --device cuda --json --catalog catalog --judge-dir judge --python "$PY" --timeout 270 \
    > "$OUT/grade_$what.json" 2> "$OUT/grade_$what.err"
  rc=$?
  "$PY" - "$OUT/grade_$what.json" "$what" "$rc" >> "$T" <<'PYEOF'
import json, sys
path, what, rc = sys.argv[1:]
try:
    doc = json.load(open(path))
except Exception as e:  # noqa: BLE001
    print("%-44s rc %s, no document (%s)" % ("grade " + what, rc, e)); sys.exit(0)
p = doc.get("provenance") or {}
print("%-44s rc %s accept=%s device_class=%s" % ("grade " + what, rc, doc.get("overall", {}).get("accept"), doc.get("device_class")))
print("%-44s gpu=%s driver=%s cuda=%s torch=%s judge=%s task=%s" % ("  provenance", p.get("gpu_name"), p.get("driver"),
      p.get("cuda"), p.get("torch"), p.get("judge"), (p.get("task_sha256") or "")[:12]))
for c in doc.get("cases", []):
    g = c.get("gates", {})
    pa, lc = g.get("profile-accounting", {}), g.get("library-calls", {})
    print("%-44s %s GB/s=%s accounting=%s (pass %s) libraries=%s (pass %s) guardrails atol/rtol=%s/%s" % (
        "  " + c["test_case_id"], c["status"], round((c.get("metrics") or {}).get("GB/s") or 0, 1),
        None if pa.get("value") is None else round(pa["value"], 3), pa.get("pass"), lc.get("families"), lc.get("pass"),
        (c.get("guardrails") or {}).get("correctness_atol"), (c.get("guardrails") or {}).get("correctness_rtol")))
PYEOF
done

# 3. The GPU tests of the library gate and of the provenance.
(cd judge && timeout 600 "$PY" -m unittest -v \
  tests.test_exploits.GpuTricks.test_library_names_dropped_from_the_profile_on_the_gpu \
  tests.test_exploits.GpuTricks.test_code_that_is_honest_only_under_the_profiler_on_the_gpu \
  tests.test_exploits.GpuTricks.test_torchs_fused_softmax_against_a_three_pass_reference_on_the_gpu \
  tests.test_judge.OnTheGpu tests.test_provenance) > "$OUT/trust_tests.txt" 2>&1
rc=$?
row "GPU tests (library gate, provenance)" "rc $rc $(tail -1 "$OUT/trust_tests.txt")"

echo "== trust_h200 summary"
cat "$T"
