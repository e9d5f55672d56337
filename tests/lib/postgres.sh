#!/usr/bin/env bash
# A private PostgreSQL 15 for the tests (LIBNOTES): initdb and pg_ctl from
# Debian's postgresql-15, listening on a unix socket in DIR only (no TCP), as
# the `postgres` user when run as root (initdb refuses root), as the caller
# otherwise. fsync is off (a test database a crash loses is recreated);
# KZOO_PG_FSYNC=on starts a durable one (scripts/bench_pg_claims.sh).
#
#   postgres.sh start DIR   creates DIR/data, starts the server, prints the
#                           admin URL (database postgres, user kzoo) on stdout
#   postgres.sh stop DIR    stops it (fast shutdown) and removes DIR
#   postgres.sh why         prints why PostgreSQL cannot run here; nothing if it can
#   postgres.sh fixture-start DIR   for ctest (CMakeLists.txt): a stale server
#                           in DIR is stopped, a fresh one started, its URL
#                           written to DIR/url; where PostgreSQL cannot run,
#                           exit 77 (skipped), or 1 under CI=true
#
# Sourced, it defines pg_start, pg_stop and pg_unavailable.
PG_BIN=${KZOO_PG_BIN:-/usr/lib/postgresql/15/bin}
PG_PORT=5432

pg_unavailable() {
  if [ ! -x "$PG_BIN/initdb" ] || [ ! -x "$PG_BIN/pg_ctl" ]; then
    echo "PostgreSQL 15 is not installed ($PG_BIN/initdb): apt-get install postgresql-15"
  elif [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    echo "there is no postgres user to run initdb as (initdb refuses root): reinstall postgresql-15"
  fi
}

pg_as() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# pg_start DIR: prints the admin URL. As root, DIR's parent must let the
# postgres user through (chmod 711 a mktemp -d).
pg_start() {
  local dir=$1
  mkdir -p "$dir" || return 1
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$dir" || return 1
    runuser -u postgres -- test -x "$dir" || {
      echo "the postgres user cannot reach $dir: chmod 711 its parent directories" >&2
      return 1
    }
  fi
  pg_as "$PG_BIN/initdb" -D "$dir/data" -A trust -U kzoo -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    return 1
  }
  # fsync off: a test database that a crash loses is recreated by the next run.
  pg_as "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-k $dir -p $PG_PORT -c listen_addresses='' -c fsync=${KZOO_PG_FSYNC:-off} -c max_connections=300" start >/dev/null || {
    cat "$dir/server.log" >&2
    return 1
  }
  echo "postgresql:///postgres?host=$dir&port=$PG_PORT&user=kzoo"
}

pg_stop() {
  local dir=$1
  [ -d "$dir/data" ] && pg_as "$PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1
  rm -rf "$dir"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  case "${1:-}" in
    start) pg_start "$2" ;;
    stop) pg_stop "$2" ;;
    why) pg_unavailable ;;
    fixture-start)
      pg_stop "$2"
      why=$(pg_unavailable)
      if [ -n "$why" ]; then
        if [ "${CI:-}" = true ] || [ "${CI:-}" = 1 ]; then echo "FAIL: CI=true and $why"; exit 1; fi
        echo "SKIP: $why"
        exit 77
      fi
      url=$(pg_start "$2") || exit 1
      echo "$url" >"$2/url"
      echo "$url"
      ;;
    *) echo "usage: $0 start DIR | stop DIR | why | fixture-start DIR" >&2; exit 2 ;;
  esac
fi
