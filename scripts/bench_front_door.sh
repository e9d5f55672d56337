#!/usr/bin/env bash
# The front door under slow clients (docs/PERF.md "Front door"): `kzoo serve`
# on loopback answers wrk's normal traffic on /healthz and a read endpoint
# with 0 slow clients, then beside N connections trickling header bytes,
# then beside N idle keep-alive connections. Prints one table.
#
#   scripts/bench_front_door.sh [BUILD_DIR] [N=1000] [SECONDS=10] [READ_PATH=/api/kernels]
#
# Needs wrk (Debian's, scripts/install-deps.sh) and BUILD_DIR/kzoo,
# BUILD_DIR/tests/kzoo_slow_clients. Everything stays on 127.0.0.1 and stops
# by itself (the slow clients are bounded in count and time).
set -euo pipefail
BUILD=${1:-build}
N=${2:-1000}
SECS=${3:-10}
READ_PATH=${4:-/api/kernels}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KZOO=${KZOO:-$BUILD/kzoo}  # KZOO=other/kzoo measures another build
SLOW=$BUILD/tests/kzoo_slow_clients
WRK_THREADS=${WRK_THREADS:-2}
WRK_CONNS=${WRK_CONNS:-16}
command -v wrk >/dev/null || { echo "wrk is missing: apt-get install wrk (scripts/install-deps.sh)" >&2; exit 2; }
[ -x "$KZOO" ] && [ -x "$SLOW" ] || { echo "build kzoo_cli and kzoo_slow_clients in $BUILD first" >&2; exit 2; }

TMP=$(mktemp -d /tmp/kzoo-frontdoor-bench.XXXXXX)
SERVE_PID=""
cleanup() {
  [ -n "$SERVE_PID" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

# Kept-alive connections are held longer than the run (KEEP_ALIVE_S), so the
# idle phase holds all N for its whole length: the worst case for a server
# that gives each connection a thread. Request heads keep the default
# deadline (10 s): trickling clients are cut off and come back, as an
# attacker's would.
KZOO_KEEP_ALIVE_TIMEOUT_S=${KEEP_ALIVE_S:-$((3 * SECS + 30))} "$KZOO" serve --data "$TMP/data" --catalog "$ROOT/catalog/kernel_data" --listen 127.0.0.1:0 \
  >"$TMP/serve.out" 2>"$TMP/serve.err" &
SERVE_PID=$!
for _ in $(seq 1 200); do
  grep -q "listening on" "$TMP/serve.out" 2>/dev/null && break
  sleep 0.1
done
PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\) .*/\1/p' "$TMP/serve.out")
[ -n "$PORT" ] || { cat "$TMP/serve.err" >&2; exit 2; }
grep "connections" "$TMP/serve.err" >&2 || true
URL=http://127.0.0.1:$PORT

# wrk's figures for one path: p50 p99 max req/s non-2xx+errors.
measure() {
  local out
  out=$(wrk -t"$WRK_THREADS" -c"$WRK_CONNS" -d"${SECS}s" --latency "$URL$1" 2>&1)
  echo "$out" >>"$TMP/wrk.log"
  local p50 p99 max rps bad errs
  p50=$(echo "$out" | awk '$1=="50%"{print $2}')
  p99=$(echo "$out" | awk '$1=="99%"{print $2}')
  max=$(echo "$out" | awk '$1=="Latency"{print $4}')
  rps=$(echo "$out" | awk '$1=="Requests/sec:"{print $2}')
  bad=$(echo "$out" | awk '/Non-2xx/{print $NF}')
  errs=$(echo "$out" | awk '/Socket errors/{gsub(",","");print $4+$6+$8+$10}')
  echo "$p50 $p99 $max $rps ${bad:-0}+${errs:-0}"
}

ROWS=()
run_phase() {  # label
  for path in /healthz "$READ_PATH"; do
    ROWS+=("$1|$path|$(measure "$path")")
  done
}

run_phase "0 slow clients"

# Trickling clients send one header byte each per second; idle ones send one
# request, then sit on the connection until the server closes it
# (keep_alive_timeout_s), and are visited every 5 s, so their requests come
# spread out, as a crowd of idle clients' would, not in one burst.
for mode in trickle idle; do
  interval=1000
  [ "$mode" = idle ] && interval=5000
  "$SLOW" --port "$PORT" --count "$N" --mode "$mode" --seconds $((2 * SECS + 8)) --per-source 50 \
    --interval-ms "$interval" \
    >"$TMP/slow-$mode.json" 2>"$TMP/slow-$mode.err" &
  SLOW_PID=$!
  sleep 4  # all connected, trickling for a while
  open=$(ss -Htn state established "( sport = :$PORT )" | wc -l)
  run_phase "$N $mode ($open open)"
  wait "$SLOW_PID"
  cat "$TMP/slow-$mode.json" >&2
done

curl -s "$URL/metrics" | grep '^kzoo_connections' >&2 || true
echo
echo "front door, $(date -u +%Y-%m-%d), wrk -t$WRK_THREADS -c$WRK_CONNS -d${SECS}s, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| %-28s | %-14s | %9s | %9s | %9s | %9s | %s |\n' "slow clients" path p50 p99 max "req/s" "non-2xx+errors"
printf '|%s|%s|%s|%s|%s|%s|%s|\n' "------------------------------" "----------------" "-----------" "-----------" "-----------" "-----------" "----"
for r in "${ROWS[@]}"; do
  IFS='|' read -r label path figs <<<"$r"
  read -r p50 p99 max rps bad <<<"$figs"
  printf '| %-28s | %-14s | %9s | %9s | %9s | %9s | %s |\n' "$label" "$path" "$p50" "$p99" "$max" "$rps" "$bad"
done
