#!/usr/bin/env bash
# A contributor with only git and a token (issue 23, "Done when"): the real
# git client against a real `kzoo serve` on loopback, over git's smart HTTP
# (git-http-backend run by the server), and a real `kzoo worker` grading on
# the CPU:
#   1. clone, anonymously (reads are public) and with a credential helper;
#   2. a push to one's own route is answered with a submission, and moves
#      nothing; the route branch moves only once the checks accept it;
#   3. a push refused by role (someone else's route; main by a member), told
#      the way forward (refs/pulls, kzoo submit --pull-request);
#   4. a push to refs/pulls/<route>/<topic> opens a pull request;
#   5. an outsider's push is held, then released by a maintainer;
#   6. forged evidence (bench_result.yaml, a .pt tensor) is refused, naming
#      the file, the rule and the fix, and records nothing;
#   7. the worker accepts the route push; git fetch origin refs/jobs/<id>
#      brings the job's evidence;
#   8. a maintainer's push to main is a submission to main, not a move.
# Usage: git.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=${1:?usage: git.sh KZOO_BINARY SOURCE_DIR}
SRC=${2:?usage: git.sh KZOO_BINARY SOURCE_DIR}
KZOO=$(cd "$(dirname "$KZOO")" && pwd)/$(basename "$KZOO")
SRC=$(cd "$SRC" && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
SOFT=h200/norm/softmax/bf16/softmax_eager

T=$(mktemp -d /tmp/kzoo_cli_git.XXXXXX)
chmod 755 "$T"
D="$T/data"
SERVE_PID=
WORKER_PID=
RUN_TO_TIMEOUT=600
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
G() { git --git-dir "$D/kernel_data.git" "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/../lib/git_client.sh"

# One kernel whose source on main is made unmistakably slow (the same softmax
# six times over), so that the catalog's fused one wins the A/B on a loaded
# CPU every time (tests/cli/board.sh says why).
mkdir -p "$T/kernel_data/$(dirname "$SOFT")"
cp "$SRC/catalog/kernel_data/.kernel_data" "$T/kernel_data/"
cp -r "$SRC/catalog/kernel_data/$SOFT" "$T/kernel_data/$SOFT"
cp "$SRC/catalog/samples/softmax_six_passes.py" "$T/kernel_data/$SOFT/src/softmax.py"
run_to "kzoo init" 0 "$KZOO" init "$D" --catalog "$T/kernel_data" --board-device-class cpu
main0=$(G rev-parse main)
for u in maint:maintainer alice:member bob:member olga:outsider; do
  "$KZOO" user add "${u%%:*}" --role "${u##*:}" --data "$D" >/dev/null 2>&1 || fail "user add $u"
done
MAINT_TOKEN=$("$KZOO" token new maint --data "$D" 2>/dev/null)
ALICE_TOKEN=$("$KZOO" token new alice --data "$D" 2>/dev/null)
BOB_TOKEN=$("$KZOO" token new bob --agent claude --data "$D" 2>/dev/null)  # bob works through his agent
OLGA_TOKEN=$("$KZOO" token new olga --data "$D" 2>/dev/null)
"$KZOO" serve --data "$D" --listen "127.0.0.1:$PORT" >"$T/serve.log" 2>&1 & SERVE_PID=$!
for _ in $(seq 100); do curl -fsS "$KZOO_SERVER/healthz" >/dev/null 2>&1 && break; sleep 0.2; done

# edit DIR FILE-IN-SOFT CONTENT-FILE MESSAGE: a commit on a fresh branch off origin/main.
edit() {
  (cd "$1" && git fetch -q origin && git checkout -q -B work origin/main && mkdir -p "$(dirname "$SOFT/$2")" &&
   cp "$3" "$SOFT/$2" && git add -A && git commit -q -m "$4")
}

# ---------------------------------------------------------------- 1. clone
run_to "an anonymous clone works (reads are public)" 0 git clone -q "$URL" "$T/anon"
check "the clone holds main's head and the kernel's source" \
  "$([ "$(git -C "$T/anon" rev-parse HEAD)" = "$main0" ] && cmp -s "$T/anon/$SOFT/src/softmax.py" "$T/kernel_data/$SOFT/src/softmax.py"; echo $?)"
run_to "the same clone through .../kernel_data.git" 0 git clone -q "$URL.git" "$T/anon2"
curl -s -o /dev/null -D "$T/h401" "$URL/info/refs?service=git-receive-pack"
check "a push without a token is 401 with WWW-Authenticate: Basic (so git asks its credential helper)" \
  "$(grep -q '^HTTP/1.1 401' "$T/h401" && grep -qi '^WWW-Authenticate: Basic realm="kzoo"' "$T/h401"; echo $?)"
run_to "git push without credentials fails (no prompt)" 128 git -C "$T/anon" push "$URL" HEAD:refs/heads/routes/nobody
curl -s -o /dev/null -w '%{http_code}' -u "x:kzoo_bad_token" "$URL/info/refs?service=git-upload-pack" >"$T/code"
check "a malformed token is 401 even on a public read" "$([ "$(cat "$T/code")" = 401 ]; echo $?)"
curl -s -o /dev/null -w '%{http_code}' "$KZOO_SERVER/git/kernel_data/info/refs" >"$T/code"
check "the dumb protocol is not served (403)" "$([ "$(cat "$T/code")" = 403 ]; echo $?)"
run_to "alice clones with her token as the password (credential helper)" 0 "$AS" "$ALICE_TOKEN" clone -q "$URL" "$T/alice"
run_to "bob's agent clones" 0 "$AS" "$BOB_TOKEN" clone -q "$URL" "$T/bob"
run_to "olga clones" 0 "$AS" "$OLGA_TOKEN" clone -q "$URL" "$T/olga"
for c in alice bob olga; do git -C "$T/$c" config credential.helper ""; done

# ---------------------------------------------------------------- 2. a push onto her route
edit "$T/alice" src/softmax.py "$SRC/catalog/samples/softmax_fused.py" "softmax: one fused pass"
fused=$(git -C "$T/alice" rev-parse HEAD)
run_to "alice pushes to routes/fast-softmax: answered ok (exit 0)" 0 \
  "$AS" "$ALICE_TOKEN" -C "$T/alice" push origin HEAD:routes/fast-softmax
cp "$T/err" "$T/push1"
sub=$(sed -n 's/.*kzoo-submission: id=\([0-9]*\) job=\([0-9]*\) kernel=.*/\1/p' "$T/push1" | head -1)
job=$(sed -n 's/.*kzoo-submission: id=\([0-9]*\) job=\([0-9]*\) kernel=.*/\2/p' "$T/push1" | head -1)
check "the remote: lines name the submission and its job for the kernel" \
  "$([ -n "$sub" ] && [ -n "$job" ] && grep -q "remote: kzoo: submission $sub (job $job) $SOFT on routes/fast-softmax: queued" "$T/push1"; echo $?)"
check "the route branch did not move: it does not exist until the checks accept" \
  "$([ -z "$(remote_ref refs/heads/routes/fast-softmax)" ] && [ "$(remote_ref refs/heads/main)" = "$main0" ]; echo $?)"
run_to "kzoo status shows the submission queued on the route" 0 "$KZOO" status "$sub" --json
check "... with the commit message as its summary" \
  "$(jget "$T/out" 'd["state"] == "queued" and d.get("route") in ("fast-softmax", None) and "one fused pass" in json.dumps(d)' 2>/dev/null | grep -q True; echo $?)"

# ---------------------------------------------------------------- 3. refused by role
edit "$T/bob" src/softmax.py "$SRC/catalog/samples/softmax_fused.py" "softmax: bob's fused pass"
run_to "bob's agent cannot push to alice's route" 1 "$AS" "$BOB_TOKEN" -C "$T/bob" push origin HEAD:routes/fast-softmax
check "... [remote rejected], told whose route it is and the ways forward (refs/pulls, kzoo submit --pull-request)" \
  "$(grep -q "\[remote rejected\] HEAD -> routes/fast-softmax" "$T/err" && grep -q "belongs to alice" "$T/err" &&
     grep -q "refs/pulls/fast-softmax/" "$T/err" && grep -q "kzoo submit --route fast-softmax --pull-request" "$T/err"; echo $?)"
run_to "alice (a member) cannot push to main" 1 "$AS" "$ALICE_TOKEN" -C "$T/alice" push origin HEAD:main
check "... told to open a pull request to main" "$(grep -q "refs/pulls/main/" "$T/err"; echo $?)"
run_to "nobody pushes tags" 1 "$AS" "$MAINT_TOKEN" -C "$T/alice" push origin HEAD:refs/tags/v9
run_to "nobody deletes a branch by push" 1 "$AS" "$MAINT_TOKEN" -C "$T/alice" push origin :refs/heads/main
check "main and the tag checks are as they were" \
  "$([ "$(remote_ref refs/heads/main)" = "$main0" ] && [ -z "$(remote_ref refs/tags/v9)" ]; echo $?)"

# ---------------------------------------------------------------- 4. a pull request by push
run_to "bob's agent pushes to refs/pulls/fast-softmax/bobs-pass: a pull request" 0 \
  "$AS" "$BOB_TOKEN" -C "$T/bob" push origin HEAD:refs/pulls/fast-softmax/bobs-pass
pr=$(sed -n 's/.*kzoo-submission: id=\([0-9]*\) .*pull_request=true.*/\1/p' "$T/err" | head -1)
check "... answered with the pull request's id, held until alice merges it" \
  "$([ -n "$pr" ] && grep -q "pull request $pr to routes/fast-softmax, held until its owner merges it" "$T/err"; echo $?)"
run_to "kzoo pulls lists it, the same object as kzoo submit --pull-request" 0 "$KZOO" pulls --route fast-softmax --json
check "... open, by bob, into routes/fast-softmax" \
  "$(jget "$T/out" '[(p["id"], p["author"], p["state"], p["into"]) for p in d["pulls"]] == [('"$pr"', "bob", "open", "routes/fast-softmax")]' | grep -q True; echo $?)"
run_to "alice's pull request to her own route is refused (push to it instead)" 1 \
  "$AS" "$ALICE_TOKEN" -C "$T/alice" push origin HEAD:refs/pulls/fast-softmax/mine
check "... told to push to routes/fast-softmax" "$(grep -q "yours to push to: git push origin HEAD:routes/fast-softmax" "$T/err"; echo $?)"

# ---------------------------------------------------------------- 5. an outsider's push is held
edit "$T/olga" src/softmax.py "$SRC/catalog/samples/softmax_fused.py" "softmax: from outside"
run_to "olga (an outsider) pushes to a route of her own: accepted for judging, held" 0 \
  "$AS" "$OLGA_TOKEN" -C "$T/olga" push origin HEAD:routes/olga-softmax
olga_sub=$(sed -n 's/.*kzoo-submission: id=\([0-9]*\) job=\([0-9]*\) .*held=true.*/\1/p' "$T/err" | head -1)
olga_job=$(sed -n 's/.*kzoo-submission: id=\([0-9]*\) job=\([0-9]*\) .*held=true.*/\2/p' "$T/err" | head -1)
check "... held for a maintainer (JobHeldAdmin)" "$([ -n "$olga_job" ] && grep -q "held for a maintainer (JobHeldAdmin)" "$T/err"; echo $?)"
run_to "kzoo jobs --held lists her job" 0 "$KZOO" jobs --held --data "$D" --json
check "... with reason JobHeldAdmin" "$(jget "$T/out" 'any(h["job_id"] == '"${olga_job:-0}"' and h["reason"] == "JobHeldAdmin" for h in d["held"])' | grep -q True; echo $?)"
run_to "a member cannot release it" 2 env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" release "${olga_job:-0}" --server "$KZOO_SERVER"
run_to "the maintainer releases it" 0 env KZOO_TOKEN="$MAINT_TOKEN" "$KZOO" release "${olga_job:-0}" --server "$KZOO_SERVER"
"$KZOO" status "${olga_sub:-0}" --json >"$T/st.json" 2>/dev/null
check "... no longer held, released by maint" \
  "$(jget "$T/st.json" 'd["jobs"][0]["held"] is False and d["jobs"][0]["released_by"] == "maint"' | grep -q True; echo $?)"

# ---------------------------------------------------------------- 6. forged evidence
before_refs=$(git ls-remote "$URL" | sort)
printf 'schema_version: 1\nkernel_id: %s\ncases: []\n' "$SOFT" >"$T/forged.yaml"
edit "$T/alice" .kernel_package/bench_result.yaml "$T/forged.yaml" "better numbers"
run_to "a forged .kernel_package/bench_result.yaml is refused" 1 "$AS" "$ALICE_TOKEN" -C "$T/alice" push origin HEAD:routes/fast-softmax
check "... naming the file, the rule (git.outside-src) and the fix" \
  "$(grep -q "$SOFT/.kernel_package/bench_result.yaml: git.outside-src: .*server-owned bench_result.yaml.*revert it" "$T/err" &&
     grep -q "\[remote rejected\] HEAD -> routes/fast-softmax (1 rule broken" "$T/err"; echo $?)"
"$PY" - "$T/fake.pt" <<'EOF'
# What torch.save writes: a zip archive holding a pickle (no torch needed to forge one).
import pickle, sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("archive/data.pkl", pickle.dumps({"out": [0.1] * 64}))
    z.writestr("archive/version", "3\n")
EOF
edit "$T/alice" src/expected_out.pt "$T/fake.pt" "cache the expected output"
run_to "a .pt tensor in src/ is refused" 1 "$AS" "$ALICE_TOKEN" -C "$T/alice" push origin HEAD:routes/fast-softmax
check "... naming the file and an evidence rule" "$(grep -q "src/expected_out.pt: evidence\." "$T/err"; echo $?)"
cp "$T/fake.pt" "$T/fake.txt"
edit "$T/alice" src/notes.py "$T/fake.pt" "renamed: judged by content"
run_to "the same bytes renamed to notes.py are refused too" 1 "$AS" "$ALICE_TOKEN" -C "$T/alice" push origin HEAD:routes/fast-softmax
check "... by content" "$(grep -q "src/notes.py: evidence\." "$T/err"; echo $?)"
check "refused pushes changed no ref" "$([ "$(git ls-remote "$URL" | sort)" = "$before_refs" ]; echo $?)"
"$KZOO" status "$((olga_sub + 1))" --json >/dev/null 2>&1
check "... and recorded no submission" "$([ $? != 0 ]; echo $?)"

# ---------------------------------------------------------------- 7. judged; the evidence by git fetch
"$KZOO" worker --data "$D" --device cpu --catalog "$SRC/catalog" --judge-dir "$SRC/judge" --lease 30 --timeout 400 \
  >"$T/worker.log" 2>&1 & WORKER_PID=$!
check "alice's route push is judged to a verdict" "$(wait_final "$sub" 1200; echo $?)"
check "... accepted" "$(jget "$T/st.json" 'd["state"]' | grep -qx accepted; echo $?)"
route_tip=$(remote_ref refs/heads/routes/fast-softmax)
check "only now does routes/fast-softmax exist, holding the pushed source" \
  "$([ -n "$route_tip" ] && G show "routes/fast-softmax:$SOFT/src/softmax.py" | cmp -s - "$SRC/catalog/samples/softmax_fused.py"; echo $?)"
run_to "git fetch origin refs/jobs/$job" 0 git -C "$T/alice" fetch origin "refs/jobs/$job"
check "FETCH_HEAD is the job's evidence commit, with its log and check" \
  "$([ "$(git -C "$T/alice" rev-parse FETCH_HEAD)" = "$(G rev-parse "refs/jobs/$job")" ] &&
     git -C "$T/alice" cat-file -e FETCH_HEAD:stderr.log; echo $?)"
git -C "$T/alice" checkout -q -B work "$fused"
run_to "alice rebases her pushed commit onto the accepted route: the change is already there" 0 \
  git -C "$T/alice" pull -q --rebase origin routes/fast-softmax
check "... her branch is the route's head" "$([ "$(git -C "$T/alice" rev-parse HEAD)" = "$route_tip" ]; echo $?)"

# ---------------------------------------------------------------- 8. a maintainer's push to main
main1=$(remote_ref refs/heads/main)
git -C "$T/alice" fetch -q origin && git -C "$T/alice" checkout -q -B m origin/main &&
  echo "# reviewed" >>"$T/alice/$SOFT/src/softmax.py" && git -C "$T/alice" commit -qam "softmax: a maintainer's note"
run_to "a maintainer's push to main is answered with a submission to main" 0 \
  "$AS" "$MAINT_TOKEN" -C "$T/alice" push origin HEAD:main
check "... queued on main, and main has not moved" \
  "$(grep -q "on main: queued" "$T/err" && [ "$(remote_ref refs/heads/main)" = "$main1" ]; echo $?)"

echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" = 0 ]
