#!/usr/bin/env bash
# The catalog on a GPU machine in one device call (docs/CATALOG.md): for every task in catalog/tasks,
#   A. (in parallel, nothing timed) E and D on the GPU torch (`kzoo task calibrate --device cuda`), the
#      tolerance checked against honest fast-math variants (catalog_helper.py fastmath: the solution, and
#      the reference with reduced-precision matmuls), and torch.compile(mode="max-autotune") of the
#      reference compiled and autotuned into a shared inductor cache (catalog_helper.py time --warm-only);
#   B. each solution (catalog/solutions/gpu) graded by `kzoo grade --device cuda --json`, in the sandbox;
#   C. (quiet GPU) torch.compile of each reference timed from that cache, the eager reference, the vendor
#      library for T4 tasks, and the roofline (catalog_helper.py time: CUDA events, L2 flushed, median);
#   D. each eager package (catalog/kernel_data) graded by `kzoo grade --device cuda --json`;
#   E. one table: task, eager, torch.compile, solution, % of roofline, target, met?; the proposed
#      tolerances in $OUT/tolerances.json; every log in $OUT/catalog_logs.tar.gz.
# Every step is bounded by its own timeout and by the call's deadline (DEADLINE_S, default 535 s): a step
# that would outrun it is skipped and says so in the table, and a task that fails never stops the others.
# Priorities when the deadline bites: the solutions' grades (B) and the compile timings (C) first; an
# eager package whose grade is skipped (D) shows the helper's CUDA-event figure instead, marked (events).
# A second call with TASKS=... finishes what one call could not.
# Setup as scripts/gpu/judge_h200.sh: run from the repository root with .device/ carried (.device/bin/kzoo,
# .device/lib/, Debian's bubblewrap .deb). Knobs: TASKS (space-separated, default all), ITERATIONS (timed
# calls per graded case, default 30), JOBS (parallel jobs in step A, default 6), OUT, KZOO_PYTHON.
#   usage: bash scripts/gpu/catalog_bench.sh
set -u
cd "$(dirname "$0")/../.."
START=$(date +%s)
DEADLINE=${DEADLINE_S:-535}
# $OUT gets the table, the proposed tolerances, the timings and one archive of everything else
# (the device tool brings back at most 8 files); the step logs and results go to $WORK.
OUT=${OUT:-/tmp/kzoo-out}
WORK=${WORK:-$(mktemp -d /tmp/kzoo-catalog.XXXXXX)}
mkdir -p "$OUT" "$WORK"/{calibrate,fastmath,warm,grade}
PY=${KZOO_PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
[ -x .device/bin/kzoo ] || { echo "catalog_bench.sh: .device/bin/kzoo missing: run scripts/gpu/bundle.sh here and carry .device" >&2; exit 2; }
JOBS=${JOBS:-6}
ITER=${ITERATIONS:-30}
mkdir -p /tmp/bw && dpkg -x .device/bubblewrap_*.deb /tmp/bw
export KZOO_BWRAP=/tmp/bw/usr/bin/bwrap LD_LIBRARY_PATH=$PWD/.device/lib KZOO_PYTHON=$PY
# Steps A and C share the compiled and autotuned kernels through this cache.
export TORCHINDUCTOR_CACHE_DIR=${TORCHINDUCTOR_CACHE_DIR:-/tmp/kzoo-inductor}
K=$PWD/.device/bin/kzoo
H=scripts/gpu/catalog_helper.py
TASKS=${TASKS:-$(ls catalog/tasks)}
LOG="$WORK/steps.txt"
: > "$LOG"

left() { echo $((DEADLINE - ($(date +%s) - START))); }
# bounded SECONDS CMD...: CMD under the smaller of SECONDS and the time left (exit 124 when skipped or cut).
bounded() {
  local t=$1 l
  shift
  l=$(left)
  [ "$l" -lt "$t" ] && t=$l
  if [ "$t" -le 5 ]; then echo "skipped (deadline): $*" >> "$LOG"; return 124; fi
  timeout -k 5 "$t" "$@"
}
step() { echo "[$(($(date +%s) - START)) s] $*" | tee -a "$LOG"; }
# The package of TASK under ROOT (catalog/kernel_data or catalog/solutions/gpu): the one whose desc.yaml
# names the task.
pkg_of() {
  local f
  f=$(grep -l -x "    ref: $2" $(find "$1" -path '*/.kernel_package/desc.yaml' 2>/dev/null) 2>/dev/null | head -1)
  [ -n "$f" ] && dirname "$(dirname "$f")"
}
case_of() { "$PY" -c "import json,sys; t=json.load(open(sys.argv[1])); w=t['workloads']; n='synthetic' if 'synthetic' in w else sorted(w)[0]; print(n + '-0')" "catalog/tasks/$1/task.json"; }

{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
  "$PY" -c 'import sys, torch; print(sys.executable, torch.__version__, torch.version.cuda)'
  "$PY" -c 'import triton; print("triton", triton.__version__)'
  command -v nvcc ninja; ls /usr/local/cuda/bin/nvcc "$(dirname "$PY")/ninja" 2>&1
  git log -1 --format='commit %H %cI' 2>/dev/null; } > "$WORK/env.txt" 2>&1

# --- A. calibration, fast-math check and compile warm-up, in parallel (nothing here is timed) -------------
step "A: calibrate, fast-math, compile warm-up ($JOBS at a time)"
a_job() {  # a_job KIND TASK
  local kind=$1 t=$2 sol
  case $kind in
    calibrate) timeout -k 5 "${CAL_TIMEOUT:-150}" "$K" task calibrate "catalog/tasks/$t" --device cuda --python "$PY" \
                 --judge-dir judge > "$WORK/calibrate/$t.json" 2> "$WORK/calibrate/$t.err" ;;
    fastmath) sol=$(pkg_of catalog/solutions/gpu "$t")
              [ -n "$sol" ] || { echo '{"error": "no solution package"}' > "$WORK/fastmath/$t.json"; return; }
              timeout -k 5 "${FAST_TIMEOUT:-200}" "$PY" "$H" fastmath "catalog/tasks/$t" "$sol/src" \
                > "$WORK/fastmath/$t.json" 2> "$WORK/fastmath/$t.err" ;;
    warm) timeout -k 5 "${WARM_TIMEOUT:-220}" "$PY" "$H" time "catalog/tasks/$t" --warm-only --task-timeout 210 \
            > "$WORK/warm/$t.json" 2> "$WORK/warm/$t.err" ;;
  esac
  echo "  A $kind $t rc=$?" >> "$LOG"
}
export -f a_job pkg_of
export K H PY WORK LOG
# The three kinds interleaved (a budget cut then costs every kind a little, not one kind all), each kind a
# third of the task list further on, so one task's three jobs -- the big ones hold tens of GB of GPU
# memory each -- never run side by side.
{ set -- $TASKS; n=$#; list=("$@")
  for ((i = 0; i < n; i++)); do
    echo "warm ${list[i]}"; echo "calibrate ${list[(i + n / 3) % n]}"; echo "fastmath ${list[(i + 2 * n / 3) % n]}"
  done; } | bounded "${A_BUDGET:-200}" xargs -P "$JOBS" -L 1 bash -c 'a_job "$0" "$1"'
echo "A done rc=$?" >> "$LOG"

# --- B. the solutions, graded in the sandbox ---------------------------------------------------------------
grade() {  # grade KIND TASK PACKAGE LIMIT
  local f="$WORK/grade/$1_$2"
  if [ -z "$3" ]; then echo '{"status": "error", "reason": "no package"}' > "$f.json"; return; fi
  bounded "$4" "$K" grade "$3" --device cuda --json --catalog catalog --judge-dir judge --python "$PY" \
    --cases "$(case_of "$2")" --iterations "$ITER" --timeout "$(($4 - 10))" -v > "$f.json" 2> "$f.err"
  echo "  grade $1 $2 rc=$?" >> "$LOG"
}
step "B: solutions"
for t in $TASKS; do
  p=$(pkg_of catalog/solutions/gpu "$t")
  limit=${SOL_TIMEOUT:-120}
  [ -n "$p" ] && [ -f "$p/src/build.py" ] && limit=${BUILD_SOL_TIMEOUT:-240}  # nvcc + ninja in the build step
  grade solution "$t" "$p" "$limit"
done

# --- C. torch.compile (from the warm cache), eager, vendor, roofline on a quiet GPU ------------------------
step "C: torch.compile, eager, vendor, roofline"
dirs=(); for t in $TASKS; do dirs+=("catalog/tasks/$t"); done
bounded "${C_BUDGET:-200}" "$PY" "$H" time "${dirs[@]}" --calls 20 --task-timeout 60 > "$WORK/time.jsonl" 2> "$WORK/time.err"
echo "C done rc=$?" >> "$LOG"

# --- D. the eager packages, graded in the sandbox ----------------------------------------------------------
step "D: eager packages"
for t in $TASKS; do grade eager "$t" "$(pkg_of catalog/kernel_data "$t")" "${EAGER_TIMEOUT:-90}"; done

# --- E. the table ------------------------------------------------------------------------------------------
step "E: table"
"$PY" - "$WORK" $TASKS > "$WORK/table.txt" 2> "$WORK/table.err" <<'PYEOF'
import json, math, os, re, sys
out, tasks = sys.argv[1], sys.argv[2:]

def last_json(path):
    try:
        text = open(path).read()
    except OSError:
        return None
    for start in [m.start() for m in re.finditer(r"^\{", text, re.M)][::-1]:
        try:
            return json.loads(text[start:])
        except ValueError:
            continue
    return None

timing = {}
try:
    for line in open(os.path.join(out, "time.jsonl")):
        d = json.loads(line)
        timing[d["task"]] = d
except OSError:
    pass

def graded_us(kind, t):
    d = last_json(os.path.join(out, "grade", "%s_%s.json" % (kind, t)))
    if d is None:
        return None, "no result"
    if "cases" not in d:
        return None, (d.get("reason") or d.get("status") or "?")[:60]
    c = d["cases"][0] if d["cases"] else {}
    m = re.search(r"median ([0-9.]+) us", c.get("message", ""))
    if c.get("status") == "ok" and c.get("correct") and m:
        return float(m.group(1)), ""
    return None, ("%s: %s" % (c.get("status"), c.get("message", "")))[:60]

tols = {}
rows = []
hdr = ("task", "eager us", "compile us", "solution us", "% roofline", "target us", "met?")
for t in tasks:
    task = json.load(open(os.path.join("catalog", "tasks", t, "task.json")))
    tier = task.get("difficulty", {}).get("tier", "?")
    tm = timing.get(t, {})
    roof, comp, vend = tm.get("roofline_us"), tm.get("compile_us"), tm.get("vendor_us")
    eager, why_e = graded_us("eager", t)
    if eager is None and tm.get("eager_us"):
        eager, why_e = tm["eager_us"], "events"  # the helper's CUDA-event figure when the grade is missing
    sol, why_s = graded_us("solution", t)
    if tier == "T4" and vend:
        target, basis = vend, "vendor"
    else:
        cands = [x for x in ((roof / 0.8) if roof else None, (comp / 1.05) if comp else None) if x]
        target, basis = (min(cands), "") if cands else (None, "")
    met = "yes" if (sol and target and sol <= target) else ("NO" if sol and target else "?")
    f = lambda x: "%.1f" % x if isinstance(x, (int, float)) else "-"  # noqa: E731
    rows.append((t + " (%s)" % tier, f(eager) + (" (%s)" % why_e if why_e == "events" else ""), f(comp) if comp else ("- " + tm.get("error", "")[:30]),
                 f(sol) if sol else ("- " + why_s), f(100.0 * roof / sol) if (roof and sol) else "-",
                 f(target) + (" (%s)" % basis if basis else ""), met))
    cal = last_json(os.path.join(out, "calibrate", t + ".json")) or {}
    fm = last_json(os.path.join(out, "fastmath", t + ".json")) or {}
    tol = task["grading"]["tolerance"]
    entry = {"comparator": tol["comparator"], "value": tol["value"], "row_pass": tol.get("row_pass"),
             "gpu_E": cal.get("measured_floor_E"), "gpu_D": cal.get("measured_drop_D"), "basis": cal.get("basis"),
             "fastmath_solution": fm.get("solution"), "fastmath_reference": fm.get("fast_reference"),
             "errors": [x for x in (fm.get("error"),) if x]}
    if tol["comparator"] != "exact" and entry["gpu_E"] is not None and entry["gpu_D"] is not None:
        floor = max(v for v in (entry["gpu_E"], entry["fastmath_solution"], entry["fastmath_reference"]) if v is not None)
        lo, hi = 2 * floor, entry["gpu_D"] / 10
        entry["admissible"] = lo < tol["value"] < hi
        if entry["admissible"]:
            entry["proposed"] = tol["value"]
        elif lo < hi:
            g = math.sqrt(max(lo, 1e-12) * hi)
            entry["proposed"] = float("%.1g" % g)
        else:
            entry["proposed"] = None
            entry["errors"].append("no tolerance separates 2E=%.3g and D/10=%.3g" % (lo, hi))
    elif tol["comparator"] == "exact":
        entry["admissible"] = (fm.get("solution") in (0, 0.0)) if fm else None
        entry["proposed"] = tol["value"]
    tols[t] = entry
json.dump(tols, open(os.path.join(out, "tolerances.json"), "w"), indent=2)
w = [max(len(str(r[i])) for r in rows + [hdr]) for i in range(len(hdr))]
line = lambda r: "| " + " | ".join(str(c).ljust(w[i]) for i, c in enumerate(r)) + " |"  # noqa: E731
print(line(hdr))
print("|" + "|".join("-" * (x + 2) for x in w) + "|")
for r in rows:
    print(line(r))
print()
print("tolerances (GPU E and D, fast-math variants; $OUT/tolerances.json):")
for t, e in tols.items():
    fmt = lambda x: "%.3g" % x if isinstance(x, (int, float)) else str(x)  # noqa: E731
    print("  %-26s %-30s value %-8s E %-9s D %-9s fast sol %-9s fast ref %-9s admissible %s proposed %s %s"
          % (t, e["comparator"], fmt(e["value"]), fmt(e["gpu_E"]), fmt(e["gpu_D"]), fmt(e["fastmath_solution"]),
             fmt(e["fastmath_reference"]), e.get("admissible"), fmt(e.get("proposed")), "; ".join(e["errors"])))
PYEOF
echo "E done rc=$? total $(($(date +%s) - START)) s" >> "$LOG"
cp "$WORK/table.txt" "$WORK/tolerances.json" "$LOG" "$OUT/" 2>/dev/null
cp "$WORK/time.jsonl" "$OUT/" 2>/dev/null
tar -C "$WORK" -czf "$OUT/catalog_logs.tar.gz" .
cat "$LOG" "$WORK/table.txt"
