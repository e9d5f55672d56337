#!/usr/bin/env bash
# git pushes through several servers (issues 22 and 23): a real PostgreSQL 15,
# one data directory (kernel_data.git, uploads/) shared by two `kzoo serve`
# (a, b), two workers (one direct, one through b's runner API), and the real
# git client over smart HTTP. Everything below happens at once:
#   - alice and bob, members, push three times each to their own route,
#     alternating servers: the softmax twice (the same kernel, so its grades
#     and accepts race on the route) and the rmsnorm once (another kernel,
#     whose accept may land on the route at the same time);
#   - olga, an outsider, pushes through a (held); the maintainer releases her
#     job through b;
#   - bob opens a pull request to alice's route by refs/pulls through a;
#     alice merges it through b;
#   - the maintainer pushes a kernel to main through a (a submission, whose
#     accept moves main) and, once accepts land, scienceslack.json to main
#     through b (the project files: main moves at once, or "main has moved"
#     and a rebase);
#   - server a is killed -9 after it answered two pushes, while it receives a
#     third; what was bound for it goes through b (and a restarts later).
# Then: every push answered ok names its submission, every submission is final
# and no job completed twice, each route is linear with one commit per accept
# carrying its job's trailer, main holds the project files as pushed, every
# job's evidence fetches through both servers, both serve the same refs, and
# git fsck --strict is clean.
# Usage: git_servers.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=${1:?usage: git_servers.sh KZOO_BINARY SOURCE_DIR}
SRC=${2:?usage: git_servers.sh KZOO_BINARY SOURCE_DIR}
KZOO=$(cd "$(dirname "$KZOO")" && pwd)/$(basename "$KZOO")
SRC=$(cd "$SRC" && pwd)
PY=/usr/bin/python3
SOFT=h200/norm/softmax/bf16/softmax_eager
RMS=h200/norm/rmsnorm/bf16/rmsnorm_residual_eager
LIB="$(dirname "${BASH_SOURCE[0]}")/../lib"
. "$LIB/prerequisite.sh"
. "$LIB/postgres.sh"
why=$(pg_unavailable)
[ -z "$why" ] || require_prerequisite "$why"
[ -x "$(bwrap_path)" ] || require_prerequisite "bubblewrap is not installed ($(bwrap_path))"
command -v psql >/dev/null || require_prerequisite "psql is not installed (postgresql-client-15)"

SUITE_START=$(date +%s)
T=$(mktemp -d /tmp/kzoo_cli_git_servers.XXXXXX)
chmod 755 "$T"  # the sandbox's user and the postgres user pass through
D="$T/data"
A_PID= B_PID=
WORKERS=()
RUN_TO_TIMEOUT=120
. "$LIB/checks.sh"
cleanup() {
  for p in "${WORKERS[@]}"; do stop "$p"; done
  stop "$A_PID"
  stop "$B_PID"
  if [ "$FAILS" != 0 ]; then
    for f in a.log b.log; do echo "-- $f (tail)"; tail -n 20 "$T/$f" 2>/dev/null; done
    echo "-- workers (tail)"; tail -n 30 "$T/worker-"*.log 2>/dev/null
  fi
  pg_stop "$T/pg"
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

PG=$(pg_start "$T/pg") || { fail "PostgreSQL did not start"; exit 1; }
sql() { psql "$PG" -qtA -c "$1"; }
G() { git --git-dir "$D/kernel_data.git" "$@"; }
. "$LIB/git_client.sh"
. "$LIB/servers.sh"
# Server a is git_client.sh's $PORT; b gets its own. Status and the other
# verbs go to b, the server that stays up throughout.
PA=$PORT PB=$(free_port)
A=http://127.0.0.1:$PA B=http://127.0.0.1:$PB
UA=$A/git/kernel_data UB=$B/git/kernel_data
export KZOO_SERVER=$B
unset KZOO_STATE KZOO_SERVER_ID
url_of() { if [ "$1" = a ]; then echo "$UA"; else echo "$UB"; fi; }
server_of() { if [ "$1" = a ]; then echo "$A"; else echo "$B"; fi; }

# Two kernels. main's softmax is the six-pass sample done twelve times over,
# so that the fused one wins its A/B even with two graders and the servers on
# two loaded cores (tests/cli/board.sh says why it must be unmistakable); the
# rmsnorm stays eager, so the fewer-passes sample may win or lose (a gain of
# about 1.1x on a loaded CPU): the checks hold either way.
mkdir -p "$T/kernel_data"
cp "$SRC/catalog/kernel_data/.kernel_data" "$T/kernel_data/"
for k in "$SOFT" "$RMS"; do mkdir -p "$T/kernel_data/$k" && cp -r "$SRC/catalog/kernel_data/$k/." "$T/kernel_data/$k/"; done
sed 's/range(6)/range(12)/' "$SRC/catalog/samples/softmax_six_passes.py" >"$T/kernel_data/$SOFT/src/softmax.py"
grep -q 'range(12)' "$T/kernel_data/$SOFT/src/softmax.py" || fail "the slow softmax is not twelve passes"
run_to "kzoo init with the state on PostgreSQL" 0 "$KZOO" init "$D" --catalog "$T/kernel_data" --state "$PG" --board-device-class cpu
for u in maint:maintainer alice:member bob:member olga:outsider; do
  "$KZOO" user add "${u%%:*}" --role "${u##*:}" --data "$D" >/dev/null 2>&1 || fail "user add $u"
done
MAINT_TOKEN=$("$KZOO" token new maint --data "$D" 2>/dev/null)
ALICE_TOKEN=$("$KZOO" token new alice --data "$D" 2>/dev/null)
BOB_TOKEN=$("$KZOO" token new bob --data "$D" 2>/dev/null)
OLGA_TOKEN=$("$KZOO" token new olga --data "$D" 2>/dev/null)
"$KZOO" token new maint --runner git-servers --data "$D" >"$T/runner.token" 2>/dev/null || fail "runner token"

A_PID=$(start_server a "$PA" a.log)
B_PID=$(start_server b "$PB" b.log)
check "server a is up on the shared data directory (PostgreSQL state)" "$(wait_up "$A" "$A_PID"; echo $?)"
check "server b is up on the same data directory" "$(wait_up "$B" "$B_PID"; echo $?)"
# One worker on the data directory, one through b's runner API; 60 timed
# calls tell the samples from what they replace (scale.sh).
WARGS=(--device cpu --catalog "$SRC/catalog" --judge-dir "$SRC/judge" --iterations 60 --lease 30 --timeout 240)
"$KZOO" worker --data "$D" "${WARGS[@]}" >>"$T/worker-direct.log" 2>&1 & WORKERS+=($!)
"$KZOO" worker --server "$B" --token-file "$T/runner.token" "${WARGS[@]}" >>"$T/worker-api.log" 2>&1 & WORKERS+=($!)

# ---------------------------------------------------------------- the rules, by git through both servers
# adopt: maintainers, so that an accept on one route is not also committed
# onto main (adopt auto), where it would be the incumbent every other route's
# first accept is measured against again (docs/BOARD.md): the routes then
# race on their own branches only.
run_to "the maintainer clones through b" 0 "$AS" "$MAINT_TOKEN" clone -q "$UB" "$T/maint"
rules "$T/maint" 'b["adopt"] = "maintainers"' "rules: routes reach main by a maintainer's merge" || fail "the adopt commit"
run_to "the maintainer pushes adopt: maintainers to main through a: main moves" 0 \
  "$AS" "$MAINT_TOKEN" -C "$T/maint" push "$UA" HEAD:main
main0=$(sed -n 's/.*kzoo-project: commit=\([0-9a-f]*\) .*/\1/p' "$T/err")
run_to "... and approves it through b (kzoo approve moves checks)" 0 \
  env KZOO_TOKEN="$MAINT_TOKEN" "$KZOO" approve "${main0:-none}" --server "$B"
check "main and checks are at the commit a made, as both servers read them" \
  "$([ -n "$main0" ] && [ "$(G rev-parse main)" = "$main0" ] && [ "$(G rev-parse 'checks^{commit}')" = "$main0" ] &&
     [ "$(git ls-remote "$UB" refs/heads/main | cut -f1)" = "$main0" ]; echo $?)"
"$KZOO" board --json >"$T/board.json" 2>/dev/null
check "the board in force says adopt maintainers" "$(jget "$T/board.json" 'd["adopt"]' 2>/dev/null | grep -qx maintainers; echo $?)"

# ---------------------------------------------------------------- clones through different servers
run_to "alice clones through a" 0 "$AS" "$ALICE_TOKEN" clone -q "$UA" "$T/alice"
run_to "bob clones through b" 0 "$AS" "$BOB_TOKEN" clone -q "$UB" "$T/bob"
run_to "olga clones through a" 0 "$AS" "$OLGA_TOKEN" clone -q "$UA" "$T/olga"
# Each contributor's first commit: the fused softmax (or, for the maintainer's
# push to main, the rmsnorm with fewer passes) on main.
# Branches pushed while another is being committed on in the same clone
# (bob's pull request, the maintainer's kernel) are made now, and pushed by name.
(cd "$T/bob" && git checkout -q -B pr origin/main && cp "$SRC/catalog/samples/softmax_fused.py" "$SOFT/src/softmax.py" &&
 echo "# bob's idea for alice" >>"$SOFT/src/softmax.py" && git commit -qam "bob: softmax for alice's route") ||
  fail "bob's pull request commit"
(cd "$T/maint" && git fetch -q origin && git checkout -q -B kernel origin/main &&
 cp "$SRC/catalog/samples/rmsnorm_residual_fewer_passes.py" "$RMS/src/rmsnorm_residual.py" &&
 git commit -qam "rmsnorm: fewer passes") || fail "the maintainer's kernel commit"
for c in alice bob olga; do
  (cd "$T/$c" && git checkout -q -B work origin/main && cp "$SRC/catalog/samples/softmax_fused.py" "$SOFT/src/softmax.py" &&
   git commit -qam "$c: softmax in one fused pass") || fail "$c's commit"
done

# ---------------------------------------------------------------- pushes, all at once
# push NAME SERVER TOKEN DIR REFSPEC: one push through SERVER (a or b), its
# outcome kept as $P/NAME.{rc,err,server}. Bound for a once a is killed (the
# killer writes $P/a.killed before the kill), it goes through b instead: the
# failed attempt's output stays as $P/NAME.a-failed for the checks.
P=$T/push
mkdir -p "$P"
push() {
  local name=$1 s=$2 tok=$3 dir=$4 spec=$5 rc
  [ -e "$P/a.killed" ] && s=b
  : >"$P/$name.inflight-$s"
  timeout 120 "$AS" "$tok" -C "$dir" push "$(url_of "$s")" "$spec" >"$P/$name.out" 2>"$P/$name.err"
  rc=$?
  rm -f "$P/$name.inflight-$s"
  if [ "$rc" != 0 ] && [ "$s" = a ] && [ -e "$P/a.killed" ]; then
    mv "$P/$name.err" "$P/$name.a-failed"
    s=b
    timeout 120 "$AS" "$tok" -C "$dir" push "$(url_of "$s")" "$spec" >"$P/$name.out" 2>"$P/$name.err"
    rc=$?
  fi
  echo "$s" >"$P/$name.server"
  echo "$rc" >"$P/$name.rc"
  [ "$s" = b ] && [ -e "$P/a.killed" ] && : >"$P/$name.after-kill"
  return "$rc"
}
# first_id NAME: the submission id in push NAME's answer (kzoo-submission: id=N job=M ...).
first_id() { sed -n 's/.*kzoo-submission: id=\([0-9]*\) job=.*/\1/p' "$P/$1.err" 2>/dev/null | head -1; }
first_job() { sed -n 's/.*kzoo-submission: id=[0-9]* job=\([0-9]*\) .*/\1/p' "$P/$1.err" 2>/dev/null | head -1; }
# until_file FILE SECONDS: waits for FILE to exist.
until_file() { for _ in $(seq $(($2 * 10))); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }

# contribute WHO TOKEN ROUTE SERVER...: one push to routes/ROUTE per SERVER, a
# second apart: the softmax, a commit on the last each time (a line more),
# but the second push is the rmsnorm with fewer passes, alone on main, so that
# two kernels' accepts may land on the route at once (and the first two may
# both be the route's first, which creates it).
contribute() {
  local who=$1 tok=$2 route=$3 i=0 s spec
  shift 3
  for s in "$@"; do
    i=$((i + 1))
    if [ "$i" = 2 ]; then
      spec=rms:routes/$route
      (cd "$T/$who" && git branch -q -f rms origin/main && git checkout -q rms &&
       cp "$SRC/catalog/samples/rmsnorm_residual_fewer_passes.py" "$RMS/src/rmsnorm_residual.py" &&
       git commit -qam "$who: rmsnorm, fewer passes" && git checkout -q work) || echo "commit failed" >"$P/$who-$i.err"
    else
      spec=work:routes/$route
      (cd "$T/$who" && echo "# $who, pass $i" >>"$SOFT/src/softmax.py" && git commit -qam "$who: softmax, pass $i") ||
        echo "commit failed" >"$P/$who-$i.err"
    fi
    push "$who-$i" "$s" "$tok" "$T/$who" "$spec"
    sleep 1
  done
}
# a_receiving: server a runs a push's receive-pack now (its git-http-backend
# child for PATH_INFO .../git-receive-pack): the pack is in, or being judged.
a_receiving() {
  local c
  for c in $(ps -o pid= --ppid "$A_PID" 2>/dev/null); do
    tr '\0' '\n' <"/proc/$c/environ" 2>/dev/null | grep -q '^PATH_INFO=.*/git-receive-pack$' && return 0
  done
  return 1
}
# The killer: once a has answered two pushes, kill -9 it while it receives a
# third (or, failing that within 15 s, while a push to it is merely started,
# or at once), so that a push is cut off mid-way.
killer() {
  for _ in $(seq 600); do
    [ "$(grep -lx a "$P"/*.server 2>/dev/null | wc -l)" -ge 2 ] && break
    sleep 0.05
  done
  local how="with no push to it in flight"
  for _ in $(seq 1500); do
    if a_receiving; then how="while it received a push"; break; fi
    sleep 0.01
  done
  if [ "$how" != "while it received a push" ] && compgen -G "$P/*.inflight-a" >/dev/null; then
    how="while a push to it had started"
  fi
  ls "$P" | sed -n 's/\.inflight-a$//p' >"$P/a.inflight-at-kill"
  : >"$P/a.killed"
  kill -9 "$A_PID"
  echo "$how" >"$P/a.killed"
}
PUSHES_START=$(date +%s)
killer & KILLER=$!
contribute alice "$ALICE_TOKEN" alice-soft a b a & J1=$!
contribute bob "$BOB_TOKEN" bob-soft b a b & J2=$!
(push olga a "$OLGA_TOKEN" "$T/olga" HEAD:routes/olga-soft &&
 env KZOO_TOKEN="$MAINT_TOKEN" "$KZOO" release "$(first_job olga)" --server "$B" >"$P/release.out" 2>&1
 echo $? >"$P/release.rc") & J3=$!
# bob's pull request waits for alice's route to exist (her first push starts it).
(until_file "$P/alice-1.rc" 60
 push pr a "$BOB_TOKEN" "$T/bob" pr:refs/pulls/alice-soft/bobs-pass &&
 env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" merge "$(first_id pr)" --server "$B" >"$P/merge.out" 2>&1
 echo $? >"$P/merge.rc") & J4=$!
(push maint-kernel a "$MAINT_TOKEN" "$T/maint" kernel:main) & J5=$!
# The project files: scienceslack.json to main through b, committed on main
# as the pushes start and pushed once an accept has landed (or 200 s passed),
# so that main may have moved under it (the maintainer's rmsnorm) or move
# while it is judged. Forced (+), so that the server decides whether main has
# moved, not git's own fast-forward check ("fetch first") before it.
project() {
  rules "$T/maint" 'b["partitions"][0]["default_time"] = "00:20:00"' "rules: a longer default time" 2>>"$P/project.setup"
  for _ in $(seq 400); do
    [ -n "$(sql "SELECT 1 FROM submissions WHERE state='accepted' LIMIT 1")" ] && break
    sleep 0.5
  done
  git -C "$T/maint" rev-parse HEAD >"$P/project.pushed"
  push project b "$MAINT_TOKEN" "$T/maint" +HEAD:main && return 0
  # Refused: main moved since the commit it was built on. Rebase, push again.
  cp "$P/project.err" "$P/project.refused"
  "$AS" "$MAINT_TOKEN" -C "$T/maint" pull -q --rebase origin main 2>>"$P/project.setup"
  git -C "$T/maint" rev-parse HEAD >"$P/project.pushed"
  push project b "$MAINT_TOKEN" "$T/maint" +HEAD:main
}
project & J6=$!
wait "$J1" "$J2" "$J3" "$J4" "$J5" "$J6"
wait "$KILLER"
wait "$A_PID" 2>/dev/null
ok "pushes done in $(($(date +%s) - PUSHES_START)) s"

# ---------------------------------------------------------------- every push answered
PUSHES="alice-1 alice-2 alice-3 bob-1 bob-2 bob-3 olga pr maint-kernel"
: >"$T/answered"
for n in $PUSHES; do
  ids=$(sed -n 's/.*kzoo-submission: id=\([0-9]*\) job=\([0-9]*\) .*/\1 \2/p' "$P/$n.err" 2>/dev/null)
  check "push $n answered ok through $(cat "$P/$n.server" 2>/dev/null) with one submission: ${ids:-none}" \
    "$([ "$(cat "$P/$n.rc" 2>/dev/null)" = 0 ] && [ "$(echo "$ids" | grep -c .)" = 1 ]; echo $?)"
  [ "$(cat "$P/$n.rc" 2>/dev/null)" = 0 ] || sed 's/^/    err: /' "$P/$n.err" 2>/dev/null | tail -8
  echo "$n $ids" >>"$T/answered"
done
check "a answered pushes before it was killed" "$([ "$(grep -lx a "$P"/*.server | wc -l)" -ge 2 ]; echo $?)"
check "pushes went on through b after the kill, and were answered" \
  "$(compgen -G "$P/*.after-kill" >/dev/null; echo $?)"
inflight=$(cat "$P/a.inflight-at-kill" 2>/dev/null | tr '\n' ' ')
ok "a was killed $(cat "$P/a.killed"); in flight to it: ${inflight:-none}; failed there and pushed again through b: $(ls "$P" | sed -n 's/\.a-failed$//p' | tr '\n' ' ')"
check "the release through b and the merge answered ok" \
  "$([ "$(cat "$P/release.rc" 2>/dev/null)" = 0 ] && [ "$(cat "$P/merge.rc" 2>/dev/null)" = 0 ]; echo $?)"
check "the project files' push answered ok" "$([ "$(cat "$P/project.rc" 2>/dev/null)" = 0 ]; echo $?)"
[ "$(cat "$P/project.rc" 2>/dev/null)" = 0 ] || sed 's/^/    err: /' "$P/project.err" "$P/project.setup" 2>/dev/null | tail -12

A_PID=$(start_server a "$PA" a.log)
check "server a restarts on the shared directory" "$(wait_up "$A" "$A_PID"; echo $?)"

# A push cut off by the kill after a recorded it (git never got the answer,
# and the pusher pushed again through b) leaves a submission nobody was told
# of. Queued, it is graded like any other; held, it waits for a person like
# any other held one, and is found where they look: the route's owner closes
# such a pull request (kzoo pulls), the maintainer releases such a held job
# (kzoo jobs --held). Either way it must end final, checked below.
answered_ids=$(awk 'NF >= 2 { printf "%s%s", sep, $2; sep = "," }' "$T/answered")
for id in $(sql "SELECT submission_id FROM pulls WHERE state = 'open' AND submission_id NOT IN (${answered_ids:-0})"); do
  run_to "alice closes pull request $id, recorded by a as it was killed, through b" 0 \
    env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" close "$id" --why "a duplicate: the push was cut off and pushed again" --server "$B"
done
for j in $(sql "SELECT id FROM jobs WHERE state = 'queued' AND held = 1 AND hold_reason = 'JobHeldAdmin' AND submission_id NOT IN (${answered_ids:-0})"); do
  run_to "the maintainer releases job $j, recorded by a as it was killed, through b" 0 \
    env KZOO_TOKEN="$MAINT_TOKEN" "$KZOO" release "$j" --server "$B"
done

# ---------------------------------------------------------------- every submission final, once
for _ in $(seq 1440); do  # 720 s: nine grades, two at a time, on two loaded cores
  [ "$(sql "SELECT count(*) FROM submissions WHERE state IN ('received','queued','running')")" = 0 ] && break
  sleep 0.5
done
check "every recorded submission is final (nothing left received, queued or running)" \
  "$([ "$(sql "SELECT count(*) FROM submissions WHERE state IN ('received','queued','running')")" = 0 ]; echo $?)"
notfinal=
while read -r n id job; do
  [ -n "$id" ] || continue
  "$KZOO" status "$id" --json >"$T/st.json" 2>/dev/null
  [ "$(jget "$T/st.json" 'd["final"]' 2>/dev/null)" = True ] || notfinal="$notfinal $n:$id"
done <"$T/answered"
check "every answered submission is final through /api/submissions${notfinal:+ (not:$notfinal)}" "$([ -z "$notfinal" ]; echo $?)"
"$KZOO" audit --data "$D" --json >"$T/audit.json" 2>/dev/null
check "no job completed twice (kzoo audit: one job.complete each)" \
  "$(jget "$T/audit.json" 'len([e["target"] for e in d["entries"] if e["action"] == "job.complete"]) == len({e["target"] for e in d["entries"] if e["action"] == "job.complete"}) > 0' | grep -q True; echo $?)"
check "no submission has two jobs that finished" \
  "$([ -z "$(sql "SELECT submission_id FROM jobs WHERE state IN ('accepted','rejected','failed') GROUP BY submission_id HAVING count(*) > 1")" ]; echo $?)"
check "no answered submission failed or was cancelled (each was graded)" \
  "$([ -z "$(sql "SELECT id FROM submissions WHERE state IN ('failed','cancelled') AND id IN (${answered_ids:-0})")" ]; echo $?)"
"$KZOO" queue --state finished --json --limit 1000 >"$T/queue.json" 2>/dev/null
check "kzoo queue lists every job of every submission as finished" \
  "$([ "$(jget "$T/queue.json" 'len(d["jobs"])' 2>/dev/null)" = "$(sql "SELECT count(*) FROM jobs")" ]; echo $?)"
sql "SELECT state, count(*) FROM submissions GROUP BY state ORDER BY state" | tr '\n' ' ' >"$T/states"
ok "submissions by state: $(cat "$T/states")"
ok "recorded without an answer (cut off by the kill): $(sql "SELECT id || ' ' || state || ' by ' || received_by FROM submissions WHERE id NOT IN (${answered_ids:-0})" | tr '\n' ';')"

# ---------------------------------------------------------------- routes: one commit per accept, linear
for r in alice-soft bob-soft olga-soft; do
  jobs=$(sql "SELECT j.id FROM jobs j JOIN submissions s ON s.id = j.submission_id WHERE s.route = '$r' AND j.state = 'accepted' ORDER BY j.id")
  n=$(echo "$jobs" | grep -c .)
  if [ "$n" = 0 ]; then
    check "routes/$r: no accept, so no branch" "$(G rev-parse -q --verify "refs/heads/routes/$r" >/dev/null; [ $? != 0 ]; echo $?)"
    continue
  fi
  base=$(G merge-base main "routes/$r")
  trailers=$(G log --format=%B "$base..routes/$r" | sed -n 's/^Kzoo-Job: //p' | sort -n | tr '\n' ' ')
  check "routes/$r: linear, one commit per accepted job ($n), each carrying its job's trailer ($trailers)" \
    "$([ "$(G rev-list --count "$base..routes/$r")" = "$n" ] && [ "$(G rev-list --merges --count "routes/$r")" = 0 ] &&
       [ "$trailers" = "$(echo "$jobs" | tr '\n' ' ')" ]; echo $?)"
  missing=
  for c in $(sql "SELECT accepted_commit FROM submissions WHERE route = '$r' AND state = 'accepted'"); do
    G merge-base --is-ancestor "$c" "routes/$r" || missing="$missing $c"
  done
  check "routes/$r: every accepted commit is on it" "$([ -z "$missing" ]; echo $?)"
done
check "alice's and bob's routes each took an accept" \
  "$([ -n "$(sql "SELECT 1 FROM submissions WHERE route='alice-soft' AND state='accepted'")" ] &&
     [ -n "$(sql "SELECT 1 FROM submissions WHERE route='bob-soft' AND state='accepted'")" ]; echo $?)"

# ---------------------------------------------------------------- main: the project files as pushed
project_commit=$(sed -n 's/.*kzoo-project: commit=\([0-9a-f]*\) .*/\1/p' "$P/project.err" 2>/dev/null)
pushed=$(cat "$P/project.pushed" 2>/dev/null)
if [ -e "$P/project.refused" ]; then
  how=$(grep -o "main has moved\|main moved while the push was judged" "$P/project.refused" | head -1)
  check "the project files' first push was refused because main had moved (${how:-another reason}), and landed after a rebase" \
    "$([ -n "$how" ] && [ -n "$project_commit" ]; echo $?)"
else
  ok "the project files landed on the first push (no accept on main came between)"
fi
check "main holds the project commit: its tree exactly the pushed commit's, main's rules file the pushed one" \
  "$([ -n "$project_commit" ] && G merge-base --is-ancestor "$project_commit" main &&
     [ "$(G rev-parse "$project_commit^{tree}")" = "$(git -C "$T/maint" rev-parse "$pushed^{tree}")" ] &&
     [ "$(G rev-parse main:scienceslack.json)" = "$(git -C "$T/maint" rev-parse "$pushed:scienceslack.json")" ]; echo $?)"
main_accepts=$(sql "SELECT count(*) FROM submissions WHERE route = '' AND state = 'accepted'")
check "main: linear, one commit per accept on it ($main_accepts) and one for the project files" \
  "$([ "$(G rev-list --count "$main0..main")" = $((main_accepts + 1)) ] && [ "$(G rev-list --merges --count main)" = 0 ]; echo $?)"
dups=
for b in main routes/alice-soft routes/bob-soft routes/olga-soft; do
  G rev-parse -q --verify "$b" >/dev/null || continue
  [ -z "$(G log --format=%B "$b" | grep '^Kzoo-Job: ' | sort | uniq -d)" ] || dups="$dups $b"
done
check "no job's trailer is on two commits of one branch${dups:+ (on:$dups)}" "$([ -z "$dups" ]; echo $?)"
odd=$(G for-each-ref --format='%(refname)' | grep -v -E '^refs/(heads/main|heads/routes/(alice|bob|olga)-soft|tags/checks|boards/v[0-9]+|jobs/[0-9]+)$' | tr '\n' ' ')
check "the only refs are main, the routes, checks, the board's and the jobs' evidence (no push moved or made one)${odd:+: $odd}" \
  "$([ -z "$odd" ]; echo $?)"

# ---------------------------------------------------------------- evidence and refs through both servers
bad=
for j in $(sql "SELECT id FROM jobs WHERE state IN ('accepted','rejected') ORDER BY id"); do
  for s in a b; do
    git -C "$T/alice" fetch -q "$(url_of "$s")" "refs/jobs/$j" 2>/dev/null &&
      [ "$(git -C "$T/alice" rev-parse FETCH_HEAD)" = "$(G rev-parse "refs/jobs/$j")" ] || bad="$bad $s:$j"
  done
done
check "git fetch refs/jobs/<id> works through both servers for every graded job${bad:+ (not:$bad)}" "$([ -z "$bad" ]; echo $?)"
check "both servers advertise the same refs" "$([ "$(git ls-remote "$UA")" = "$(git ls-remote "$UB")" ]; echo $?)"
git clone -q "$UA" "$T/ca" && git clone -q "$UB" "$T/cb"
check "clones through either server see the same branches and tags" \
  "$([ -n "$(git -C "$T/ca" for-each-ref)" ] && [ "$(git -C "$T/ca" for-each-ref)" = "$(git -C "$T/cb" for-each-ref)" ]; echo $?)"
check "the restarted server a rejected only what it was receiving itself" \
  "$([ -z "$(sql "SELECT id FROM submissions WHERE received_by <> 'a' AND reasons LIKE '%interrupted%'")" ]; echo $?)"
G fsck --strict --no-progress >"$T/fsck" 2>&1
check "git fsck --strict is clean on the shared repository" "$([ $? = 0 ] && ! grep -qiE 'error|warning' "$T/fsck"; echo $?)"

echo "$CHECKS checks, $FAILS failed, in $(($(date +%s) - SUITE_START)) s"
[ "$FAILS" = 0 ]
