#!/usr/bin/env bash
# The GPU acceptance run (docs/GPU.md): two named device calls on an H200, each under
# 9 minutes, that prove the GPU path works on this code; a passing run on a judge/runner
# commit clears docs/GPU.md's "unverified on a GPU since" line.
#   STEPS=fidelity (call 1): scripts/gpu/fidelity.sh -- every catalog package, the twelve
#      eager baselines and the twelve GPU solutions, graded by `kzoo grade --device cuda` at
#      the judge's defaults in the sandbox (each must be accepted) against Nsight Compute;
#      every case within 1% of ncu, the softmax packages' three grades within 1% of each other.
#   STEPS="grades identical samples tests compare draw" (call 2):
#   1. grades: the timing row (the softmax eager package at the judge's defaults: wall time
#      <= 10 s), the eager package A/B against itself slowed ~5% (accepted, geomean 1.02-1.10x), every catalog
#      sample (catalog/samples/samples.json), sandboxed, accepted;
#   2. the service end to end: init, serve, `kzoo worker --device cuda`; the eager source
#      itself submitted (identical code: refused, its A/B geomean within 1% of 1.0x), a faster
#      sample submitted and accepted within 20 s, a slower one submitted and rejected;
#   3. the judge's GPU test classes (every unittest class whose name holds "Gpu");
#   4. compare: the fused comparison of 16-bit outputs against the torch path
#      (scripts/gpu/compare_probe.py): the same verdicts and figures, and their times;
#   5. draw: the fused draw of float inputs (scripts/gpu/inputs_probe.py): the host build's known
#      answers on the device, and each input set's time against torch's recipe.
# Prints one table; the last line says PASS or FAIL. Exit 0 only on PASS.
# Setup (here, on the Debian machine): bash scripts/build.sh && bash scripts/gpu/bundle.sh,
# then run `bash scripts/gpu/accept.sh` on the device with .device carried.
set -u
cd "$(dirname "$0")/../.." || exit 2
# Logs go to $LOGS; $OUT gets the table and one archive of the logs (the device tool brings
# back at most 8 files).
OUT=${OUT:-/tmp/kzoo-accept-out}; mkdir -p "$OUT"
LOGS=${LOGS:-$(mktemp -d /tmp/kzoo-accept.XXXXXX)}; mkdir -p "$LOGS"
PY=${KZOO_PYTHON:-/opt/torch/.venv/bin/python3}
[ -x "$PY" ] || PY=$(command -v python3)
[ -x .device/bin/kzoo ] || { echo "accept.sh: .device/bin/kzoo missing: run scripts/gpu/bundle.sh here and carry .device" >&2; exit 2; }
. scripts/gpu/unbundle.sh
export KZOO_PYTHON=$PY PYTHONUNBUFFERED=1
K=$PWD/.device/bin/kzoo
T="$LOGS/table.txt"; : > "$T"
fails=0; rows=0
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# row STEP EXPECT GOT WALL DETAIL
row() {
  local mark=ok; [ "$2" = "$3" ] || { mark=FAIL; fails=$((fails + 1)); }
  rows=$((rows + 1))
  printf '%-4s | %-52s | %-9s | %-9s | %7s | %s\n' "$mark" "$1" "$2" "$3" "$4" "$5" >> "$T"
  cp "$T" "$OUT/accept_table.txt"  # so far: a run cut at its limit still shows its rows
}
verdict() { case $1 in 0) echo accepted ;; 1) echo rejected ;; *) echo "error($1)" ;; esac; }
# The median of each case and the judge's own phase times, from a grade's JSON and stderr.
detail() {
  "$PY" - "$1" "$2" <<'PYEOF'
import json, re, sys
try:
    doc = json.load(open(sys.argv[1]))
except Exception as e:  # noqa: BLE001
    print("no JSON: %s" % e); sys.exit()
d = doc if "cases" in doc else (doc.get("document") or {})
meds = [re.sub(r"^median ([0-9.]+) us.*", r"\1", c.get("message", "")) for c in d.get("cases", [])]
err = open(sys.argv[2], errors="replace").read()
t = [l.split("time:", 1)[1].strip() for l in err.splitlines() if "kzoo-judge: time:" in l]
up = [l.split("up", 1)[1].split("s after", 1)[0].strip() for l in err.splitlines() if "judge process up" in l]
# the judge's start before its clock, and whether torch's import found bytecode (the runner's cache)
start = [l for l in err.splitlines() if "before its clock" in l]
def grab(pattern, line):
    m = re.search(pattern, line)
    return m.group(1) if m else "?"
reason = (d.get("overall") or {}).get("accept_reason") or doc.get("reason") or ""
ok = (d.get("overall") or {}).get("accept")
print("median us " + "/".join(m[:9] for m in meds) + (" | judge up %s s" % up[-1] if up else "")
      + (" | start %s s (torch %s s, bytecode %s)" % (grab(r"started ([0-9.]+) s before", start[-1]),
                                                       grab(r"torch and the seed ([0-9.]+) s", start[-1]),
                                                       grab(r"torch's bytecode: (\w+)", start[-1])) if start else "")
      + (" | judge " + t[-1] if t else "") + ("" if ok else " | reason: " + str(reason)[:300]))
PYEOF
}
# The runner made ready as a runner image is (`kzoo prepare`: the judge interpreter's modules
# compiled into kzoo's bytecode cache, runner/bytecode_cache.hpp); its one-time cost is a row of
# its own, and every grade below starts from it.
t0=$(now)
"$K" prepare --python "$PY" --judge-dir judge > "$LOGS/prepare.out" 2> "$LOGS/prepare.err"; rc=$?
row "runner prepared (kzoo prepare: the bytecode cache)" 0 "$rc" "$(since "$t0")" "$(tail -1 "$LOGS/prepare.err")"
BYTECODE=$(tail -1 "$LOGS/prepare.out")
{ echo "commit: $(cat .device/COMMIT 2>/dev/null | tr '\n' ' ')"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
  "$PY" -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  # the timing row's largest part before the judge's clock, and whether torch has bytecode to load
  "$PY" scripts/gpu/startup_probe.py --runs 1
  # the same with the cache the sandbox gets (PYTHONPYCACHEPREFIX, nothing written)
  [ -d "$BYTECODE" ] && PYTHONPYCACHEPREFIX=$BYTECODE PYTHONDONTWRITEBYTECODE=1 "$PY" scripts/gpu/startup_probe.py --runs 2
} > "$LOGS/env.txt" 2>&1
t_all=$(now)
# The plain processes below (the probes, the judge's GPU tests and the children they start) read the
# same cache as the sandboxes do, instead of compiling torch's modules at each start.
[ -d "$BYTECODE" ] && export PYTHONPYCACHEPREFIX=$BYTECODE PYTHONDONTWRITEBYTECODE=1

# 1. grade every catalog package and every sample
# Every package at ITERATIONS timed calls per case (default 20: twelve tasks must fit the run's
# 8 minutes); the timing row grades the softmax eager package at the judge's defaults (100).
ITERATIONS=${ITERATIONS:-20}
grade() {  # grade NAME DIR [ITERATIONS]
  local f="$LOGS/grade_${1// /_}" t0 it=(); t0=$(now)
  [ -n "${3:-}" ] && it=(--iterations "$3")
  timeout "${GRADE_TIMEOUT:-150}" "$K" grade "$2" --device cuda --json --catalog catalog --judge-dir judge \
    --python "$PY" --timeout "$(( ${GRADE_TIMEOUT:-150} - 10 ))" "${it[@]}" -v > "$f.json" 2> "$f.err"
  local rc=$?
  row "grade $1" accepted "$(verdict $rc)" "$(since "$t0")" "$(detail "$f.json" "$f.err")"
}
# STEPS picks parts: fidelity (call 1); grades, identical, samples (the service's sample
# submissions), tests, compare, draw (call 2). A run cut short can be completed by a further one on
# the same code, saying so in docs/GPU.md.
STEPS=" ${STEPS:-grades identical samples tests compare draw} "
step() { [[ $STEPS == *" $1 "* ]]; }
if step fidelity; then
  t0=$(now)
  OUT="$OUT" LOGS="$LOGS/fidelity" bash scripts/gpu/fidelity.sh > "$LOGS/fidelity.txt" 2>&1
  ft="$OUT/fidelity_table.txt"
  n=$(grep -c '| accepted$' "$ft" 2>/dev/null); bad=$(grep -c 'NOT accepted$' "$ft" 2>/dev/null)
  row "fidelity.sh: every catalog package accepted" yes "$([ "${bad:-1}" = 0 ] && [ "${n:-0}" -gt 0 ] && echo yes || echo no)" \
    "$(since "$t0")" "$n cases accepted, $bad not"
  last=$(grep "^fidelity: [0-9]" "$ft" 2>/dev/null | tail -1)
  row "fidelity: every case within 1% of ncu, repeats within 1%" yes \
    "$(awk '/^fidelity:/ { print ($2 == $4 && $2 > 0 && $11 == $13) ? "yes" : "no" }' <<< "$last")" 0 "$last"
fi
if step grades; then
t0=$(now)
grade "softmax_eager (timing: 3 cases x 100 calls)" catalog/kernel_data/h200/norm/softmax/bf16/softmax_eager
row "timing row: kzoo grade within 10 s of wall time" yes \
  "$(awk -v t="$(since "$t0")" 'BEGIN { print (t + 0 <= 10) ? "yes" : "no" }')" "$(since "$t0")" "softmax eager, defaults"
fi
# sample_pkg FILE KID MODULE: the catalog package KID with FILE (catalog/samples) as its MODULE,
# in a kernel_data root of its own under $LOGS/pkgs (so the package keeps its kernel ID); prints
# the package's directory.
sample_pkg() {
  local root="$LOGS/pkgs/${1%.py}"
  rm -rf "$root"; mkdir -p "$root/$(dirname "$2")"; touch "$root/.kernel_data"
  cp -r "catalog/kernel_data/$2" "$root/$2" && cp "catalog/samples/$1" "$root/$2/src/$3"
  echo "$root/$2"
}
# A/B's resolution (issue 17: a 5% faster variant is accepted): the eager softmax against itself
# slowed by ~5% (catalog/samples/softmax_slowed_5pct.py, an incumbent whose output is the same),
# through `kzoo grade --against`, at the defaults. The second row holds the fixture to what it
# claims, so that a slowdown far from 5% cannot pass the first by a wide margin.
if step grades; then
  kid5=h200/norm/softmax/bf16/softmax_eager
  inc5=$(sample_pkg softmax_slowed_5pct.py "$kid5" softmax.py)
  t0=$(now); f="$LOGS/grade_ab_5pct"
  timeout "${GRADE_TIMEOUT:-150}" "$K" grade "catalog/kernel_data/$kid5" --against "$inc5" --device cuda --json \
    --catalog catalog --judge-dir judge --python "$PY" --timeout "$(( ${GRADE_TIMEOUT:-150} - 10 ))" -v > "$f.json" 2> "$f.err"
  rc=$?
  g5=$("$PY" -c 'import json,sys
try:
    v = json.load(open(sys.argv[1]))["kzoo_grade"]["decision"]["verdict"]
    print("%.4f | cases %s | %s" % (v["geomean_speedup"], " / ".join("%.4f" % c["speedup"] for c in v["cases"]), v.get("summary", "")[:200]))
except Exception as e: print("? | no verdict: %s" % e)' "$f.json")
  row "A/B: eager softmax against itself 5% slower" accepted "$(verdict $rc)" "$(since "$t0")" "geomean $g5"
  row "that A/B's geomean within 1.02-1.10x (the fixture's ~5%)" yes \
    "$(awk -v g="${g5%% *}" 'BEGIN { print (g + 0 >= 1.02 && g + 0 <= 1.10) ? "yes" : "no" }')" 0 "${g5%% *}"
fi
samples=$("$PY" -c 'import json; [print(s["file"], s["kernel_id"], s["module"], s["vs_eager"]) for s in json.load(open("catalog/samples/samples.json"))["samples"]]')
while read -r file kid module vs; do
  [ -n "$file" ] || continue
  d=$(sample_pkg "$file" "$kid" "$module")
  step grades && grade "sample ${file%.py} (x$ITERATIONS)" "$d" "$ITERATIONS"
done <<< "$samples"

# 2. the service on the GPU: identical code refused (its A/B within 1% of 1.0x), a faster sample
#    accepted, a slower one rejected
if step identical || step samples; then
data=$(mktemp -d /tmp/kzoo-data.XXXXXX)
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export KZOO_SERVER=http://127.0.0.1:$port
"$K" init "$data/d" --catalog catalog/kernel_data > "$LOGS/init.log" 2>&1
# Submissions carry a bearer token (docs/SECURITY.md): a member of the project, so nothing is held.
"$K" user add accept --role member --data "$data/d" >> "$LOGS/init.log" 2>&1
KZOO_TOKEN=$("$K" token new accept --data "$data/d" 2>> "$LOGS/init.log"); export KZOO_TOKEN
"$K" serve --data "$data/d" --listen "127.0.0.1:$port" > "$LOGS/serve.log" 2>&1 & serve=$!
"$K" worker --data "$data/d" --device cuda --catalog catalog --judge-dir judge --python "$PY" --timeout 200 \
  > "$LOGS/worker.log" 2>&1 & worker=$!
for _ in $(seq 100); do curl -fsS "$KZOO_SERVER/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
fi
geomean() { "$PY" -c 'import json,sys
try:
    d = json.load(open(sys.argv[1])); v = d.get("verdict") or {}
    print(v.get("geomean_speedup", "?"), "|", (v.get("summary") or "; ".join(d.get("reasons") or []))[:240])
except Exception as e: print("? | no JSON:", e)' "$1"; }
# Where a submission's seconds went: its job's queue wait and run (the submission's JSON), and the
# judge's own phases from the job's log (GET /api/jobs/ID/log, saved as LOGS/job_NAME.log).
jobtimes() {  # jobtimes NAME JSON
  local id
  id=$("$PY" -c 'import json,sys
try: print(json.load(open(sys.argv[1]))["jobs"][-1]["id"])
except Exception: print("")' "$2")
  [ -n "$id" ] && curl -fsS -H "Authorization: Bearer $KZOO_TOKEN" "$KZOO_SERVER/api/jobs/$id/log" > "$LOGS/job_$1.log" 2>/dev/null
  "$PY" - "$2" "$LOGS/job_$1.log" <<'PYEOF'
import datetime, json, sys
def t(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() if s else None
try:
    j = json.load(open(sys.argv[1]))["jobs"][-1]
    c, s, f = t(j.get("created_at")), t(j.get("started_at")), t(j.get("finished_at"))
    out = "queued %.1f s, ran %.1f s" % (s - c, f - s) if None not in (c, s, f) else "no job times"
except Exception as e:  # noqa: BLE001
    out = "no job times (%s)" % e
try:
    lines = [l.split("time:", 1)[1].strip() for l in open(sys.argv[2], errors="replace") if "kzoo-judge: time:" in l]
    if lines:
        out += " | judge " + lines[-1][:300]
except OSError:
    pass
print(out)
PYEOF
}
first=$(head -1 <<< "$samples"); kid0=$(awk '{print $2}' <<< "$first")
if step identical; then
t0=$(now)
timeout "${SUBMIT_TIMEOUT:-200}" "$K" submit "catalog/kernel_data/$kid0" --submitter accept \
  --summary "accept.sh: the eager source itself (identical code)" --json > "$LOGS/submit_identical.json" 2> "$LOGS/submit_identical.err"
rc=$?
g=$(geomean "$LOGS/submit_identical.json")
row "service: submit the eager source itself (identical)" rejected "$(verdict $rc)" "$(since "$t0")" \
  "geomean speedup $g | $(jobtimes identical "$LOGS/submit_identical.json")"
row "identical code: A/B geomean within 1% of 1.0x" yes \
  "$(awk -v g="${g%% *}" 'BEGIN { print (g + 0 > 0.99 && g + 0 < 1.01) ? "yes" : "no" }')" 0 "${g%% *}"
fi
while read -r file kid module vs; do
  [ -n "$file" ] || continue
  step samples || continue
  want=accepted; [ "$vs" = faster ] || want=rejected
  t0=$(now)
  timeout "${SUBMIT_TIMEOUT:-200}" "$K" submit "$LOGS/pkgs/${file%.py}/$kid" --kernel-id "$kid" --submitter accept \
    --summary "accept.sh: $file ($vs than eager)" --json > "$LOGS/submit_${file%.py}.json" 2> "$LOGS/submit_${file%.py}.err"
  rc=$?
  took=$(since "$t0")
  row "service: submit ${file%.py} (worker --device cuda)" "$want" "$(verdict $rc)" "$took" \
    "geomean speedup $(geomean "$LOGS/submit_${file%.py}.json") | $(jobtimes "${file%.py}" "$LOGS/submit_${file%.py}.json")"
  [ "$want" = accepted ] && row "service: upload to A/B verdict within 20 s" yes \
    "$(awk -v t="$took" 'BEGIN { print (t + 0 <= 20) ? "yes" : "no" }')" "$took" "${file%.py}"
done <<< "$samples"
if step identical || step samples; then
  kill "$worker" "$serve" 2>/dev/null; wait "$worker" "$serve" 2>/dev/null
  rm -rf "$data"
fi

# 3. the judge's GPU test classes
if step tests; then
t0=$(now)
(cd judge && timeout "${TESTS_TIMEOUT:-240}" "$PY" -m unittest discover -s tests -t . -k Gpu -k gpu -v) > "$LOGS/gpu_tests.txt" 2>&1
rc=$?
ran=$(grep -Eo '^Ran [0-9]+ tests?' "$LOGS/gpu_tests.txt" | tail -1)
row "judge GPU tests (-k Gpu -k gpu)" passed "$([ $rc = 0 ] && echo passed || echo "failed($rc)")" "$(since "$t0")" \
  "$ran; $(tail -1 "$LOGS/gpu_tests.txt")"
fi

# The fused comparison of 16-bit outputs (judge/kzoo_judge/compare_fused.py, off by default until
# this row passes on a GPU) against compare.py's torch path on the same tensors: the same verdict
# and figures, and each one's time (the probe's lines are in compare_probe.txt and the logs).
if step compare; then
t0=$(now)
timeout 120 "$PY" scripts/gpu/compare_probe.py --blocks-per-sm 2 --blocks-per-sm 4 --blocks-per-sm 8 \
  > "$LOGS/compare_probe.txt" 2>&1
rc=$?
cp "$LOGS/compare_probe.txt" "$OUT/compare_probe.txt"
differs=$(grep -c "DIFFERS" "$LOGS/compare_probe.txt"); fused=$(grep -c "fused, " "$LOGS/compare_probe.txt")
row "fused comparison: the torch path's verdicts and figures" yes \
  "$([ $rc = 0 ] && [ "$differs" = 0 ] && [ "$fused" -gt 0 ] && echo yes || echo no)" "$(since "$t0")" \
  "$(grep -E "torch path|fused, 4 " "$LOGS/compare_probe.txt" | tr -s ' ' | paste -sd ';' | cut -c1-300)"
fi

# The fused draw of float inputs (judge/kzoo_judge/draw_fused.py, off by default until this row
# passes on a GPU): its draw of the known set is the host build's to the bit, and each set's time
# against torch's recipe (the probe's lines are in inputs_probe.txt and the logs).
if step draw; then
t0=$(now)
timeout 120 "$PY" scripts/gpu/inputs_probe.py > "$LOGS/inputs_probe.txt" 2>&1
rc=$?
cp "$LOGS/inputs_probe.txt" "$OUT/inputs_probe.txt"
lines=$(grep -c "^inputs_probe: " "$LOGS/inputs_probe.txt"); off=$(grep -c "fused draw is off" "$LOGS/inputs_probe.txt")
row "fused draw: the host build's known answers" yes \
  "$([ $rc = 0 ] && [ "$lines" -gt 0 ] && [ "$off" = 0 ] && echo yes || echo no)" "$(since "$t0")" \
  "$(grep -oE "make_inputs [0-9.]+ ms, fused draw [0-9.]+ ms \([0-9.]+x" "$LOGS/inputs_probe.txt" | paste -sd ';')"
fi

echo "== accept.sh on $(head -1 "$LOGS/env.txt") | $(sed -n 2p "$LOGS/env.txt") | $(sed -n 3p "$LOGS/env.txt")"
cat "$T"
verdict_line="accept.sh: $([ $fails = 0 ] && echo PASS || echo FAIL) ($((rows - fails))/$rows rows ok) in $(since "$t_all") s"
echo "$verdict_line"
{ cat "$LOGS/env.txt"; cat "$T"; echo "$verdict_line"; } > "$OUT/accept_table.txt"
tar czf "$OUT/accept_logs.tgz" -C "$LOGS" --exclude=pkgs . 2>/dev/null
[ $fails = 0 ]
