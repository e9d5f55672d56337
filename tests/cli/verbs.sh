#!/usr/bin/env bash
# Every verb of the CLI, walked through `--help`: each one speaks JSON (--json), and each one with a
# server form reaches the server $KZOO_SERVER names when it is set (a client a script points at a
# server once, not flag by flag). The verbs are read from the binary's own help, so a verb added
# without --json fails here.
# Usage: verbs.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=${1:?kzoo binary}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"

# The subcommands CLI11 lists under "Subcommands:" in a help text.
subcommands() { awk '/^Subcommands:/ {on = 1; next} on && /^$/ {on = 0} on && /^  [a-z]/ {print $1}'; }

verbs=()
for top in $("$KZOO" --help | subcommands); do
  nested=$("$KZOO" "$top" --help | subcommands)
  if [ -n "$nested" ]; then
    for v in $nested; do verbs+=("$top $v"); done
  else
    verbs+=("$top")
  fi
done
check "the help lists the verbs (${#verbs[@]})" "$([ ${#verbs[@]} -ge 30 ] && echo 0 || echo 1)"

with_server=()
for v in "${verbs[@]}"; do
  # shellcheck disable=SC2086
  help=$("$KZOO" $v --help 2>&1)
  if grep -q -- "--json" <<<"$help"; then ok "kzoo $v --json"; else fail "kzoo $v has no --json"; fi
  CHECKS=$((CHECKS + 1))
  if grep -q -- "--server" <<<"$help"; then
    with_server+=("$v")
    if grep -q "KZOO_SERVER" <<<"$help"; then ok "kzoo $v --server defaults to \$KZOO_SERVER"
    else fail "kzoo $v has a server form that ignores \$KZOO_SERVER"; fi
    CHECKS=$((CHECKS + 1))
  fi
done

# Behaviour, not only help text: with KZOO_SERVER (and a token) set and no --data, the verbs that can
# work on a data directory go to the server instead (here nothing listens: the error names it).
dead=http://127.0.0.1:9
for cmd in "release 1" "jobs --held" "audit"; do
  # shellcheck disable=SC2086
  run_to "KZOO_SERVER reaches kzoo $cmd" 2 env -u KZOO_DATA KZOO_SERVER=$dead KZOO_TOKEN=kzoo_x "$KZOO" $cmd
  if grep -q "not a kzoo data directory" "$T/err"; then fail "kzoo $cmd looked for a data directory"; fi
  if grep -q "127.0.0.1:9" "$T/err"; then ok "kzoo $cmd names the server it tried"; else fail "kzoo $cmd: $(cat "$T/err")"; fi
  CHECKS=$((CHECKS + 2))
  # An explicit --data still wins over the environment.
  # shellcheck disable=SC2086
  run_to "--data beats KZOO_SERVER for kzoo $cmd" 2 env KZOO_SERVER=$dead "$KZOO" $cmd --data "$T/nowhere"
  grep -q "not a kzoo data directory" "$T/err" && ok "kzoo $cmd --data used the data directory" ||
    fail "kzoo $cmd --data: $(cat "$T/err")"
  CHECKS=$((CHECKS + 1))
done
run_to "KZOO_SERVER reaches kzoo worker" 2 env -u KZOO_DATA KZOO_SERVER=$dead KZOO_TOKEN=kzoo_x "$KZOO" worker --once --device cpu
grep -q "not a kzoo data directory" "$T/err" && fail "kzoo worker looked for a data directory" || ok "kzoo worker went to the server"
CHECKS=$((CHECKS + 1))

# --json is one JSON document on stdout, also for verbs that answer without a server.
run_to "kzoo version --json" 0 "$KZOO" version --json
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["kzoo"]' "$T/out" && ok "version's JSON" || fail "version's JSON"
run_to "kzoo worker --json: an error is a JSON line too" 2 env -u KZOO_SERVER "$KZOO" worker --once --json --data "$T/nowhere"
/usr/bin/python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).readline()); assert d["event"] == "error" and d["error"]' "$T/out" &&
  ok "worker's error event" || fail "worker's error event: $(cat "$T/out")"
CHECKS=$((CHECKS + 2))

# kzoo worker --gpus: nvidia-smi indices, each once, with --device cuda; refused before anything opens.
for bad in "0,0|named twice" "x|not a GPU index" ",|not a GPU index" "0,1|needs --device cuda"; do
  arg=${bad%%|*} says=${bad#*|}
  dev=cuda; [ "$says" = "needs --device cuda" ] && dev=cpu
  run_to "kzoo worker --gpus $arg --device $dev is refused" 2 env -u KZOO_SERVER "$KZOO" worker --gpus "$arg" --device $dev --data "$T/nowhere"
  grep -q -- "$says" "$T/err" && ok "... saying \"$says\"" || fail "kzoo worker --gpus $arg: $(cat "$T/err")"
  CHECKS=$((CHECKS + 1))
done
run_to "kzoo worker --gpus 0,1 --once is refused" 2 env -u KZOO_SERVER "$KZOO" worker --gpus 0,1 --device cuda --once --data "$T/nowhere"
grep -q "one job per GPU" "$T/err" && ok "... saying why" || fail "kzoo worker --gpus 0,1 --once: $(cat "$T/err")"
CHECKS=$((CHECKS + 1))

# --cpu-pinning numa where the driver lists no GPU is an error naming what it could not read; a
# mode it does not know is a usage error naming the three.
if [ ! -d /proc/driver/nvidia/gpus ]; then
  run_to "kzoo worker --cpu-pinning numa without the driver's GPU list is refused" 2 env -u KZOO_SERVER "$KZOO" worker --device cuda --cpu-pinning numa --once --data "$T/nowhere"
  grep -q -- "--cpu-pinning numa: /proc/driver/nvidia/gpus does not exist" "$T/err" && ok "... saying why" || fail "kzoo worker --cpu-pinning numa: $(cat "$T/err")"
  CHECKS=$((CHECKS + 1))
fi
run_to "kzoo worker --cpu-pinning sometimes is refused" 2 env -u KZOO_SERVER "$KZOO" worker --device cuda --cpu-pinning sometimes --once --data "$T/nowhere"
grep -q "auto, numa, none\|{auto,numa,none}" "$T/err" && ok "... naming the modes" || fail "kzoo worker --cpu-pinning sometimes: $(cat "$T/err")"
CHECKS=$((CHECKS + 1))

echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" = 0 ]
