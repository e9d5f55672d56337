#!/usr/bin/env bash
# Claims per second through PostgreSQL 15 (docs/PERF.md, docs/SCALE.md
# "Sizing"): starts a private server (tests/lib/postgres.sh; fsync as
# KZOO_PG_FSYNC says, default off like the tests'), runs kzoo_store_bench's
# PostgreSQL benchmarks against it, stops it.
#
#   KZOO_PG_FSYNC=on scripts/bench_pg_claims.sh [BUILD=build] [benchmark flags...]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}; shift || true
. "$here/tests/lib/postgres.sh"
why=$(pg_unavailable)
[ -z "$why" ] || { echo "SKIP: $why"; exit 77; }
dir=$(mktemp -d /tmp/kzoo-pg-bench-XXXXXX)
chmod 711 "$dir"
trap 'pg_stop "$dir/pg"; rmdir "$dir" 2>/dev/null || true' EXIT
url=$(pg_start "$dir/pg")
echo "PostgreSQL 15, fsync=${KZOO_PG_FSYNC:-off}, $url"
KZOO_BENCH_PG_URL=$url "$build/kzoo_store_bench" --benchmark_filter='BM_Pg' "$@"
