#!/usr/bin/env bash
# The service as a user runs it: `kzoo init`, `kzoo serve` on a free loopback
# port, `kzoo worker` (CPU, real bubblewrap sandbox, real judge) and the client
# verbs `submit`, `status`, `kernels`, against a real kernel_data git repo in a
# temp data dir. Checks verdicts, exit codes, the commits made (and not made),
# --json output, and a crash of worker and server in the middle of a job.
# Usage: service.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=${1:?usage: service.sh KZOO_BINARY SOURCE_DIR}
SRC=${2:?usage: service.sh KZOO_BINARY SOURCE_DIR}
KZOO=$(cd "$(dirname "$KZOO")" && pwd)/$(basename "$KZOO")
SRC=$(cd "$SRC" && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
KID=h200/norm/softmax/bf16/softmax_eager
CATPKG="$SRC/catalog/kernel_data/$KID"
if [ ! -d "$CATPKG" ] || [ ! -f "$SRC/catalog/samples/softmax_fused.py" ] || ! command -v bwrap >/dev/null; then
  echo "SKIP: no $KID in the catalog, no fused sample, or no bwrap"
  exit 0
fi

T=$(mktemp -d /tmp/kzoo_cli_service.XXXXXX)
chmod 755 "$T"  # the sandbox's user must be able to reach the judge's workdir
D="$T/data"
SERVE_PID=
WORKER_PID=
WORKER2_PID=
FAILS=0
CHECKS=0
IDS=()  # every submission id handed out; all must be final at the end

stop() {  # stop PID: SIGTERM, then SIGKILL if it lingers
  local p=$1
  [ -n "$p" ] || return 0
  kill "$p" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$p" 2>/dev/null
  wait "$p" 2>/dev/null
}
cleanup() {
  stop "$WORKER2_PID"
  stop "$WORKER_PID"
  stop "$SERVE_PID"
  if [ "$FAILS" != 0 ]; then
    echo "-- serve.log (tail)"; tail -n 20 "$T/serve.log" 2>/dev/null
    echo "-- worker.log (tail)"; tail -n 40 "$T/worker.log" 2>/dev/null
  fi
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok   $*"; }
check() {  # check NAME CONDITION-EXIT-CODE
  CHECKS=$((CHECKS + 1))
  if [ "$2" = 0 ]; then ok "$1"; else fail "$1"; fi
}

# run_to NAME EXPECTED_EXIT CMD...: stdout in $T/out, stderr in $T/err.
run_to() {
  local name=$1 want=$2; shift 2
  CHECKS=$((CHECKS + 1))
  timeout 300 "$@" >"$T/out" 2>"$T/err"
  local got=$?
  if [ "$got" = "$want" ]; then
    ok "$name (exit $got)"
  else
    fail "$name: exit $got, expected $want: $*"
    sed 's/^/    out: /' "$T/out" | head -30
    sed 's/^/    err: /' "$T/err" | tail -30
  fi
}

# json FILE EXPR: FILE is one JSON document and EXPR (Python over d) holds.
json() {
  local file=$1 expr=$2
  CHECKS=$((CHECKS + 1))
  if "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
      "$file" "$expr" 2>"$T/pyerr"; then
    ok "json: $expr"
  else
    fail "json check failed: $expr"
    head -c 3000 "$file" | sed 's/^/    doc: /'
    sed 's/^/    py: /' "$T/pyerr"
  fi
}
jget() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

G() { git --git-dir "$D/kernel_data.git" "$@"; }
head_of_main() { G rev-parse refs/heads/main; }
fsck_clean() {  # fsck_clean NAME
  CHECKS=$((CHECKS + 1))
  if G fsck --strict --no-progress >"$T/fsck" 2>&1 && ! grep -qiE 'error|warning|dangling blob' "$T/fsck"; then
    ok "$1: git fsck --strict clean"
  else
    fail "$1: git fsck --strict: $(head -5 "$T/fsck")"
  fi
}
# commits on main whose message carries the trailer `Kzoo-Job: JOB`
commits_with_job() { G log --format='%H%x00%B%x01' main | "$PY" -c '
import sys
job = sys.argv[1]
for entry in sys.stdin.read().split("\x01"):
    if "\x00" not in entry: continue
    h, body = entry.split("\x00", 1)
    if ("Kzoo-Job: " + job) in body.splitlines(): print(h.strip())
' "$1"; }

PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export KZOO_SERVER=http://127.0.0.1:$PORT
unset KZOO_DATA KZOO_CONFIG KZOO_LISTEN KZOO_CATALOG

start_server() {
  "$KZOO" serve --data "$D" --listen "127.0.0.1:$PORT" --catalog "$T/kernel_data" >>"$T/serve.log" 2>&1 &
  SERVE_PID=$!
  for _ in $(seq 100); do
    "$KZOO" kernels >/dev/null 2>&1 && return 0
    kill -0 "$SERVE_PID" 2>/dev/null || break
    sleep 0.2
  done
  fail "the server did not come up on $KZOO_SERVER"
  tail -20 "$T/serve.log"
  exit 1
}
# Few iterations: the CPU timings only need to tell a 3-pass softmax from a
# fused one. 60 calls in CPU batches of 10 give 6 A/B pairs per case, 18 over
# the 3 cases: a real gain passes the verdict's sign test (p <= 0.01) even if
# a loaded CI machine flips three pairs (P(X >= 15 of 18) = 0.004). A short
# lease, so a restarted worker reclaims a dead one's job soon.
start_worker() {
  "$KZOO" worker --data "$D" --device cpu --catalog "$SRC/catalog" --judge-dir "$SRC/judge" \
    --iterations 60 --lease 9 --timeout 240 >>"$T/worker.log" 2>&1 &
  WORKER_PID=$!
}
# wait_final ID TRIES: polls the submission every 0.5 s until it is final;
# its last status document is left in $T/st.json. Fails after TRIES polls.
wait_final() {
  for _ in $(seq "$2"); do
    "$KZOO" status "$1" --json >"$T/st.json" 2>/dev/null
    [ "$(jget "$T/st.json" 'd["final"]' 2>/dev/null)" = True ] && return 0
    sleep 0.5
  done
  return 1
}
# remember_id FILE: the id in a submit --json document (final or queued) into
# LAST_ID and IDS (not in a subshell: IDS must grow).
remember_id() {
  LAST_ID=$(jget "$1" 'd.get("id") or d.get("error", {}).get("id") or ""' 2>/dev/null)
  if [ -n "$LAST_ID" ] && [ "$LAST_ID" != "None" ]; then IDS+=("$LAST_ID"); fi
}

# ---------------------------------------------------------------- bring-up
# The catalog's kernel_data, with the eager baseline made unmistakably slow:
# on a loaded CPU the 3-pass eager softmax and the fused sample are within
# noise of each other (measured: either one "wins" by 1.3x from run to run),
# so a verdict between them would test the machine, not kzoo. Six repeats of
# the same three passes (catalog/samples/softmax_six_passes.py) keep it
# correct and make it ~6x slower.
cp -r "$SRC/catalog/kernel_data" "$T/kernel_data"
SLOWPKG="$T/kernel_data/$KID"
cp "$SRC/catalog/samples/softmax_six_passes.py" "$SLOWPKG/src/softmax.py"
run_to "kzoo init from the (slowed) catalog" 0 "$KZOO" init "$D" --catalog "$T/kernel_data"
[ -d "$D/kernel_data.git" ] || { fail "init made no $D/kernel_data.git"; exit 1; }
start_server
start_worker
fsck_clean "fresh data dir"
base=$(head_of_main)

# ---------------------------------------------------------------- 1. a directory, faster: accepted and committed
mkdir -p "$T/fused"
cp -r "$CATPKG" "$T/fused/pkg"
cp "$SRC/catalog/samples/softmax_fused.py" "$T/fused/pkg/src/softmax.py"
# Tampered harness and bench_result.yaml: the harness would print a forged,
# accepting document and exit; the bench_result claims an absurd figure. The
# trusted harness must run instead, and the server's bench_result must land.
cat >>"$T/fused/pkg/.kernel_package/benchmark.py" <<'EOF'
import json as _j, sys as _s
print(_j.dumps({"overall": {"accept": True}, "forged": True}))
_s.exit(0)
EOF
"$PY" - "$T/fused/pkg/.kernel_package/bench_result.yaml" <<'PY'
import sys, yaml
p = sys.argv[1]
d = yaml.safe_load(open(p))
for c in d["cases"]:
    c["metrics_best"] = {"GB/s": 999999.0}
    c["metrics_current"] = {"GB/s": 999999.0}
yaml.safe_dump(d, open(p, "w"))
PY
run_to "submit DIR (fused softmax) is accepted" 0 \
  "$KZOO" submit "$T/fused/pkg" --kernel-id "$KID" --submitter e2e --summary "softmax: one fused pass" --json
cp "$T/out" "$T/fused.json"
remember_id "$T/fused.json"; fused_id=$LAST_ID
json "$T/fused.json" 'd["state"] == "accepted" and d["final"] is True and d["accepted_commit"] and d["kernel_id"] == "'$KID'"'
json "$T/fused.json" 'len(d["cases"]) >= 1 and all(c["status"] == "ok" and c["correct"] is True and c["metrics"] for c in d["cases"])'
grep -q "submission $fused_id" "$T/err" || fail "submit's stderr does not name submission $fused_id"
accepted=$(jget "$T/fused.json" 'd["accepted_commit"]')
after1=$(head_of_main)
check "main moved to the accepted commit $accepted" "$([ "$after1" = "$accepted" ]; echo $?)"
check "exactly one new commit on main, on top of the old head" \
  "$([ "$(G rev-list --count "$base..$after1")" = 1 ] && [ "$(G rev-parse "$after1^")" = "$base" ]; echo $?)"
G show "$after1:$KID/src/softmax.py" >"$T/committed.py" 2>"$T/err"
check "the commit's tree holds the submitted src/softmax.py" "$(cmp -s "$T/committed.py" "$SRC/catalog/samples/softmax_fused.py"; echo $?)"
G show "$after1:$KID/.kernel_package/bench_result.yaml" >"$T/bench_result.yaml" 2>"$T/err"
CHECKS=$((CHECKS + 1))
if "$PY" - "$T/bench_result.yaml" "$KID" <<'PY'; then ok "bench_result.yaml has metrics for every case"; else fail "bench_result.yaml lacks metrics"; sed 's/^/    /' "$T/bench_result.yaml"; fi
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
assert doc["kernel_id"] == sys.argv[2], doc.get("kernel_id")
assert doc["cases"], "no cases"
for c in doc["cases"]:
    for k in ("metrics_best", "metrics_current"):
        m = c.get(k)
        assert isinstance(m, dict) and m, (c.get("test_case_id"), k, m)
        assert all(isinstance(v, (int, float)) for v in m.values()), m
PY
fused_job=$(jget "$T/fused.json" 'd["jobs"][0]["id"]')
check "the accepting commit carries Kzoo-Job: $fused_job" \
  "$([ "$(commits_with_job "$fused_job")" = "$after1" ]; echo $?)"
check "the submitted (tampered) benchmark.py did not land" \
  "$(G show "$after1:$KID/.kernel_package/benchmark.py" | cmp -s - "$CATPKG/.kernel_package/benchmark.py"; echo $?)"
check "the submitted (forged) bench_result.yaml did not land" \
  "$(G show "$after1:$KID/.kernel_package/bench_result.yaml" | grep -q 999999; [ $? = 1 ]; echo $?)"
check "the commit touches only $KID" \
  "$(G diff --name-only "$base" "$after1" | grep -qv "^$KID/"; [ $? = 1 ]; echo $?)"
fsck_clean "after the accept"

# ---------------------------------------------------------------- 2. a tarball, incorrect: rejected, no commit
mkdir -p "$T/kd/$KID"
touch "$T/kd/.kernel_data"
cp -r "$CATPKG/." "$T/kd/$KID/"
cat >"$T/kd/$KID/src/softmax.py" <<'EOF'
import torch


def softmax(x):
    # Wrong on purpose: the input, unchanged.
    return x.clone()
EOF
run_to "kzoo pack of the incorrect package" 0 "$KZOO" pack "$T/kd/$KID" -o "$T/wrong.tar.gz"
run_to "submit TARBALL (incorrect softmax) is rejected" 1 \
  "$KZOO" submit "$T/wrong.tar.gz" --submitter e2e --summary "softmax: identity (wrong)" --json
cp "$T/out" "$T/wrong.json"
remember_id "$T/wrong.json"
json "$T/wrong.json" 'd["state"] == "rejected" and d["final"] is True and d["accepted_commit"] is None'
json "$T/wrong.json" 'any("correct" in r.lower() for r in d["reasons"])'
json "$T/wrong.json" 'any(c["correct"] is False for c in d["cases"])'
check "no commit for the incorrect submission" "$([ "$(head_of_main)" = "$after1" ]; echo $?)"

# ---------------------------------------------------------------- 3. slower than the incumbent: rejected, no commit
# The incumbent is now the fused softmax (tens of microseconds a call at the CPU
# measure shapes): the A/B must not let the harness's own cost decide.
run_to "submit DIR (the six-pass softmax, after the fused one) is rejected" 1 \
  "$KZOO" submit "$SLOWPKG" --submitter e2e --summary "softmax: six passes" --json
cp "$T/out" "$T/slow.json"
remember_id "$T/slow.json"
json "$T/slow.json" 'd["state"] == "rejected" and any("not faster" in r for r in d["reasons"])'
json "$T/slow.json" 'all(c["correct"] is True for c in d["cases"])'
check "no commit for the slower submission" "$([ "$(head_of_main)" = "$after1" ]; echo $?)"

# ---------------------------------------------------------------- 4. --json of status and kernels
run_to "status --json of the accepted submission" 0 "$KZOO" status "$fused_id" --json
json "$T/out" 'd["id"] == '"$fused_id"' and d["state"] == "accepted" and d["accepted_commit"] == "'"$accepted"'"'
run_to "status (human) of the accepted submission" 0 "$KZOO" status "$fused_id"
grep -q "accepted" "$T/err" || fail "human status does not say accepted: $(cat "$T/err")"
run_to "status of an unknown id is an error" 2 "$KZOO" status 999999 --json
run_to "kernels --json" 0 "$KZOO" kernels --json
json "$T/out" 'any(k["kernel_id"] == "'$KID'" and k["metrics"] and all(m["metrics_best"] for m in k["metrics"].values()) for k in d["kernels"])'
run_to "kernels (human) lists the kernel" 0 "$KZOO" kernels
grep -q "$KID" "$T/out" || fail "kernels does not list $KID"

# ---------------------------------------------------------------- 5. crash of worker and server mid-job
before5=$(head_of_main)
mkdir -p "$T/again"
cp -r "$T/fused/pkg" "$T/again/pkg"
printf '\n# resubmitted to be graded through a crash\n' >>"$T/again/pkg/src/softmax.py"
run_to "submit --no-wait is queued" 0 \
  "$KZOO" submit "$T/again/pkg" --kernel-id "$KID" --submitter e2e --summary "softmax: fused, through a crash" --no-wait --json
cp "$T/out" "$T/crash.json"
remember_id "$T/crash.json"; crash_id=$LAST_ID
json "$T/crash.json" 'd["state"] == "queued" and d["id"] and d["job_id"]'
crash_job=$(jget "$T/crash.json" 'd["job_id"]')
# Wait until the worker holds the job, then give the sandboxed judge a moment to start.
running=no
for _ in $(seq 150); do
  "$KZOO" status "$crash_id" --json >"$T/st.json" 2>/dev/null
  if [ "$(jget "$T/st.json" 'd["state"]' 2>/dev/null)" = running ]; then running=yes; break; fi
  sleep 0.2
done
check "the worker claimed the job (state running)" "$([ $running = yes ]; echo $?)"
sleep 2
kill -9 "$WORKER_PID" 2>/dev/null; wait "$WORKER_PID" 2>/dev/null; WORKER_PID=
kill -9 "$SERVE_PID" 2>/dev/null; wait "$SERVE_PID" 2>/dev/null; SERVE_PID=
sleep 1
start_server
start_worker
check "the crashed submission reaches a final state after the restart" "$(wait_final "$crash_id" 240; echo $?)"  # ~2 minutes
json "$T/st.json" 'd["state"] in ("accepted", "rejected", "failed") and len(d["jobs"]) == 1 and d["jobs"][0]["state"] == d["state"] and d["jobs"][0]["finished_at"]'
crash_state=$(jget "$T/st.json" 'd["state"]')
sleep 3  # a second completion, if any, would show up now
"$KZOO" status "$crash_id" --json >"$T/st2.json" 2>/dev/null
json "$T/st2.json" 'd["state"] == "'"$crash_state"'" and d["updated_at"] == "'"$(jget "$T/st.json" 'd["updated_at"]')"'"'
commits=$(commits_with_job "$crash_job" | grep -c .)
check "at most one commit carries Kzoo-Job: $crash_job (found $commits)" "$([ "$commits" -le 1 ]; echo $?)"
if [ "$crash_state" = accepted ]; then
  check "the accepted crash submission's commit is the one with its trailer" \
    "$([ "$commits" = 1 ] && [ "$(commits_with_job "$crash_job")" = "$(jget "$T/st.json" 'd["accepted_commit"]')" ]; echo $?)"
else
  check "no commit for the $crash_state crash submission" "$([ "$commits" = 0 ] && [ "$(head_of_main)" = "$before5" ]; echo $?)"
fi
fsck_clean "after the crash"

# ---------------------------------------------------------------- every id is final
for id in "${IDS[@]}"; do
  "$KZOO" status "$id" --json >"$T/st.json" 2>/dev/null
  json "$T/st.json" 'd["id"] == '"$id"' and d["final"] is True'
done
check "every submission got an id (${#IDS[@]} of 4)" "$([ ${#IDS[@]} = 4 ]; echo $?)"

# ---------------------------------------------------------------- 6. kill -9 of worker and server inside the commit
# A timer cannot land a kill inside the commit reliably, so the worker is run
# with a failpoint (src/kzoo/util/failpoint.hpp) that SIGKILLs it exactly there;
# the server is killed -9 at the same moment. Each window gets a fresh data
# directory whose incumbent is the six-pass softmax, so the fused one is accepted:
#   repo.accept.before-ref   the commit's objects are written, main has not moved
#   worker.before-complete   main has moved, the job is not completed in the DB
stop "$WORKER_PID"; WORKER_PID=
stop "$SERVE_PID"; SERVE_PID=
for point in repo.accept.before-ref worker.before-complete; do
  D="$T/data-$point"
  run_to "[$point] kzoo init a fresh data dir" 0 "$KZOO" init "$D" --catalog "$T/kernel_data"
  base=$(head_of_main)
  start_server
  KZOO_FAILPOINT=$point start_worker
  run_to "[$point] submit --no-wait is queued" 0 \
    "$KZOO" submit "$T/fused/pkg" --kernel-id "$KID" --submitter e2e --summary "softmax: fused, killed in the commit" --no-wait --json
  cp "$T/out" "$T/fp.json"
  fp_id=$(jget "$T/fp.json" 'd["id"]'); fp_job=$(jget "$T/fp.json" 'd["job_id"]')
  died=no
  for _ in $(seq 600); do  # the grading, then the failpoint: up to ~2 minutes
    if ! kill -0 "$WORKER_PID" 2>/dev/null; then died=yes; break; fi
    sleep 0.2
  done
  kill -9 "$SERVE_PID" 2>/dev/null; wait "$SERVE_PID" 2>/dev/null; SERVE_PID=
  wait "$WORKER_PID" 2>/dev/null; WORKER_PID=
  check "[$point] the worker died at its failpoint" "$([ $died = yes ] && grep -q "failpoint $point reached" "$T/worker.log"; echo $?)"
  if [ "$point" = repo.accept.before-ref ]; then
    check "[$point] main did not move before the crash" "$([ "$(head_of_main)" = "$base" ]; echo $?)"
  else
    check "[$point] main moved to a commit with Kzoo-Job: $fp_job before the crash" \
      "$([ "$(commits_with_job "$fp_job" | grep -c .)" = 1 ]; echo $?)"
  fi
  fsck_clean "[$point] right after the crash"
  start_server
  start_worker
  # lease expiry, then a re-run: up to ~3 minutes
  check "[$point] the submission reaches a final state after the restart" "$(wait_final "$fp_id" 360; echo $?)"
  json "$T/st.json" 'd["state"] == "accepted" and d["accepted_commit"] and len(d["jobs"]) == 1'
  commits=$(commits_with_job "$fp_job")
  check "[$point] exactly one commit on main carries Kzoo-Job: $fp_job, and it is the accepted one" \
    "$([ "$(echo "$commits" | grep -c .)" = 1 ] && [ "$commits" = "$(jget "$T/st.json" 'd["accepted_commit"]')" ] && [ "$(head_of_main)" = "$commits" ]; echo $?)"
  check "[$point] that commit sits directly on the old head" "$([ "$(G rev-parse "$commits^")" = "$base" ]; echo $?)"
  fsck_clean "[$point] after the recovery"
  stop "$WORKER_PID"; WORKER_PID=
  stop "$SERVE_PID"; SERVE_PID=
done

# ---------------------------------------------------------------- 7. two workers, two faster submissions to one kernel at once
# Both are measured against the six-pass incumbent at the same time. The first
# to commit lands; the other's accept finds the source moved and is measured
# again against the new one (docs/WORKER.md, step 7): never an overwrite.
D="$T/data-concurrent"
run_to "[concurrent] kzoo init a fresh data dir" 0 "$KZOO" init "$D" --catalog "$T/kernel_data"
base=$(head_of_main)
start_server
start_worker; WORKER2_PID=$WORKER_PID
start_worker
mkdir -p "$T/twin"
cp -r "$T/fused/pkg" "$T/twin/pkg"
printf '\n# the same fused softmax, from a second contributor\n' >>"$T/twin/pkg/src/softmax.py"
run_to "[concurrent] first submission queued" 0 \
  "$KZOO" submit "$T/fused/pkg" --kernel-id "$KID" --submitter e2e --summary "softmax: fused (one)" --no-wait --json
c1=$(jget "$T/out" 'd["id"]')
run_to "[concurrent] second submission queued" 0 \
  "$KZOO" submit "$T/twin/pkg" --kernel-id "$KID" --submitter e2e2 --summary "softmax: fused (two)" --no-wait --json
c2=$(jget "$T/out" 'd["id"]')
check "[concurrent] the first reaches a final state" "$(wait_final "$c1" 600; echo $?)"
cp "$T/st.json" "$T/c1.json"
check "[concurrent] the second reaches a final state" "$(wait_final "$c2" 600; echo $?)"
cp "$T/st.json" "$T/c2.json"
n_acc=$(( $(jget "$T/c1.json" 'int(d["state"] == "accepted")') + $(jget "$T/c2.json" 'int(d["state"] == "accepted")') ))
check "[concurrent] at least one was accepted ($n_acc)" "$([ "$n_acc" -ge 1 ]; echo $?)"
check "[concurrent] main moved by exactly one commit per accepted submission, in a line" \
  "$([ "$(G rev-list --count "$base..main")" = "$n_acc" ] && [ "$(G rev-list --merges --count "$base..main")" = 0 ]; echo $?)"
for f in c1 c2; do
  if [ "$(jget "$T/$f.json" 'd["state"]')" = accepted ]; then
    check "[concurrent] $f's accepted commit is on main" \
      "$(G merge-base --is-ancestor "$(jget "$T/$f.json" 'd["accepted_commit"]')" main; echo $?)"
  else
    json "$T/$f.json" 'd["state"] == "rejected" and any("not faster" in r for r in d["reasons"])'
  fi
done
fsck_clean "[concurrent] after both"
stop "$WORKER2_PID"; WORKER2_PID=
stop "$WORKER_PID"; WORKER_PID=
stop "$SERVE_PID"; SERVE_PID=

echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" = 0 ]
