#!/usr/bin/env bash
# The service through Slurm (issue 22 §2): a real single-node cluster started
# here (tests/lib/slurm.sh: munge, slurmctld, slurmd, a fake GPU), `kzoo
# serve`, and `kzoo slurm`, which turns each queued job into a batch job
# running `kzoo worker --once` in api mode under the board's partition. A
# faster softmax is accepted through it, as through the local runner in
# service.sh. Then slurmd dies mid-job, the job's processes with it (a node
# lost): the job's lease expires, it is queued again and re-runs once, then
# completes exactly once; batch.jsonl records how every batch job ended.
# Usage: slurm.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=${1:?usage: slurm.sh KZOO_BINARY SOURCE_DIR}
SRC=${2:?usage: slurm.sh KZOO_BINARY SOURCE_DIR}
KZOO=$(cd "$(dirname "$KZOO")" && pwd)/$(basename "$KZOO")
SRC=$(cd "$SRC" && pwd)
PY=/usr/bin/python3
KID=h200/norm/softmax/bf16/softmax_eager
LIB="$(dirname "${BASH_SOURCE[0]}")/../lib"
. "$LIB/prerequisite.sh"
. "$LIB/slurm.sh"
why=$(slurm_unavailable)
[ -z "$why" ] || require_prerequisite "$why"
[ -x "$(bwrap_path)" ] || require_prerequisite "bubblewrap is not installed ($(bwrap_path))"

SUITE_START=$(date +%s)
T=$(mktemp -d /tmp/kzoo_cli_slurm.XXXXXX)
chmod 755 "$T"
D="$T/data"
SERVE_PID= RUNNER_PID=
. "$LIB/checks.sh"
cleanup() {
  stop "$RUNNER_PID"
  stop "$SERVE_PID"
  if [ "$FAILS" != 0 ]; then
    echo "-- runner.log (tail)"; tail -n 30 "$T/runner.log" 2>/dev/null
    echo "-- batch logs (tail)"; tail -n 15 "$D"/slurm/*.log 2>/dev/null
    echo "-- slurmctld.log (tail)"; tail -n 10 "$T/cluster/log/slurmctld.log" 2>/dev/null
  fi
  # Batch jobs still running belong to the cluster: stopping it ends them.
  slurm_stop "$T/cluster"
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

slurm_start "$T/cluster" >/dev/null || { fail "the Slurm cluster did not start"; exit 1; }
ok "single-node Slurm cluster up ($(sinfo -h -o '%P %c CPUs %G'))"
G() { git --git-dir "$D/kernel_data.git" "$@"; }
PORT=$("$PY" "$(dirname "${BASH_SOURCE[0]}")/../lib/free_ports.py")
export KZOO_SERVER=http://127.0.0.1:$PORT
unset KZOO_DATA KZOO_CONFIG KZOO_LISTEN KZOO_CATALOG KZOO_STATE

cp -r "$SRC/catalog/kernel_data" "$T/kernel_data"
cp "$SRC/catalog/samples/softmax_six_passes.py" "$T/kernel_data/$KID/src/softmax.py"
run_to "kzoo init" 0 "$KZOO" init "$D" --catalog "$T/kernel_data"
"$KZOO" user add e2e --role member --data "$D" 2>/dev/null
"$KZOO" user add mia --role maintainer --data "$D" 2>/dev/null
KZOO_TOKEN=$("$KZOO" token new e2e --data "$D" 2>/dev/null); export KZOO_TOKEN
"$KZOO" token new mia --runner slurm --data "$D" >"$T/runner.token" 2>/dev/null
"$KZOO" serve --data "$D" --listen "127.0.0.1:$PORT" --catalog "$T/kernel_data" >>"$T/serve.log" 2>&1 &
SERVE_PID=$!
for _ in $(seq 100); do curl -fs "$KZOO_SERVER/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
"$KZOO" slurm --data "$D" --server "$KZOO_SERVER" --token-file "$T/runner.token" --catalog "$SRC/catalog" \
  --judge-dir "$SRC/judge" --iterations 60 --lease 8 --poll-ms 500 >>"$T/runner.log" 2>&1 &
RUNNER_PID=$!

package() {  # package NAME SOURCE: a tarball of the kernel with SOURCE as its softmax
  mkdir -p "$T/$1/$KID" && touch "$T/$1/.kernel_data"
  cp -r "$SRC/catalog/kernel_data/$KID/." "$T/$1/$KID/"
  cp "$2" "$T/$1/$KID/src/softmax.py"
  printf '\n# %s\n' "$1" >>"$T/$1/$KID/src/softmax.py"
  "$KZOO" pack "$T/$1/$KID" -o "$T/$1.tar.gz" >/dev/null 2>&1
}

# ---------------------------------------------------------------- 1. accepted through Slurm
base=$(G rev-parse refs/heads/main)
package fused "$SRC/catalog/samples/softmax_fused.py"
run_to "submit (fused softmax)" 0 "$KZOO" submit "$T/fused.tar.gz" --summary "softmax: fused" --no-wait --json
id1=$(jget "$T/out" 'd["id"]')
check "graded through a Slurm batch job to a verdict" "$(wait_final "$id1" 1200; echo $?)"
check "accepted, committed on main" "$([ "$(jget "$T/st.json" 'd["state"]')" = accepted ] &&
  [ "$(G rev-parse refs/heads/main)" = "$(jget "$T/st.json" 'd["accepted_commit"]')" ]; echo $?)"
job1=$(jget "$T/st.json" 'd["jobs"][0]["id"]')
"$KZOO" audit --data "$D" --limit 1000 --json >"$T/audit.json" 2>/dev/null
owner=$(jget "$T/audit.json" '[e["detail"]["worker"] for e in d["entries"] if e["action"] == "job.claim" and e["target"] == "job/'"$job1"'"][0]')
check "a batch job's worker claimed it with the runner token ($owner)" "$(echo "$owner" | grep -q '^[0-9a-f]\{16\}/'; echo $?)"
# Wait for the end of the batch job that ran the job: another may end first (one submitted for
# the same queue and cancelled once nothing needed it: UNKNOWN), so not for the first "ended".
completed() { grep '"event":"ended"' "$D/slurm/batch.jsonl" 2>/dev/null | grep '"state":"COMPLETED"' | grep -q '"exit_code":0'; }
for _ in $(seq 60); do completed && break; sleep 0.5; done
check "batch.jsonl records the batch job's end, COMPLETED with exit 0" "$(completed; echo $?)"
check "the batch job asked for the board's partition" \
  "$(grep '"event":"submitted"' "$D/slurm/batch.jsonl" | head -1 | grep -q -- '--cpus-per-task=4.*--mem=8192M'; echo $?)"

# ---------------------------------------------------------------- 2. slurmd dies mid-job
package again "$SRC/catalog/samples/softmax_fused.py"
run_to "submit (a second one)" 0 "$KZOO" submit "$T/again.tar.gz" --summary "softmax: again" --no-wait --json
id2=$(jget "$T/out" 'd["id"]')
batch=
for _ in $(seq 600); do
  "$KZOO" status "$id2" --json >"$T/st.json" 2>/dev/null
  if [ "$(jget "$T/st.json" 'd["state"]' 2>/dev/null)" = running ]; then
    batch=$(ls -t "$D"/slurm/*.pid 2>/dev/null | head -1)
    [ -n "$batch" ] && break
  fi
  sleep 0.2
done
if [ -z "$batch" ]; then
  fail "the second job never ran in a batch job"
else
  bid=$(basename "$batch" .pid)
  wpid=$(cat "$batch")
  sleep 2  # into the grading
  # The node is lost: slurmd, and every process of the job (its whole process group).
  pgid=$(ps -o pgid= -p "$wpid" | tr -d ' ')
  kill -9 "$(cat "$T/cluster/slurmd.pid")" 2>/dev/null
  [ -n "$pgid" ] && kill -9 -- "-$pgid" 2>/dev/null
  ok "killed slurmd and batch job $bid (worker $wpid, process group $pgid) mid-job"
  sleep 3
  SLURM_CONF="$T/cluster/slurm.conf" /usr/sbin/slurmd -f "$T/cluster/slurm.conf"
  ok "slurmd restarted"
  check "the job re-ran and reached a verdict" "$(wait_final "$id2" 1200; echo $?)"
  json_state=$(jget "$T/st.json" 'd["state"]')
  check "it is final as accepted or rejected ($json_state), not failed" \
    "$( [ "$json_state" = accepted ] || [ "$json_state" = rejected ]; echo $?)"
  check "its job ran twice: the lost attempt and the one that completed" \
    "$([ "$(jget "$T/st.json" 'd["jobs"][0]["attempts"]')" = 2 ]; echo $?)"
  "$KZOO" audit --data "$D" --limit 1000 --json >"$T/audit.json" 2>/dev/null
  job2=$(jget "$T/st.json" 'd["jobs"][0]["id"]')
  check "the lost lease was taken back once, and the job completed once" \
    "$([ "$(jget "$T/audit.json" 'sum(1 for e in d["entries"] if e["target"] == "job/'"$job2"'" and e["action"] == "job.lease-expired")')" = 1 ] &&
       [ "$(jget "$T/audit.json" 'sum(1 for e in d["entries"] if e["target"] == "job/'"$job2"'" and e["action"] == "job.complete")')" = 1 ]; echo $?)"
  for _ in $(seq 120); do
    grep '"event":"ended"' "$D/slurm/batch.jsonl" | grep -q "\"id\":\"$bid\"" && break
    sleep 0.5
  done
  check "batch.jsonl records how the lost batch job $bid ended" \
    "$(grep '"event":"ended"' "$D/slurm/batch.jsonl" | grep "\"id\":\"$bid\"" | grep -qv '"state":"COMPLETED"'; echo $?)"
fi
accepted=0
for i in $id1 ${id2:-}; do
  "$KZOO" status "$i" --json >"$T/st.json" 2>/dev/null
  [ "$(jget "$T/st.json" 'd["state"]')" = accepted ] && accepted=$((accepted + 1))
done
check "no commit was made twice: one per accepted submission ($accepted)" \
  "$([ "$(G rev-list --count "$base..main")" = "$accepted" ]; echo $?)"
G fsck --strict --no-progress >"$T/fsck" 2>&1
check "git fsck --strict is clean" "$([ $? = 0 ] && ! grep -qiE 'error|warning' "$T/fsck"; echo $?)"

echo "$CHECKS checks, $FAILS failed, in $(($(date +%s) - SUITE_START)) s"
[ "$FAILS" = 0 ]
