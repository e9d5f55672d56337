#!/usr/bin/env bash
# The board's rules changed by git (issue 23, last item): the real git client
# against a real `kzoo serve` on loopback, no worker (nothing here is graded).
#   1. a member's push of the same change is refused wherever it goes (her
#      route, main, a pull request), and so is a maintainer's agent's: only a
#      maintainer's own token changes project files, on main;
#   2. a maintainer's invalid rules (not JSON, a partition the checks cannot
#      run on), a mixed push (rules and a kernel's src/), a symlink among the
#      project files: refused naming the file, the rule and the fix; main stays;
#   3. a maintainer's valid change (a partition's default time) moves main to
#      one commit holding exactly the pushed tree, audited, answered in the
#      push's output -- and the rules in force are still the old ones;
#   4. moving `checks` (kzoo approve) puts the new rules in force;
#   5. a push built on a main that has moved since is refused (rebase first).
# Usage: git_rules.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=${1:?usage: git_rules.sh KZOO_BINARY SOURCE_DIR}
SRC=${2:?usage: git_rules.sh KZOO_BINARY SOURCE_DIR}
KZOO=$(cd "$(dirname "$KZOO")" && pwd)/$(basename "$KZOO")
SRC=$(cd "$SRC" && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
SOFT=h200/norm/softmax/bf16/softmax_eager

T=$(mktemp -d /tmp/kzoo_cli_git_rules.XXXXXX)
D="$T/data"
SERVE_PID=
RUN_TO_TIMEOUT=120
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"
cleanup() {
  stop "$SERVE_PID"
  [ "$FAILS" != 0 ] && { echo "-- serve.log (tail)"; tail -n 30 "$T/serve.log" 2>/dev/null; }
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 2' INT TERM
G() { git --git-dir "$D/kernel_data.git" "$@"; }
. "$(dirname "${BASH_SOURCE[0]}")/../lib/git_client.sh"

mkdir -p "$T/kernel_data/$(dirname "$SOFT")"
cp "$SRC/catalog/kernel_data/.kernel_data" "$T/kernel_data/"
cp -r "$SRC/catalog/kernel_data/$SOFT" "$T/kernel_data/$SOFT"
run_to "kzoo init" 0 "$KZOO" init "$D" --catalog "$T/kernel_data" --board-device-class cpu
main0=$(G rev-parse main)
rules0=$(G rev-parse 'checks^{commit}')
for u in maint:maintainer alice:member; do
  "$KZOO" user add "${u%%:*}" --role "${u##*:}" --data "$D" >/dev/null 2>&1 || fail "user add $u"
done
MAINT_TOKEN=$("$KZOO" token new maint --data "$D" 2>/dev/null)
BOT_TOKEN=$("$KZOO" token new maint --agent bot --data "$D" 2>/dev/null)  # the maintainer's agent
ALICE_TOKEN=$("$KZOO" token new alice --data "$D" 2>/dev/null)
"$KZOO" serve --data "$D" --listen "127.0.0.1:$PORT" >"$T/serve.log" 2>&1 & SERVE_PID=$!
for _ in $(seq 100); do curl -fsS "$KZOO_SERVER/healthz" >/dev/null 2>&1 && break; sleep 0.2; done

# in_force WANT-DEFAULT-TIME WANT-RULES-COMMIT: the board the server reads now.
in_force() {
  "$KZOO" board --json >"$T/board.json" 2>/dev/null &&
    [ "$(jget "$T/board.json" 'd["partitions"][0]["default_time"]')" = "$1" ] &&
    [ "$(jget "$T/board.json" 'd["rules_commit"]')" = "$2" ]
}
LONGER='b["partitions"][0]["default_time"] = "00:20:00"'

run_to "the maintainer clones" 0 "$AS" "$MAINT_TOKEN" clone -q "$URL" "$T/m"
run_to "the maintainer clones again (a second checkout, built on main as it is now)" 0 \
  "$AS" "$MAINT_TOKEN" clone -q "$URL" "$T/m2"
run_to "alice clones" 0 "$AS" "$ALICE_TOKEN" clone -q "$URL" "$T/a"
check "the rules in force: scienceslack.json at checks ($rules0), default time 00:10:00" \
  "$(in_force 00:10:00 "$rules0"; echo $?)"

# ---------------------------------------------------------------- 1. only a maintainer's own token
rules "$T/a" "$LONGER" "rules: a longer default time"
run_to "alice pushes the rules change to her route: refused" 1 "$AS" "$ALICE_TOKEN" -C "$T/a" push origin HEAD:routes/alice-rules
check "... git.outside-package, naming the file and who may change it" \
  "$(grep -q "scienceslack.json: git.outside-package: " "$T/err" &&
     grep -q "only a maintainer's own token changes, by a push to main" "$T/err" &&
     grep -q "\[remote rejected\] HEAD -> routes/alice-rules" "$T/err"; echo $?)"
run_to "alice pushes it to main: refused (main is the maintainers')" 1 "$AS" "$ALICE_TOKEN" -C "$T/a" push origin HEAD:main
check "... told to open a pull request" "$(grep -q "refs/pulls/main/" "$T/err"; echo $?)"
run_to "alice pushes it as a pull request to main: refused" 1 "$AS" "$ALICE_TOKEN" -C "$T/a" push origin HEAD:refs/pulls/main/rules
check "... git.outside-package" "$(grep -q "scienceslack.json: git.outside-package: " "$T/err"; echo $?)"
(cd "$T/a" && git checkout -q -f -B work origin/main && echo '# mine' >>"$SOFT/.kernel_package/benchmark.py" &&
 echo 'Be quick.' >>AGENTS.md && git commit -qam "harness and AGENTS.md") || fail "alice's harness edit"
run_to "alice pushes a harness and AGENTS.md change to her route: refused" 1 \
  "$AS" "$ALICE_TOKEN" -C "$T/a" push origin HEAD:routes/alice-rules
check "... git.outside-src for the harness, git.outside-package for AGENTS.md" \
  "$(grep -q "$SOFT/.kernel_package/benchmark.py: git.outside-src: .*only a maintainer's own token" "$T/err" &&
     grep -q "AGENTS.md: git.outside-package: " "$T/err"; echo $?)"
rules "$T/m" "$LONGER" "rules: a longer default time"
run_to "the maintainer's agent pushes the rules change to main: refused" 1 "$AS" "$BOT_TOKEN" -C "$T/m" push origin HEAD:main
check "... git.outside-package: an agent never changes the rules" \
  "$(grep -q "scienceslack.json: git.outside-package: .*only a maintainer's own token" "$T/err"; echo $?)"
check "nothing moved: main, checks" \
  "$([ "$(remote_ref refs/heads/main)" = "$main0" ] && [ "$(G rev-parse 'checks^{commit}')" = "$rules0" ] &&
     [ -z "$(remote_ref refs/heads/routes/alice-rules)" ]; echo $?)"

# ---------------------------------------------------------------- 2. invalid project changes
(cd "$T/m" && git checkout -q -f -B bad origin/main && echo '{"schema_version": "1",' >scienceslack.json &&
 git commit -qam "rules: broken") || fail "broken rules commit"
run_to "the maintainer pushes rules that are not JSON: refused" 1 "$AS" "$MAINT_TOKEN" -C "$T/m" push origin HEAD:main
check "... naming the file, the rule (board.rules) and the fix" \
  "$(grep -q "scienceslack.json: board.rules: " "$T/err" && grep -q "push again" "$T/err" &&
     grep -q "\[remote rejected\] HEAD -> main (1 rule broken" "$T/err"; echo $?)"
rules "$T/m" 'b["partitions"][0]["default_time"] = "02:00:00"' "rules: a default over the limit"
run_to "the maintainer pushes a default time over the partition's limit: refused" 1 \
  "$AS" "$MAINT_TOKEN" -C "$T/m" push origin HEAD:main
check "... board.partition, default_time over time_limit" \
  "$(grep -q "board.partition" "$T/err" && grep -q "over time_limit" "$T/err"; echo $?)"
rules "$T/m" 'b["version"] = "two"' "rules: a version that is no number"
run_to "the maintainer pushes rules breaking the schema: refused" 1 "$AS" "$MAINT_TOKEN" -C "$T/m" push origin HEAD:main
check "... the schema rule named" "$(grep -q "scienceslack.json: board.rules: .*schemas/scienceslack.schema.json" "$T/err"; echo $?)"
rules "$T/m" "$LONGER" "rules and a kernel in one push"
(cd "$T/m" && echo '# faster' >>"$SOFT/src/softmax.py" && git commit -qam "and the kernel") || fail "mixed commit"
run_to "the maintainer pushes rules and a kernel's src/ together: refused" 1 "$AS" "$MAINT_TOKEN" -C "$T/m" push origin HEAD:main
check "... git.mixed-push, told to push them apart" \
  "$(grep -q "scienceslack.json: git.mixed-push: .*push the project files first" "$T/err"; echo $?)"
(cd "$T/m" && git checkout -q -f -B bad origin/main && ln -s /etc/passwd NOTES.md && echo '* filter=x' >.gitattributes &&
 git add -A && git commit -qm "a link and attributes") || fail "hostile commit"
run_to "the maintainer pushes a symlink and a .gitattributes among the project files: refused" 1 \
  "$AS" "$MAINT_TOKEN" -C "$T/m" push origin HEAD:main
check "... the tree rules still hold (git.symlink, git.attributes)" \
  "$(grep -q "NOTES.md: git.symlink: " "$T/err" && grep -q ".gitattributes: git.attributes: " "$T/err"; echo $?)"
printf 'schema_version: 1\nkernel_id: %s\ncases: []\n' "$SOFT" >"$T/forged.yaml"
(cd "$T/m" && git checkout -q -f -B bad origin/main && cp "$T/forged.yaml" "$SOFT/.kernel_package/bench_result.yaml" &&
 git commit -qam "better numbers") || fail "forged commit"
run_to "the maintainer pushes a package's bench_result.yaml: refused (accepts alone write it)" 1 \
  "$AS" "$MAINT_TOKEN" -C "$T/m" push origin HEAD:main
check "... git.outside-src, server-owned" "$(grep -q "bench_result.yaml: git.outside-src: .*a maintainer's included" "$T/err"; echo $?)"
check "main has not moved, and no submission was recorded" \
  "$([ "$(remote_ref refs/heads/main)" = "$main0" ] &&
     [ "$(curl -s -o /dev/null -w '%{http_code}' "$KZOO_SERVER/api/submissions/1")" = 404 ]; echo $?)"

# ---------------------------------------------------------------- 3. the change lands; the old rules stay in force
rules "$T/m" "$LONGER" "rules: a longer default time"
pushed=$(git -C "$T/m" rev-parse HEAD)
run_to "the maintainer pushes the rules change to main: answered ok" 0 "$AS" "$MAINT_TOKEN" -C "$T/m" push origin HEAD:main
main1=$(remote_ref refs/heads/main)
check "... main moved to one commit on the old head holding exactly the pushed tree" \
  "$([ -n "$main1" ] && [ "$main1" != "$main0" ] && [ "$(G rev-parse "$main1^")" = "$main0" ] &&
     [ "$(G rev-parse "$main1^{tree}")" = "$(git -C "$T/m" rev-parse "$pushed^{tree}")" ]; echo $?)"
check "... authored by the maintainer, with the pushed commit in its trailers" \
  "$(G log -1 --format='%an%n%B' "$main1" | grep -qx maint && G log -1 --format=%B "$main1" |
     grep -qx "Kzoo-Pushed-Commit: $pushed"; echo $?)"
check "... the push's output says so, and that the rules take effect when checks moves" \
  "$(grep -q "remote: kzoo: main moved to ${main1:0:12}" "$T/err" && grep -q "kzoo approve $main1" "$T/err" &&
     grep -q "remote: kzoo-project: commit=$main1 from=$main0 pushed=$pushed files=1 rules_changed=true" "$T/err"; echo $?)"
run_to "kzoo audit lists it" 0 "$KZOO" audit --data "$D" --json
check "... git.project-files by maint, from the old head to the new" \
  "$(jget "$T/out" '[(e["who"], e["detail"]["from"], e["detail"]["to"], e["detail"]["files"]) for e in d["entries"] if e["action"] == "git.project-files"] == [("maint", "'"$main0"'", "'"$main1"'", ["scienceslack.json"])]' | grep -q True; echo $?)"
check "the rules in force are still the old ones: checks at $rules0, default time 00:10:00" \
  "$([ "$(G rev-parse 'checks^{commit}')" = "$rules0" ] && in_force 00:10:00 "$rules0"; echo $?)"

# ---------------------------------------------------------------- 4. moving checks puts them in force
run_to "a member cannot approve them" 1 env KZOO_TOKEN="$ALICE_TOKEN" "$KZOO" approve "$main1"
run_to "the maintainer moves checks to main (kzoo approve)" 0 env KZOO_TOKEN="$MAINT_TOKEN" "$KZOO" approve "$main1"
check "the new rules are in force: default time 00:20:00 at $main1" "$(in_force 00:20:00 "$main1"; echo $?)"

# ---------------------------------------------------------------- 5. built on an old main
(cd "$T/m2" && echo 'Be kind.' >>AGENTS.md && git commit -qam "AGENTS.md: be kind") || fail "m2 commit"
run_to "a push of AGENTS.md built on the old main: git itself refuses it (fetch first)" 1 \
  "$AS" "$MAINT_TOKEN" -C "$T/m2" push origin HEAD:main
run_to "forced, it reaches the server, which refuses it too" 1 "$AS" "$MAINT_TOKEN" -C "$T/m2" push origin +HEAD:main
check "... told to rebase on main's head; main stays" "$(grep -q "main has moved since the commit you built on" "$T/err" &&
  grep -q "git pull --rebase origin main" "$T/err" && [ "$(remote_ref refs/heads/main)" = "$main1" ]; echo $?)"
run_to "rebased, it lands" 0 bash -c "cd '$T/m2' && '$AS' '$MAINT_TOKEN' pull -q --rebase origin main && '$AS' '$MAINT_TOKEN' push origin HEAD:main"
check "... AGENTS.md on main, rules_changed=false, checks untouched" \
  "$(G show main:AGENTS.md | grep -qx 'Be kind.' && grep -q "rules_changed=false" "$T/err" &&
     [ "$(G rev-parse 'checks^{commit}')" = "$main1" ]; echo $?)"

echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" = 0 ]
