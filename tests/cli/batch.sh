#!/usr/bin/env bash
# Users' own batch jobs, as the board seed says (issue 22 §3, docs/BATCH.md):
# the real kzoo serve on loopback, the real git client, a real `kzoo worker`
# running scripts in the bubblewrap sandbox on the CPU:
#   1. the four commands come from /slurm.sh (source <(curl ...)), only with a token;
#   2. sbatch from a clone prints "Submitted batch job <id>"; a time over the
#      partition's limit, uncommitted changes and an unpushed HEAD are refused
#      with the fix; squeue shows the job pending;
#   3. the worker runs it: sacct shows COMPLETED 0:0; git fetch origin
#      refs/jobs/<id> brings slurm-<id>.out and the kernel the job rewrote,
#      one commit on the clone's HEAD;
#   4. that change is judged as a push: it became a submission on the job's
#      route, which the worker graded;
#   5. scancel of a sleeping job: CANCELLED within seconds;
#   6. an outsider's job is held (JobHeldAdmin) until a maintainer releases it;
#   7. a job's result never changes project files;
#   8. kzoo maintain deletes an old batch job's refs/jobs/<id>, except when its
#      result became an accepted submission or is still being judged.
# Usage: batch.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=${1:?usage: batch.sh KZOO_BINARY SOURCE_DIR}
SRC=${2:?usage: batch.sh KZOO_BINARY SOURCE_DIR}
KZOO=$(cd "$(dirname "$KZOO")" && pwd)/$(basename "$KZOO")
SRC=$(cd "$SRC" && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
SOFT=h200/norm/softmax/bf16/softmax_eager
. "$(dirname "${BASH_SOURCE[0]}")/../lib/prerequisite.sh"
[ -x "$(bwrap_path)" ] || require_prerequisite "bubblewrap is not installed ($(bwrap_path))"
command -v curl >/dev/null || require_prerequisite "curl is not installed"

T=$(mktemp -d /tmp/kzoo_cli_batch.XXXXXX)
chmod 755 "$T"
D="$T/data"
SERVE_PID=
WORKER_PID=
RUN_TO_TIMEOUT=120
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"
cleanup() {
  stop "$WORKER_PID"
  stop "$SERVE_PID"
  if [ "$FAILS" != 0 ]; then
    echo "-- serve.log (tail)"; tail -n 30 "$T/serve.log" 2>/dev/null
    echo "-- worker.log (tail)"; tail -n 40 "$T/worker.log" 2>/dev/null
  fi
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 2' INT TERM
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 HOME="$T"
export GIT_AUTHOR_NAME=someone GIT_AUTHOR_EMAIL=someone@example.org GIT_COMMITTER_NAME=someone GIT_COMMITTER_EMAIL=someone@example.org
PORT=$("$PY" "$(dirname "${BASH_SOURCE[0]}")/../lib/free_ports.py")
export KZOO_SERVER=http://127.0.0.1:$PORT
URL=$KZOO_SERVER/git/kernel_data
unset KZOO_DATA KZOO_CONFIG KZOO_LISTEN KZOO_CATALOG KZOO_DEVICE_CLASS KZOO_TOKEN KZOO_ROUTE

# One kernel, made slow on main (the same softmax six times over), so that the
# fused one a job writes is graded quickly and wins.
mkdir -p "$T/kernel_data/$(dirname "$SOFT")"
cp "$SRC/catalog/kernel_data/.kernel_data" "$T/kernel_data/"
cp -r "$SRC/catalog/kernel_data/$SOFT" "$T/kernel_data/$SOFT"
cp "$SRC/catalog/samples/softmax_six_passes.py" "$T/kernel_data/$SOFT/src/softmax.py"
run_to "kzoo init" 0 "$KZOO" init "$D" --catalog "$T/kernel_data" --board-device-class cpu
main0=$(git --git-dir "$D/kernel_data.git" rev-parse main)
for u in maint:maintainer alice:member olga:outsider; do
  "$KZOO" user add "${u%%:*}" --role "${u##*:}" --data "$D" >/dev/null 2>&1 || fail "user add $u"
done
MAINT_TOKEN=$("$KZOO" token new maint --data "$D" 2>/dev/null)
ALICE_TOKEN=$("$KZOO" token new alice --data "$D" 2>/dev/null)
OLGA_TOKEN=$("$KZOO" token new olga --data "$D" 2>/dev/null)
"$KZOO" serve --data "$D" --listen "127.0.0.1:$PORT" >"$T/serve.log" 2>&1 & SERVE_PID=$!
for _ in $(seq 100); do curl -fsS "$KZOO_SERVER/healthz" >/dev/null 2>&1 && break; sleep 0.2; done

# $SL TOKEN DIR COMMAND ARGS...: in DIR, with the four commands sourced from
# this server's /slurm.sh exactly as a user types it. A script, so that
# run_to (timeout) can run it.
SL=$T/slurm-as
cat >"$SL" <<'EOF'
#!/usr/bin/env bash
tok=$1 dir=$2; shift 2
source <(curl -fsS -H "Authorization: Bearer $tok" "$KZOO_SERVER/slurm.sh") || exit 99
cd "$dir" || exit 98
"$@"
EOF
chmod +x "$SL"
# $CLONE TOKEN DIR: a clone whose credential helper answers the token (any user name).
CLONE=$T/clone-as
cat >"$CLONE" <<'EOF'
#!/usr/bin/env bash
helper="!f() { test \"\$1\" = get && echo username=x && echo password=$1; }; f"
git -c credential.helper= -c "credential.helper=$helper" clone -q "$KZOO_SERVER/git/kernel_data" "$2" &&
  git -C "$2" config credential.helper "$helper"
EOF
chmod +x "$CLONE"

# ---------------------------------------------------------------- 1. /slurm.sh
curl -s -o /dev/null -w '%{http_code}' "$KZOO_SERVER/slurm.sh" >"$T/code"
check "/slurm.sh without a token is 401" "$([ "$(cat "$T/code")" = 401 ]; echo $?)"
curl -s -D "$T/h" -o "$T/slurm.sh" -H "Authorization: Bearer $ALICE_TOKEN" "$KZOO_SERVER/slurm.sh"
check "/slurm.sh with a token: the four functions, never cached" \
  "$(grep -qi '^Cache-Control: no-store' "$T/h" && bash -n "$T/slurm.sh" &&
     for f in sbatch squeue sacct scancel; do grep -q "^$f() {" "$T/slurm.sh" || exit 1; done; echo $?)"
run_to "alice clones" 0 "$CLONE" "$ALICE_TOKEN" "$T/alice"
run_to "olga clones" 0 "$CLONE" "$OLGA_TOKEN" "$T/olga"

# ---------------------------------------------------------------- 2. sbatch, refusals, squeue
# The job rewrites the kernel with the fused softmax, as a tuning run would.
{
  printf '#!/bin/bash\n#SBATCH --job-name=tune\n#SBATCH --time=00:05:00\n#SBATCH --cpus-per-task=2\n\n'
  printf 'echo "tuning $SLURM_JOB_NAME ($SLURM_JOB_ID) on $SLURM_CPUS_PER_TASK CPUs in $PWD"\n'
  printf "cat > %s/src/softmax.py <<'PY'\n" "$SOFT"
  cat "$SRC/catalog/samples/softmax_fused.py"
  printf 'PY\necho done\n'
} >"$T/alice/job.sbatch"
sed 's/00:05:00/02:00:00/' "$T/alice/job.sbatch" >"$T/alice/long.sbatch"
run_to "sbatch of a job asking 02:00:00 is refused" 1 "$SL" "$ALICE_TOKEN" "$T/alice" sbatch long.sbatch
check "... naming the option, the partition's limit and the fix" \
  "$(grep -q "sbatch: error: Batch job submission failed: --time=02:00:00" "$T/err" &&
     grep -q "time limit of 01:00:00" "$T/err" && grep -q "#SBATCH --time=01:00:00" "$T/err"; echo $?)"
echo "# local edit" >>"$T/alice/$SOFT/src/softmax.py"
run_to "sbatch with uncommitted changes is refused" 1 "$SL" "$ALICE_TOKEN" "$T/alice" sbatch job.sbatch
check "... saying to commit and push" "$(grep -q "uncommitted changes" "$T/err"; echo $?)"
git -C "$T/alice" commit -qam "an unpushed commit"
run_to "sbatch of an unpushed HEAD is refused" 1 "$SL" "$ALICE_TOKEN" "$T/alice" sbatch job.sbatch
check "... saying to push first" "$(grep -q "is not pushed: git push origin HEAD:routes/" "$T/err"; echo $?)"
git -C "$T/alice" reset -q --hard origin/main

run_to "sbatch job.sbatch (KZOO_ROUTE=alice-batch)" 0 env KZOO_ROUTE=alice-batch "$SL" "$ALICE_TOKEN" "$T/alice" sbatch job.sbatch
job=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/out")
check "... prints Slurm's line: Submitted batch job <id>" "$([ -n "$job" ] && [ "$(wc -l <"$T/out")" = 1 ]; echo $?)"
run_to "squeue" 0 "$SL" "$ALICE_TOKEN" "$T/alice" squeue
check "... shows it pending, in Slurm's columns" \
  "$(head -1 "$T/out" | grep -q 'JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)' &&
     grep -Eq "^ +$job +main +tune +alice +PD +0:00 +1 \(Priority\)$" "$T/out"; echo $?)"

# ---------------------------------------------------------------- 3. run; sacct; git fetch
"$KZOO" worker --data "$D" --device cpu --catalog "$SRC/catalog" --judge-dir "$SRC/judge" --lease 30 --timeout 400 \
  >"$T/worker.log" 2>&1 & WORKER_PID=$!
done_state=""
for _ in $(seq 240); do
  "$SL" "$ALICE_TOKEN" "$T/alice" sacct -j "$job" >"$T/sacct" 2>&1
  done_state=$(awk -v j="$job" '$1 == j {print $4}' "$T/sacct")
  case "$done_state" in COMPLETED|FAILED|TIMEOUT|CANCELLED|NODE_FAIL) break ;; esac
  sleep 0.5
done
check "sacct -j $job: COMPLETED with exit code 0:0" \
  "$(grep -Eq "^$job +tune +main +COMPLETED +0:0 +00:00:[0-9]{2} $" "$T/sacct"; echo $?)"
sed 's/^/    sacct: /' "$T/sacct"
run_to "git fetch origin refs/jobs/$job" 0 git -C "$T/alice" fetch -q origin "refs/jobs/$job"
check "FETCH_HEAD: one commit on the clone's HEAD" \
  "$([ "$(git -C "$T/alice" rev-parse FETCH_HEAD^)" = "$main0" ]; echo $?)"
check "... holding slurm-$job.out with the script's output" \
  "$(git -C "$T/alice" show "FETCH_HEAD:slurm-$job.out" | grep -q "tuning tune ($job) on 2 CPUs in /kzoo/work"; echo $?)"
check "... and the kernel the job rewrote; nothing else changed" \
  "$(git -C "$T/alice" show "FETCH_HEAD:$SOFT/src/softmax.py" | cmp -s - "$SRC/catalog/samples/softmax_fused.py" &&
     [ "$(git -C "$T/alice" diff --name-only "$main0" FETCH_HEAD | tr '\n' ' ')" = "$SOFT/src/softmax.py slurm-$job.out " ]
     echo $?)"

# ---------------------------------------------------------------- 4. judged as a push
sub=""
for _ in $(seq 40); do
  curl -fsS -H "Authorization: Bearer $ALICE_TOKEN" "$KZOO_SERVER/api/batch/$job" >"$T/b.json" 2>/dev/null
  sub=$(jget "$T/b.json" '(d.get("review") or {}).get("submissions", [{}])[0].get("id", "")' 2>/dev/null)
  [ -n "$sub" ] && break
  sleep 0.5
done
# sacct's output goes to a file first: grep -q leaving a pipe early would kill sacct with SIGPIPE, which
# pipefail would count against the check.
"$SL" "$ALICE_TOKEN" "$T/alice" sacct -j "$job" >"$T/sacct4" 2>&1
check "the job's change became a submission on routes/alice-batch" \
  "$([ -n "$sub" ] && grep -q "submission $sub (job [0-9]*) $SOFT on routes/alice-batch" "$T/sacct4"; echo $?)"
check "... which the worker graded to a verdict" "$(wait_final "${sub:-0}" 600; echo $?)"
check "... owned by alice" "$(jget "$T/st.json" 'd["submitter_id"]' | grep -qx alice; echo $?)"
echo "    submission $sub: $(jget "$T/st.json" 'd["state"]' 2>/dev/null)"

# ---------------------------------------------------------------- 5. scancel
printf '#!/bin/bash\necho sleeping\nsleep 300\n' >"$T/alice/sleep.sbatch"
run_to "sbatch sleep.sbatch" 0 "$SL" "$ALICE_TOKEN" "$T/alice" sbatch sleep.sbatch
job2=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/out")
for _ in $(seq 120); do
  "$SL" "$ALICE_TOKEN" "$T/alice" squeue >"$T/sq" 2>&1
  grep -Eq "^ +$job2 .* R " "$T/sq" && break
  sleep 0.5
done
check "squeue shows it running (R) on the worker's host" "$(grep -Eq "^ +$job2 +main +sleep.sb +alice +R " "$T/sq"; echo $?)"
run_to "olga cannot scancel alice's job" 1 "$SL" "$OLGA_TOKEN" "$T/olga" scancel "$job2"
check "... told whose it is" "$(grep -q "scancel: error: Kill job error on job id $job2: .*belongs to alice" "$T/err"; echo $?)"
run_to "scancel $job2 prints nothing" 0 "$SL" "$ALICE_TOKEN" "$T/alice" scancel "$job2"
check "... and prints nothing" "$([ ! -s "$T/out" ]; echo $?)"
run_to "sacct -j $job2" 0 "$SL" "$ALICE_TOKEN" "$T/alice" sacct -j "$job2"
check "... CANCELLED" "$(grep -Eq "^$job2 +sleep.sba\+ +main +CANCELLED " "$T/out"; echo $?)"
stopped=1
for _ in $(seq 40); do grep -q "job $job2: stopped" "$T/worker.log" && { stopped=0; break; }; sleep 0.5; done
check "the worker stopped the running script within seconds" "$stopped"

# ---------------------------------------------------------------- 6. an outsider's job is held
printf '#!/bin/bash\necho hello from olga\n' >"$T/olga/hello.sbatch"
run_to "olga (an outsider) sbatches" 0 "$SL" "$OLGA_TOKEN" "$T/olga" sbatch hello.sbatch
job3=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/out")
run_to "squeue (olga)" 0 "$SL" "$OLGA_TOKEN" "$T/olga" squeue
check "... held: PD (JobHeldAdmin)" "$(grep -Eq "^ +$job3 .* PD .*\(JobHeldAdmin\)$" "$T/out"; echo $?)"
run_to "alice (a member) cannot release it" 2 env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" release "${job3:-0}" --server "$KZOO_SERVER"
run_to "the maintainer releases it" 0 env KZOO_TOKEN="$MAINT_TOKEN" "$KZOO" release "${job3:-0}" --server "$KZOO_SERVER"
state3=""
for _ in $(seq 120); do
  "$SL" "$OLGA_TOKEN" "$T/olga" sacct -j "$job3" >"$T/s3" 2>&1
  state3=$(awk -v j="$job3" '$1 == j {print $4}' "$T/s3")
  [ "$state3" = COMPLETED ] && break
  sleep 0.5
done
check "... then it runs to COMPLETED" "$([ "$state3" = COMPLETED ]; echo $?)"

# ---------------------------------------------------------------- 7. a job never changes project files
# The maintainer's own push to main may change the rules (docs/GIT.md); what a script left in a submit
# directory may not, a maintainer's job included: its result is refused and main does not move.
run_to "the maintainer clones" 0 "$CLONE" "$MAINT_TOKEN" "$T/maint"
printf '#!/bin/bash
sed -i "s/00:10:00/00:20:00/" scienceslack.json
echo rules edited
' >"$T/maint/rules.sbatch"
run_to "the maintainer sbatches a script that edits scienceslack.json" 0 "$SL" "$MAINT_TOKEN" "$T/maint" sbatch rules.sbatch
job4=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/out")
main_before=$(git --git-dir "$D/kernel_data.git" rev-parse main)
refused=""
for _ in $(seq 120); do
  curl -fsS -H "Authorization: Bearer $MAINT_TOKEN" "$KZOO_SERVER/api/batch/${job4:-0}" >"$T/b4.json" 2>/dev/null
  refused=$(jget "$T/b4.json" '(d.get("review") or {}).get("refused", "")' 2>/dev/null)
  [ -n "$refused" ] && break
  sleep 0.5
done
check "its result is judged and refused: outside every kernel package" \
  "$(grep -q "git.outside-package" <<<"$refused$(cat "$T/b4.json")"; echo $?)"
check "... the job did edit the rules (the change is on refs/jobs/$job4)" \
  "$(git --git-dir "$D/kernel_data.git" show "refs/jobs/${job4:-0}:scienceslack.json" | grep -q 00:20:00; echo $?)"
check "... and main did not move" "$([ "$(git --git-dir "$D/kernel_data.git" rev-parse main)" = "$main_before" ]; echo $?)"

# ---------------------------------------------------------------- 8. kzoo maintain expires batch jobs' results
# A batch job's refs/jobs/<id> goes --keep-days after the job ended, however it ended, unless its result
# became an accepted submission, or is still being judged (an outsider's submission held for a maintainer).
# Olga's job rewrites the kernel on her own route: the submission it becomes is held.
printf '#!/bin/bash\ncat > %s/src/softmax.py <<'"'"'PY'"'"'\n%s\nPY\n' "$SOFT" "$(cat "$SRC/catalog/samples/softmax_fused.py")" \
  >"$T/olga/edit.sbatch"
run_to "olga sbatches a job that rewrites the kernel" 0 env KZOO_ROUTE=olga-batch "$SL" "$OLGA_TOKEN" "$T/olga" sbatch edit.sbatch
job5=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$T/out")
run_to "the maintainer releases it" 0 env KZOO_TOKEN="$MAINT_TOKEN" "$KZOO" release "${job5:-0}" --server "$KZOO_SERVER"
held5=""
for _ in $(seq 240); do
  curl -fsS -H "Authorization: Bearer $OLGA_TOKEN" "$KZOO_SERVER/api/batch/${job5:-0}" >"$T/b5.json" 2>/dev/null
  held5=$(jget "$T/b5.json" '[s["held"] for s in (d.get("review") or {}).get("submissions", [])]' 2>/dev/null)
  [ "$held5" = "[True]" ] && break
  sleep 0.5
done
check "... its result became one submission, held for a maintainer" "$([ "$held5" = "[True]" ]; echo $?)"
stop "$WORKER_PID"; WORKER_PID=
# Whether alice's job keeps its result depends on how its submission was graded (timed on a shared CPU).
sub_state=$(jget "$T/st.json" 'd["state"]' 2>/dev/null)
if [ "$sub_state" = accepted ]; then kept_accepted=1; expired_all="$job2 $job3 $job4"; kept_refs="$job $job5"
else kept_accepted=0; expired_all="$job $job2 $job3 $job4"; kept_refs="$job5"; fi
has_ref() { git --git-dir "$D/kernel_data.git" rev-parse -q --verify "refs/jobs/$1" >/dev/null; }
run_to "kzoo maintain --dry-run: every batch job ended minutes ago, none expires" 0 \
  "$KZOO" maintain --data "$D" --dry-run --json
check "... 0 expired, 5 kept as recent" \
  "$(jget "$T/out" 'd["expired_batch_jobs"] == 0 and d["kept_recent"] >= 5 and d["deleted_refs"] == 0' | grep -qx True; echo $?)"
# 40 days pass for the batch jobs (their start and end moved back in the state database).
"$PY" - "$D/state.db" <<'PY' || fail "aging the batch jobs"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
days40 = 40 * 86400 * 1000
db.execute("UPDATE jobs SET created_at = created_at - ?, started_at = started_at - ?, finished_at = finished_at - ? "
           "WHERE kind = 'batch'", (days40, days40, days40))
db.commit()
PY
run_to "kzoo maintain --dry-run --json, 40 days on" 0 "$KZOO" maintain --data "$D" --dry-run --json
n_expired=$(echo $expired_all | wc -w)
check "... $n_expired batch jobs expire ($expired_all); kept: $kept_accepted whose result was accepted, olga's held one" \
  "$(jget "$T/out" "d['expired_batch_jobs'] == $n_expired and d['kept_batch_accepted'] == $kept_accepted and d['kept_batch_pending'] == 1 and d['deleted_refs'] == 0" | grep -qx True; echo $?)"
check "... a dry run deletes nothing" "$(for j in $job3 $job4 $job5; do has_ref "$j" || exit 1; done; echo $?)"
run_to "kzoo maintain --json" 0 "$KZOO" maintain --data "$D" --json
check "... deletes the refs of the expired ones" \
  "$(for j in $expired_all; do ! has_ref "$j" || exit 1; done; echo $?)"
check "... and keeps the others' ($kept_refs)" "$(for j in $kept_refs; do has_ref "$j" || exit 1; done; echo $?)"
check "... git fetch origin refs/jobs/$job5 still works" \
  "$(git -C "$T/olga" fetch -q origin "refs/jobs/$job5" 2>/dev/null; echo $?)"
run_to "a second pass finds nothing left to delete" 0 "$KZOO" maintain --data "$D" --json --no-pack
check "... 0 refs deleted" "$(jget "$T/out" 'd["deleted_refs"] == 0' | grep -qx True; echo $?)"

echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" = 0 ]
