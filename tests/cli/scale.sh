#!/usr/bin/env bash
# Several servers (docs/SCALE.md): a real PostgreSQL 15 started here, one data
# directory (kernel_data.git, uploads/) shared by two `kzoo serve` with
# different server ids, and four workers (three direct, one through the
# runner API), taking 500 concurrent submissions through both front doors.
# Midway, kill -9 of one server (restarted) and of one worker holding a job.
# Then: every request got exactly one answer, every recorded submission is
# final, no job completed twice, every accept is on main (none overwritten,
# history linear), and git fsck --strict is clean.
#
# Cost: the 500 come from 4 tokens allowed 3 submissions an hour each, so
# about 12 are graded (every grade starts PyTorch in the sandbox, seconds on a
# CI core) and the rest are answered 429 at once; all of them go through the
# front doors, the intake and the database concurrently.
# Usage: scale.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=${1:?usage: scale.sh KZOO_BINARY SOURCE_DIR}
SRC=${2:?usage: scale.sh KZOO_BINARY SOURCE_DIR}
KZOO=$(cd "$(dirname "$KZOO")" && pwd)/$(basename "$KZOO")
SRC=$(cd "$SRC" && pwd)
PY=/usr/bin/python3
N=${KZOO_SCALE_SUBMISSIONS:-500}
TOKENS=4
PER_TOKEN=3
KID=h200/norm/softmax/bf16/softmax_eager
LIB="$(dirname "${BASH_SOURCE[0]}")/../lib"
. "$LIB/prerequisite.sh"
. "$LIB/postgres.sh"
why=$(pg_unavailable)
[ -z "$why" ] || require_prerequisite "$why"
[ -x "$(bwrap_path)" ] || require_prerequisite "bubblewrap is not installed ($(bwrap_path))"
command -v psql >/dev/null || require_prerequisite "psql is not installed (postgresql-client-15)"

SUITE_START=$(date +%s)
T=$(mktemp -d /tmp/kzoo_cli_scale.XXXXXX)
chmod 755 "$T"  # the sandbox's user and the postgres user pass through
D="$T/data"
A_PID= B_PID=
WORKERS=()
. "$LIB/checks.sh"
cleanup() {
  for p in "${WORKERS[@]}"; do stop "$p"; done
  stop "$A_PID"
  stop "$B_PID"
  if [ "$FAILS" != 0 ]; then
    for f in a.log b.log; do echo "-- $f (tail)"; tail -n 15 "$T/$f" 2>/dev/null; done
    echo "-- workers (tail)"; tail -n 30 "$T/worker-"*.log 2>/dev/null
  fi
  pg_stop "$T/pg"
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

PG=$(pg_start "$T/pg") || { fail "PostgreSQL did not start"; exit 1; }
ok "PostgreSQL 15 started on $T/pg"
sql() { psql "$PG" -qtA -c "$1"; }
G() { git --git-dir "$D/kernel_data.git" "$@"; }
. "$LIB/servers.sh"
PA=$(free_port) PB=$(free_port)
A=http://127.0.0.1:$PA B=http://127.0.0.1:$PB
unset KZOO_DATA KZOO_CONFIG KZOO_LISTEN KZOO_CATALOG KZOO_STATE KZOO_SERVER_ID

# The catalog with its eager softmax slowed (six passes, as in service.sh), so
# the fused sample is a real gain to accept.
cp -r "$SRC/catalog/kernel_data" "$T/kernel_data"
cp "$SRC/catalog/samples/softmax_six_passes.py" "$T/kernel_data/$KID/src/softmax.py"
run_to "kzoo init with the state on PostgreSQL" 0 "$KZOO" init "$D" --catalog "$T/kernel_data" --state "$PG"
check "kzoo.json names the state; there is no state.db" \
  "$(grep -q '"state"' "$D/kzoo.json" && [ ! -e "$D/state.db" ]; echo $?)"
check "the schema is on PostgreSQL at the newest version" "$([ "$(sql 'SELECT max(version) FROM schema_version')" -ge 6 ]; echo $?)"
"$KZOO" user add mia --role maintainer --data "$D" 2>>"$T/err" || fail "user add mia"
TOKS=()
for i in $(seq "$TOKENS"); do
  "$KZOO" user add "u$i" --role member --data "$D" 2>>"$T/err" || fail "user add u$i"
  TOKS+=("$("$KZOO" token new "u$i" --max-submissions-per-hour "$PER_TOKEN" --max-concurrent-jobs 100 --data "$D" 2>>"$T/err")")
done
"$KZOO" token new mia --runner scale-runner --data "$D" >"$T/runner.token" 2>>"$T/err"
check "users and tokens went to PostgreSQL" "$([ "$(sql 'SELECT count(*) FROM tokens')" = $((TOKENS + 1)) ]; echo $?)"

A_PID=$(start_server a "$PA" a.log --catalog "$T/kernel_data")
B_PID=$(start_server b "$PB" b.log --catalog "$T/kernel_data")
check "server a is up on the shared data directory" "$(wait_up "$A" "$A_PID"; echo $?)"
check "server b is up on the same data directory" "$(wait_up "$B" "$B_PID"; echo $?)"
timeout 30 "$KZOO" serve --data "$D" --server-id a --listen 127.0.0.1:0 >"$T/dup.log" 2>&1
check "a second server with id a is refused (its lock is held)" "$(grep -q "server_id a" "$T/dup.log"; echo $?)"

# Workers: 60 timed calls tell the fused softmax from six passes (service.sh
# says why); a short lease, so the killed worker's job comes back soon.
WARGS=(--device cpu --catalog "$SRC/catalog" --judge-dir "$SRC/judge" --iterations 60 --lease 8 --timeout 240)
for i in 1 2 3; do
  "$KZOO" worker --data "$D" "${WARGS[@]}" >>"$T/worker-$i.log" 2>&1 &
  WORKERS+=($!)
done
"$KZOO" worker --server "$B" --token-file "$T/runner.token" "${WARGS[@]}" >>"$T/worker-api.log" 2>&1 &
WORKERS+=($!)

# The package: the catalog's softmax with the fused sample.
mkdir -p "$T/kd/$KID" && touch "$T/kd/.kernel_data"
cp -r "$SRC/catalog/kernel_data/$KID/." "$T/kd/$KID/"
cp "$SRC/catalog/samples/softmax_fused.py" "$T/kd/$KID/src/softmax.py"
run_to "kzoo pack of the fused softmax" 0 "$KZOO" pack "$T/kd/$KID" -o "$T/fused.tar.gz"
base=$(G rev-parse refs/heads/main)

# ---------------------------------------------------------------- 500 at once, with kills midway
started=$(date +%s)
"$PY" "$LIB/submit_many.py" "$T/answers.json" "$T/progress" "$T/fused.tar.gz" "$KID" "$N" 48 "${TOKS[@]}" -- "$A" "$B" \
  >"$T/client.log" 2>&1 &
CLIENT=$!
answered() { local n; n=$(cat "$T/progress" 2>/dev/null); echo "${n:-0}"; }
for _ in $(seq 600); do
  [ "$(answered)" -ge $((N / 3)) ] && break
  kill -0 "$CLIENT" 2>/dev/null || break
  sleep 0.05
done
kill -9 "$A_PID"; wait "$A_PID" 2>/dev/null
check "killed server a (-9) midway, after $(answered) of $N answers" "$([ "$(answered)" -lt "$N" ]; echo $?)"
# A worker holding a job: its lease owner is host:pid.
victim=
for _ in $(seq 300); do
  for p in "${WORKERS[@]:0:3}"; do
    if [ -n "$(sql "SELECT id FROM jobs WHERE state='running' AND lease_owner LIKE '%:$p'")" ]; then victim=$p; break 2; fi
  done
  sleep 0.2
done
victim_job=
if [ -n "$victim" ]; then
  victim_job=$(sql "SELECT id FROM jobs WHERE state='running' AND lease_owner LIKE '%:$victim'")
  kill -9 "$victim"; wait "$victim" 2>/dev/null
  ok "killed worker $victim (-9) holding job $victim_job"
else
  fail "no worker held a job to kill"
fi
sleep 1
A_PID=$(start_server a "$PA" a.log --catalog "$T/kernel_data")
check "server a restarts on the shared directory" "$(wait_up "$A" "$A_PID"; echo $?)"
wait "$CLIENT"
check "the client finished" "$?"
ok "$N submissions answered in $(($(date +%s) - started)) s"

# Every submission got exactly one answer, and no two the same id.
"$PY" - "$T/answers.json" >"$T/answer-check" 2>&1 <<'PY'
import json, sys
rs = json.load(open(sys.argv[1]))
bad = [i for i, r in enumerate(rs) if r is None or r["status"] not in (202, 429)]
ids = [r["answer"]["id"] for r in rs if r and r["status"] == 202]
print("statuses", sorted({r["status"] for r in rs if r}), "accepted", len(ids),
      "retried", sum(1 for r in rs if r and len(r["attempts"]) > 1))
if bad: print("UNANSWERED or unexpected:", [(i, rs[i]) for i in bad[:5]]); sys.exit(1)
if len(ids) != len(set(ids)): print("an id answered twice"); sys.exit(1)
open(sys.argv[1] + ".ids", "w").write(",".join(map(str, ids)))
PY
check "every one of $N submissions got exactly one answer (202 or 429), each id once: $(head -1 "$T/answer-check")" "$?"
[ "$FAILS" = 0 ] || sed 's/^/    /' "$T/answer-check" | head -5
ids=$(cat "$T/answers.json.ids" 2>/dev/null)
check "some were taken for grading through both doors" "$([ -n "$ids" ] && [ "$(echo "$ids" | tr ',' '\n' | wc -l)" -ge $TOKENS ]; echo $?)"

# ---------------------------------------------------------------- the queue drains
for _ in $(seq 900); do
  [ "$(sql "SELECT count(*) FROM submissions WHERE state IN ('received','queued','running')")" = 0 ] && break
  sleep 1
done
check "every recorded submission is final (nothing lost, none left received)" \
  "$([ "$(sql "SELECT count(*) FROM submissions WHERE state IN ('received','queued','running')")" = 0 ]; echo $?)"
[ -n "$ids" ] && check "every id answered 202 is recorded" \
  "$([ "$(sql "SELECT count(*) FROM submissions WHERE id IN ($ids)")" = "$(echo "$ids" | tr ',' '\n' | wc -l)" ]; echo $?)"
check "no token got past its cap of $PER_TOKEN an hour, through both doors at once" \
  "$([ -z "$(sql "SELECT token_id FROM submissions GROUP BY token_id HAVING count(*) > $PER_TOKEN")" ]; echo $?)"
check "no job completed twice (the audit trail)" \
  "$([ -z "$(sql "SELECT target FROM audit WHERE action='job.complete' GROUP BY target HAVING count(*) > 1")" ]; echo $?)"
check "no submission has two jobs that finished" \
  "$([ -z "$(sql "SELECT submission_id FROM jobs WHERE state IN ('accepted','rejected','failed') GROUP BY submission_id HAVING count(*) > 1")" ]; echo $?)"
if [ -n "$victim_job" ]; then
  check "the killed worker's job $victim_job lost its lease and was completed by another" \
    "$([ -n "$(sql "SELECT 1 FROM audit WHERE action='job.lease-expired' AND target='job/$victim_job'")" ] &&
        [ "$(sql "SELECT state <> 'running' AND attempts >= 2 FROM jobs WHERE id=$victim_job")" = t ]; echo $?)"
fi
accepted=$(sql "SELECT count(*) FROM submissions WHERE state='accepted'")
check "at least one submission was accepted ($accepted)" "$([ "$accepted" -ge 1 ]; echo $?)"
check "main moved once per accept: none overwritten ($accepted commits)" \
  "$([ "$(G rev-list --count "$base..main")" = "$accepted" ]; echo $?)"
check "history stays linear" "$([ "$(G rev-list --merges --count "$base..main")" = 0 ]; echo $?)"
missing=0
for c in $(sql "SELECT accepted_commit FROM submissions WHERE state='accepted'"); do
  G merge-base --is-ancestor "$c" main || missing=$((missing + 1))
done
check "every accepted commit is on main" "$([ "$missing" = 0 ]; echo $?)"
check "every accepted commit is a different one" \
  "$([ -z "$(sql "SELECT accepted_commit FROM submissions WHERE state='accepted' GROUP BY accepted_commit HAVING count(*) > 1")" ]; echo $?)"
dups=$(G log --format=%B "$base..main" | grep '^Kzoo-Job: ' | sort | uniq -d)
check "no job's trailer is on two commits" "$([ -z "$dups" ]; echo $?)"
check "the restarted server a rejected only what it was receiving itself" \
  "$([ -z "$(sql "SELECT id FROM submissions WHERE received_by <> 'a' AND reasons LIKE '%interrupted%'")" ]; echo $?)"
check "the audit trail records the clients' address" \
  "$([ "$(sql "SELECT count(*) FROM audit WHERE action='submission.create' AND address='127.0.0.1'")" -ge 1 ]; echo $?)"
G fsck --strict --no-progress >"$T/fsck" 2>&1
check "git fsck --strict is clean" "$([ $? = 0 ] && ! grep -qiE 'error|warning' "$T/fsck"; echo $?)"

echo "$CHECKS checks, $FAILS failed, in $(($(date +%s) - SUITE_START)) s"
[ "$FAILS" = 0 ]
