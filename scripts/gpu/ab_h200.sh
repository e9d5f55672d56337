#!/usr/bin/env bash
# A/B on the GPU: the judge (no sandbox) times a candidate against an incumbent,
# interleaved, at the task's graded shapes. Prints per-case speed-up lines.
#   usage: bash scripts/gpu/ab_h200.sh TASK CANDIDATE_SRC INCUMBENT_SRC [ITERATIONS]
set -u
PY=${KZOO_PYTHON:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-/tmp/kzoo-out}; mkdir -p "$OUT"
task=$1 cand=$(realpath "$2") inc=$(realpath "$3") it=${4:-30}
tag=$(basename "$cand")-vs-$(basename "$inc")
(cd judge && "$PY" -m kzoo_judge run --task "../catalog/tasks/$task/task.json" --module-dir "$cand" \
  --incumbent "$inc" --device "${DEVICE:-cuda}" --iterations "$it") > "$OUT/ab_$tag.json" 2> "$OUT/ab_$tag.err"
echo "ab $task $tag rc=$?"
"$PY" - "$OUT/ab_$tag.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for c in d["cases"]:
    s = c.get("speedup") or {}
    print("   %s: submission %s us, incumbent %s us, speed-up %s, per-pair median %s, faster in %s of %s pairs"
          % (c["test_case_id"], c.get("metrics", {}).get("time_us"), (c.get("incumbent") or {}).get("median_us"),
             s.get("value"), s.get("ratio_median"), s.get("faster_pairs"), s.get("pairs")))
PY
