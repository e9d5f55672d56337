#!/usr/bin/env bash
# The maintainer's path, from nothing to a graded new task and a local A/B verdict, EXACTLY as
# docs/TASKS.md walks it: the five commands are read from the page (between its "maintainer path"
# markers) and run in order in an empty directory, on the CPU, with the real judge in the sandbox.
# A change to the page that breaks the path, or to kzoo that breaks the page, fails here.
# Usage: maintainer_path.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=$(realpath "${1:?kzoo binary}")
SRC=${2:?source dir}
T=$(mktemp -d)
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib/prerequisite.sh"
[ -x "$(bwrap_path)" ] || require_prerequisite "bubblewrap is not installed ($(bwrap_path))"
/usr/bin/python3 -c 'import torch' 2>/dev/null || require_prerequisite "Debian's python3-torch"

mapfile -t steps < <(awk '/<!-- maintainer path: begin -->/ {on = 1; next} /<!-- maintainer path: end -->/ {on = 0}
                         on && /^    kzoo / {sub(/^    /, ""); print}' "$SRC/docs/TASKS.md")
check "docs/TASKS.md walks the path in five commands (found ${#steps[@]})" "$([ ${#steps[@]} = 5 ] && echo 0 || echo 1)"
[ ${#steps[@]} = 5 ] || { echo "$CHECKS checks, $FAILS failed"; exit 1; }

# Every step exits 0 but the last: an A/B of the new baseline against itself is the worker's
# "not faster than the incumbent", a rejection (exit 1).
want=(0 0 0 0 1)
cd "$T" || exit 1
RUN_TO_TIMEOUT=900
for i in 0 1 2 3 4; do
  read -r -a argv <<<"${steps[$i]}"
  run_to "step $((i + 1)): ${steps[$i]}" "${want[$i]}" "$KZOO" "${argv[@]:1}"
  cp "$T/out" "$T/step$((i + 1)).out"
  cp "$T/err" "$T/step$((i + 1)).err"
done

# What each step left, as the page says.
task_dir=$(head -1 "$T/step1.out")
check "task new wrote task.json, independent.py and drop.py" \
  "$([ -f "$task_dir/task.json" ] && [ -f "$task_dir/independent.py" ] && [ -f "$task_dir/drop.py" ]; echo $?)"
check "calibrate printed E, D and the allowed range per shape" \
  "$(grep -q "allowed tolerance: above 2E" "$T/step2.out" && grep -q "^  correctness\[0\]" "$T/step2.out"; echo $?)"
/usr/bin/python3 - "$task_dir/task.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["grading"]["tolerance"]
assert 2 * t["measured_floor_E"] < t["value"] < t["measured_drop_D"] / 10, t
assert t["basis"].startswith("`kzoo task calibrate`"), t["basis"]
PY
check "calibrate --write stored E and D that bracket the tolerance" $?
check "the task is lint-clean" "$(grep -q "lint-clean" "$T/step3.err"; echo $?)"
pkg=$(head -1 "$T/step4.out")
check "scaffold made the eager package" "$([ -f "$pkg/.kernel_package/benchmark.py" ] && [ -d "$pkg/src" ]; echo $?)"
check "the A/B verdict is the worker's: the same source is no improvement" \
  "$(grep -q "not faster than the incumbent" "$T/step5.out"; echo $?)"
check "the grade used the new catalog's trusted harness" "$(! grep -q "untrusted harness" "$T/step5.err"; echo $?)"
check "the package was graded correct on every case" "$(grep -q " ok " "$T/step5.out" && ! grep -q "incorrect" "$T/step5.out"; echo $?)"

echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" = 0 ]
