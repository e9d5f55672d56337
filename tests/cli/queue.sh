#!/usr/bin/env bash
# The queue and the dataset as a user sees them, through the real binary: `kzoo init`,
# `kzoo serve`, submissions waiting (no worker yet), `kzoo queue` (text and --json, through
# $KZOO_SERVER), `kzoo submit` printing its place in line while it waits, hostile queries,
# then one job graded by a CPU worker, its feedback in `kzoo status`, and `kzoo export`.
# Usage: queue.sh KZOO_BINARY SOURCE_DIR
set -uo pipefail
KZOO=${1:?usage: queue.sh KZOO_BINARY SOURCE_DIR}
SRC=${2:?usage: queue.sh KZOO_BINARY SOURCE_DIR}
KZOO=$(cd "$(dirname "$KZOO")" && pwd)/$(basename "$KZOO")
SRC=$(cd "$SRC" && pwd)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
KID=h200/norm/softmax/bf16/softmax_eager
. "$(dirname "${BASH_SOURCE[0]}")/../lib/prerequisite.sh"
[ -d "$SRC/catalog/kernel_data/$KID" ] || require_prerequisite "no $KID in the catalog at $SRC/catalog"
[ -x "$(bwrap_path)" ] || require_prerequisite "bubblewrap is not installed ($(bwrap_path))"

T=$(mktemp -d /tmp/kzoo_cli_queue.XXXXXX)
chmod 755 "$T"  # the sandbox's user must reach the judge's workdir
D="$T/data"
SERVE_PID=
. "$(dirname "${BASH_SOURCE[0]}")/../lib/checks.sh"
cleanup() {
  stop "$SERVE_PID"
  [ "$FAILS" != 0 ] && { echo "-- serve.log"; tail -n 20 "$T/serve.log" 2>/dev/null; }
  rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 2' INT TERM
# json FILE EXPR: EXPR (Python over d, the JSON document in FILE) holds.
json() {
  CHECKS=$((CHECKS + 1))
  if "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>"$T/pyerr"; then
    ok "json: $2"
  else
    fail "json check failed: $2"; head -c 2000 "$1" | sed 's/^/    doc: /'; sed 's/^/    py: /' "$T/pyerr"
  fi
}

PORT=$("$PY" "$(dirname "${BASH_SOURCE[0]}")/../lib/free_ports.py")
export KZOO_SERVER=http://127.0.0.1:$PORT
unset KZOO_DATA KZOO_CONFIG KZOO_LISTEN KZOO_CATALOG

run_to "kzoo init" 0 "$KZOO" init "$D" --catalog "$SRC/catalog/kernel_data"
"$KZOO" user add ann --role member --data "$D" 2>/dev/null
"$KZOO" user add ola --role outsider --data "$D" 2>/dev/null
KZOO_TOKEN=$("$KZOO" token new ann --data "$D" 2>/dev/null); export KZOO_TOKEN
OLA_TOKEN=$("$KZOO" token new ola --data "$D" 2>/dev/null)
"$KZOO" serve --data "$D" --listen "127.0.0.1:$PORT" --catalog "$SRC/catalog/kernel_data" >>"$T/serve.log" 2>&1 &
SERVE_PID=$!
for _ in $(seq 100); do "$KZOO" kernels >/dev/null 2>&1 && break; sleep 0.2; done

# Nothing runs yet: two submissions wait in line, an outsider's waits for a maintainer.
PKG="$SRC/catalog/kernel_data/$KID"
run_to "submit 1 --no-wait" 0 "$KZOO" submit "$PKG" --summary one --no-wait --json
run_to "submit 2 --no-wait (an outsider's: held)" 0 env KZOO_TOKEN="$OLA_TOKEN" "$KZOO" submit "$PKG" --summary held --no-wait --json
# A waiting submit says where it stands; it is cut off here (no worker yet).
timeout 4 "$KZOO" submit "$PKG" --summary three >"$T/out" 2>"$T/wait.err"
grep -q "queued, position 2 (1 ahead" "$T/wait.err" && ok "kzoo submit prints its place in line while it waits" ||
  { fail "kzoo submit did not print its position: $(cat "$T/wait.err")"; }
CHECKS=$((CHECKS + 1))

run_to "kzoo queue --json (KZOO_SERVER, no --server)" 0 "$KZOO" queue --json
cp "$T/out" "$T/q.json"
json "$T/q.json" 'd["counts"] == {"queued": 2, "held": 1, "running": 0}'
json "$T/q.json" '[j["position"] for j in d["jobs"] if not j["held"]] == [1, 2]'
json "$T/q.json" '[j["submitter_id"] for j in d["jobs"] if j["held"]] == ["ola"]'
run_to "kzoo queue" 0 "$KZOO" queue
grep -q "2 queued, 1 held, 0 running" "$T/out" && ok "the text names the counts" || fail "kzoo queue: $(cat "$T/out")"
grep -q "queued #1" "$T/out" && grep -q "held .*a maintainer to release it" "$T/out" && ok "the text shows the line and the hold" ||
  fail "kzoo queue text: $(cat "$T/out")"
CHECKS=$((CHECKS + 2))
run_to "kzoo queue --state held --json" 0 "$KZOO" queue --state held --json
json "$T/out" 'len(d["jobs"]) == 1 and d["jobs"][0]["hold_reason"] == "JobHeldAdmin"'
run_to "kzoo queue --state bogus is a usage error" 2 "$KZOO" queue --state bogus
run_to "kzoo queue --limit 0 is a usage error" 2 "$KZOO" queue --limit 0
curl -s -o "$T/bad.json" -w '%{http_code}' "$KZOO_SERVER/api/jobs?limit=-5" >"$T/code"
[ "$(cat "$T/code")" = 400 ] && ok "GET /api/jobs?limit=-5 is 400" || fail "limit=-5 answered $(cat "$T/code")"
CHECKS=$((CHECKS + 1))
json "$T/bad.json" 'd["error"]["field"] == "limit"'
run_to "kzoo queue against no server names it" 2 "$KZOO" queue --server http://127.0.0.1:9
grep -q "127.0.0.1:9" "$T/err" && ok "the error names the server" || fail "kzoo queue error: $(cat "$T/err")"
CHECKS=$((CHECKS + 1))

# One job graded on the CPU: its feedback, then the dataset.
# (--once exits 0 on an accept, 1 on a rejection: both are a graded job.)
timeout 300 "$KZOO" worker --once --data "$D" --device cpu --catalog "$SRC/catalog" --judge-dir "$SRC/judge" \
  --iterations 20 --timeout 240 >"$T/worker.out" 2>"$T/worker.err"
rc=$?
[ $rc = 0 ] || [ $rc = 1 ] && ok "a CPU worker graded the first job (exit $rc)" || { fail "worker exit $rc"; tail -20 "$T/worker.err"; }
CHECKS=$((CHECKS + 1))
# The catalog's own source resubmitted: graded against itself as the incumbent, so the
# verdict is the A/B's (rejected: not faster); either way it is final and explained.
RUN_TO_TIMEOUT=30 "$KZOO" status 1 --json >"$T/out" 2>"$T/err"
json "$T/out" 'd["state"] in ("accepted", "rejected") and d["queue_position"] is None and d["reasons"] is not None'
json "$T/out" 'all(c["shape"] and c["metric"] and "roofline_pct" in c and "top_kernels" in c for c in d["cases"])'
json "$T/out" 'all(c["top_kernels"] and c["top_kernels"][0]["time_us"] > 0 for c in d["cases"])'
"$KZOO" status 1 >"$T/out" 2>"$T/err"
grep -q "top kernels by device time" "$T/err" && ok "kzoo status shows the top kernels" || fail "kzoo status: $(cat "$T/err")"
CHECKS=$((CHECKS + 1))

run_to "kzoo export -o" 0 "$KZOO" export -o "$T/ds" --data "$D" --catalog "$SRC/catalog" --json
json "$T/out" 'd["tasks"] >= 12 and d["jobs"] == 1 and d["results"] >= 1'
"$PY" - "$T/ds/results.jsonl" "$SRC/schemas/export_result.schema.json" >"$T/ds.check" 2>&1 <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
schema = json.load(open(sys.argv[2]))
assert rows, "no rows"
for r in rows:
    assert set(r) == set(schema["required"]), set(r) ^ set(schema["required"])
    assert r["kernel_id"] == "h200/norm/softmax/bf16/softmax_eager" and r["task"] == "softmax", r
    assert r["verdict"] in ("accepted", "rejected") and (r["commit"] is not None) == (r["verdict"] == "accepted"), r
    assert r["software"]["torch"] and r["device_class"], r
    assert r["params"]["shape"] and r["metric"] and r["value"] > 0, r
print("rows", len(rows))
EOF
check "results.jsonl: one record per case, every field of the schema" $?
[ "$FAILS" = 0 ] || cat "$T/ds.check"

echo "$CHECKS checks, $FAILS failed"
[ "$FAILS" = 0 ]
