# What the suites driving the real git client share (cli/git.sh,
# cli/git_rules.sh): git with no user or system configuration and no prompts,
# only what each command says; a free loopback port for `kzoo serve` ($PORT,
# $KZOO_SERVER, and $URL, its repository); $AS TOKEN ARGS..., git answering
# TOKEN as the password (any user name), as a contributor's credential helper
# would -- a script, not a function, so that run_to (timeout) can run it; and
# remote_ref REF, the server's commit for REF; and rules, a maintainer's change of
# scienceslack.json. Source it once $T and $PY are set.
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 HOME="$T"
export GIT_AUTHOR_NAME=someone GIT_AUTHOR_EMAIL=someone@example.org GIT_COMMITTER_NAME=someone GIT_COMMITTER_EMAIL=someone@example.org
PORT=$("$PY" "$(dirname "${BASH_SOURCE[0]}")/free_ports.py")
export KZOO_SERVER=http://127.0.0.1:$PORT
URL=$KZOO_SERVER/git/kernel_data
unset KZOO_DATA KZOO_CONFIG KZOO_LISTEN KZOO_CATALOG KZOO_DEVICE_CLASS KZOO_TOKEN
AS=$T/git-as
cat >"$AS" <<'END'
#!/usr/bin/env bash
tok=$1; shift
exec git -c credential.helper= -c "credential.helper=!f() { test \"\$1\" = get && echo username=x && echo password=$tok; }; f" "$@"
END
chmod +x "$AS"
remote_ref() { git ls-remote "$URL" "$1" 2>/dev/null | cut -f1; }
# rules DIR PYTHON MESSAGE: a commit off origin/main whose scienceslack.json is
# changed by PYTHON (over d, the document, and b, its benchmark block).
rules() {
  (cd "$1" && git fetch -q origin && git checkout -q -f -B work origin/main && git clean -qfdx &&
   "$PY" - "$2" <<'EOF' && git commit -qam "$3"
import json, sys
d = json.load(open("scienceslack.json")); b = d["benchmark"]
exec(sys.argv[1])
open("scienceslack.json", "w").write(json.dumps(d, indent=2) + "\n")
EOF
  )
}
