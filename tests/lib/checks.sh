# The checks the CLI suites share: counters, one line per check, run_to, stop.
# Source it once $T (the suite's scratch directory) is set. RUN_TO_TIMEOUT
# (seconds, default 300) bounds each command run_to runs.
FAILS=0
CHECKS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok   $*"; }

# check NAME CONDITION-EXIT-CODE
check() {
  CHECKS=$((CHECKS + 1))
  if [ "$2" = 0 ]; then ok "$1"; else fail "$1"; fi
}

# run_to NAME EXPECTED_EXIT CMD...: stdout in $T/out, stderr in $T/err.
run_to() {
  local name=$1 want=$2; shift 2
  CHECKS=$((CHECKS + 1))
  timeout "${RUN_TO_TIMEOUT:-300}" "$@" >"$T/out" 2>"$T/err"
  local got=$?
  if [ "$got" = "$want" ]; then
    ok "$name (exit $got)"
  else
    fail "$name: exit $got, expected $want: $*"
    sed 's/^/    out: /' "$T/out" | head -30
    sed 's/^/    err: /' "$T/err" | tail -30
  fi
}

# stop PID: SIGTERM, then SIGKILL if it lingers past 5 s.
stop() {
  local p=$1
  [ -n "$p" ] || return 0
  kill "$p" 2>/dev/null || return 0
  for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$p" 2>/dev/null
  wait "$p" 2>/dev/null
}

# jget FILE EXPR: prints EXPR (Python over d, the JSON document in FILE).
jget() { "${PY:-python3}" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

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
