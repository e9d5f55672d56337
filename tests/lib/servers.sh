# Several `kzoo serve` on one data directory (docs/SCALE.md), shared by
# cli/scale.sh and cli/git_servers.sh: a free loopback port, a server started
# with its own --server-id, and waiting until it answers. Source it once
# $KZOO, $D (the data directory), $T and $PY are set.

_servers_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# A free port below the ephemeral range, which no outgoing connection can take (free_ports.py).
free_port() { "$PY" "$_servers_lib/free_ports.py"; }

# start_server ID PORT LOG [ARGS...]: `kzoo serve` on $D as server ID on
# 127.0.0.1:PORT, appending to $T/LOG (a restarted server keeps its log);
# prints the pid.
start_server() {
  local id=$1 port=$2 log=$3
  shift 3
  "$KZOO" serve --data "$D" --server-id "$id" --listen "127.0.0.1:$port" "$@" >>"$T/$log" 2>&1 &
  echo $!
}

# wait_up URL PID: 0 once URL/healthz answers, 1 if PID died or 30 s passed.
wait_up() {
  for _ in $(seq 150); do
    curl -fs "$1/healthz" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
