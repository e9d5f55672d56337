#!/usr/bin/env bash
# Hostile pushes (issue 23): the real git client pushes, to a real `kzoo
# serve`, trees an upload could never carry. Each is refused before anything
# is recorded, with a message that names the file, the rule and the fix; at
# the end no ref has moved and no submission exists.
#   symlinks, submodules (gitlinks and .gitmodules), .gitattributes filters,
#   case collisions, deep trees, names outside the package alphabet, a file
#   over the per-file cap, a pack over the cap (in-band, git's own message),
#   a request over the HTTP cap (413), changes outside src/ and outside every
#   package, refs kzoo does not take (refs/jobs, tags).
# The server runs with max_upload_bytes = 2 MiB, so the packs stay small.
# Usage: git_hostile.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=${1:?usage: git_hostile.sh KZOO_BINARY SOURCE_DIR}
SRC=${2:?usage: git_hostile.sh KZOO_BINARY SOURCE_DIR}
KZOO=$(cd "$(dirname "$KZOO")" && pwd)/$(basename "$KZOO")
SRC=$(cd "$SRC" && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
SOFT=h200/norm/softmax/bf16/softmax_eager

T=$(mktemp -d /tmp/kzoo_cli_git_hostile.XXXXXX)
D="$T/data"
SERVE_PID=
SERVE2_PID=
RUN_TO_TIMEOUT=120
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"
cleanup() {
  stop "$SERVE_PID"
  stop "$SERVE2_PID"
  [ "$FAILS" != 0 ] && { echo "-- serve.log (tail)"; tail -n 30 "$T/serve.log" 2>/dev/null; }
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 2' INT TERM
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 HOME="$T"
export GIT_AUTHOR_NAME=mallory GIT_AUTHOR_EMAIL=m@example.org GIT_COMMITTER_NAME=mallory GIT_COMMITTER_EMAIL=m@example.org
PORT=$("$PY" "$(dirname "${BASH_SOURCE[0]}")/../lib/free_ports.py")
export KZOO_SERVER=http://127.0.0.1:$PORT
URL=$KZOO_SERVER/git/kernel_data
unset KZOO_DATA KZOO_CONFIG KZOO_LISTEN KZOO_CATALOG KZOO_TOKEN

mkdir -p "$T/kernel_data/$(dirname "$SOFT")"
cp "$SRC/catalog/kernel_data/.kernel_data" "$T/kernel_data/"
cp -r "$SRC/catalog/kernel_data/$SOFT" "$T/kernel_data/$SOFT"
run_to "kzoo init" 0 "$KZOO" init "$D" --catalog "$T/kernel_data"
"$KZOO" user add mallory --role member --data "$D" >/dev/null 2>&1 || fail "user add"
TOKEN=$("$KZOO" token new mallory --data "$D" 2>/dev/null)
KZOO_MAX_UPLOAD_BYTES=2097152 "$KZOO" serve --data "$D" --listen "127.0.0.1:$PORT" >"$T/serve.log" 2>&1 & SERVE_PID=$!
for _ in $(seq 100); do curl -fsS "$KZOO_SERVER/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
git -c credential.helper= clone -q "$URL" "$T/c" || fail "clone"
cd "$T/c" || exit 2
git config credential.helper "!f() { test \"\$1\" = get && echo username=x && echo password=$TOKEN; }; f"
refs_before=$(git ls-remote "$URL" | sort)
S=$SOFT/src

# hostile NAME WANT-EXIT SETUP-COMMANDS PATTERN...: a commit off origin/main made by
# SETUP (a shell snippet run in the clone), pushed to routes/hostile; every
# PATTERN must appear in what git printed.
hostile() {
  local name=$1 want=$2 setup=$3; shift 3
  git checkout -q -f -B work origin/main && git clean -qfdx
  if ! bash -c "$setup" >/dev/null 2>&1; then fail "$name: setup"; return; fi
  git add -A . 2>/dev/null; git commit -q -m "$name" 2>/dev/null
  run_to "$name: refused" "$want" git push origin HEAD:routes/hostile
  local p all=0
  for p in "$@"; do grep -q -- "$p" "$T/err" || { all=1; echo "    missing: $p"; }; done
  check "$name: the message names the file, the rule and the fix" $all
}

hostile "a symlink" 1 "ln -s /etc/passwd $S/passwd.py" \
  "$S/passwd.py: git.symlink: " "git rm --cached $S/passwd.py" "\[remote rejected\] HEAD -> routes/hostile"
hostile "a submodule (gitlink)" 1 \
  "mkdir $S/vendor && git update-index --add --cacheinfo 160000,\$(git rev-parse HEAD),$S/vendor" \
  "$S/vendor: git.submodule: " "vendor the sources you need"
hostile "a .gitmodules file" 1 "printf '[submodule \"v\"]\n\tpath = v\n\turl = https://example.org/v.git\n' >$S/.gitmodules" \
  "$S/.gitmodules: git.submodule: "
hostile "a .gitattributes filter" 1 "echo '*.py filter=evil' >$S/.gitattributes" \
  "$S/.gitattributes: git.attributes: " "filter" "git rm --cached $S/.gitattributes"
hostile "a case collision" 1 "cp $S/softmax.py $S/Softmax.py" \
  "git.case-collision: " "Softmax.py" "differ only in letter case" "rename or remove one"
hostile "a tree 40 directories deep" 1 "mkdir -p $S/\$(printf 'd/%.0s' \$(seq 40)) && echo x >$S/\$(printf 'd/%.0s' \$(seq 40))f.py" \
  "git.too-deep: " "flatten the tree"
hostile "a name outside the package alphabet" 1 "echo 'x = 1' >'$S/my kernel.py'" \
  "git.bad-name: " "rename it"
hostile "a 3 MiB file (small pack)" 1 "$PY -c 'print(\"x = 1\" * 600000)' >$S/big.py" \
  "$S/big.py: git.file-too-large: " "over the cap of 2097152 bytes per file"
hostile "a pack over the cap (in-band)" 1 "head -c 2500000 /dev/urandom >$S/noise.py" \
  "pack exceeds maximum allowed size" "unpacker error"
git checkout -q -f -B work origin/main && head -c 5000000 /dev/urandom >"$S/noise.py" && git add -A && git commit -qm big
timeout 120 git push origin HEAD:routes/hostile >"$T/out" 2>"$T/err"; rc=$?
check "a push over the HTTP cap is cut off before git-receive-pack sees it: git reports HTTP 413" \
  "$([ $rc != 0 ] && grep -q "413" "$T/err"; echo $?)"
hostile "a change to the harness" 1 "echo '# mine' >>$SOFT/.kernel_package/benchmark.py" \
  "$SOFT/.kernel_package/benchmark.py: git.outside-src: " "trusted" "only a maintainer's own token changes, by a push to main"
hostile "a change outside every package" 1 "echo '# mine' >>AGENTS.md" \
  "AGENTS.md: git.outside-package: " "take it out of this push" "only a maintainer's own token changes, by a push to main"
hostile "the board's rules" 1 "sed -i 's/00:10:00/00:20:00/' scienceslack.json" \
  "scienceslack.json: git.outside-package: " "only a maintainer's own token changes, by a push to main"
hostile "several at once: each one listed" 1 "ln -s x $S/a.py && echo '* filter=x' >$S/.gitattributes" \
  "2 rules broken" "$S/a.py: git.symlink" "$S/.gitattributes: git.attributes"
git checkout -q -f -B work origin/main && echo '# ok' >>"$S/softmax.py" && git commit -qam fine
run_to "a push to refs/jobs is refused" 1 git push origin HEAD:refs/jobs/1
check "... kzoo takes main, routes and refs/pulls only" "$(grep -q "routes/<name> and refs/pulls/<route>/<topic> only" "$T/err"; echo $?)"
run_to "a pull request to a route nobody started is refused" 1 git push origin HEAD:refs/pulls/nobody/x
check "... told how to start it" "$(grep -q "does not exist yet: push to routes/nobody" "$T/err"; echo $?)"
run_to "a bad route name is refused" 1 git push origin HEAD:routes/Bad_Name
git checkout -q -f -B work origin/main
run_to "pushing main's own head is refused: nothing new" 1 git push origin HEAD:routes/hostile
check "... said so" "$(grep -q "nothing new" "$T/err"; echo $?)"

check "no ref moved" "$([ "$(git ls-remote "$URL" | sort)" = "$refs_before" ]; echo $?)"
curl -s -o /dev/null -w '%{http_code}' "$KZOO_SERVER/api/submissions/1" >"$T/code"
check "no submission was recorded (GET /api/submissions/1 is 404)" "$([ "$(cat "$T/code")" = 404 ]; echo $?)"
run_to "the server is still healthy" 0 curl -fsS "$KZOO_SERVER/healthz"

# ---------------------------------------------------------------- reads behind a token
# A second service whose reads need a token (require_token_for_reads): git
# is asked for credentials on clone too, and gets in with the token.
cd "$T" || exit 2
PORT2=$("$PY" "$(dirname "${BASH_SOURCE[0]}")/../lib/free_ports.py")
URL2=http://127.0.0.1:$PORT2/git/kernel_data
"$KZOO" init "$T/data2" --catalog "$T/kernel_data" >/dev/null 2>&1 || fail "init data2"
"$KZOO" user add reader --role member --data "$T/data2" >/dev/null 2>&1 || fail "user add reader"
TOKEN2=$("$KZOO" token new reader --data "$T/data2" 2>/dev/null)
echo '{"require_token_for_reads": true}' >"$T/private.json"
"$KZOO" serve --data "$T/data2" --listen "127.0.0.1:$PORT2" --config "$T/private.json" >"$T/serve2.log" 2>&1 & SERVE2_PID=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT2/healthz" && break; sleep 0.2; done
run_to "require_token_for_reads: an anonymous clone is refused" 128 git -c credential.helper= clone -q "$URL2" "$T/p1"
curl -s -o /dev/null -D "$T/h2" "$URL2/info/refs?service=git-upload-pack"
check "... 401 with WWW-Authenticate: Basic" "$(grep -q '^HTTP/1.1 401' "$T/h2" && grep -qi '^WWW-Authenticate: Basic' "$T/h2"; echo $?)"
run_to "... with the token as the password it clones" 0 \
  git -c credential.helper= -c "credential.helper=!f() { test \"\$1\" = get && echo username=x && echo password=$TOKEN2; }; f" \
  clone -q "$URL2" "$T/p2"

echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" = 0 ]
