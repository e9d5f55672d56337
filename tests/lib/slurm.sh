#!/usr/bin/env bash
# A private single-node Slurm cluster for the tests (LIBNOTES): Debian's
# slurm-wlm 22.05 and munge, every file and socket in DIR, as root, no
# systemd, no accounting, one node named `hostname -s` with a fake GPU
# (gres.conf File=/dev/null), configured with 4 CPUs and 16 GB whatever the
# machine has (SlurmdParameters=config_overrides), so the board's demo
# partition (4 CPUs, 8192 MB) fits on a 2-core CI host.
#
#   slurm.sh start DIR   writes DIR/slurm.conf, starts munged, slurmctld and
#                        slurmd, waits for the node to be idle; prints the
#                        path for SLURM_CONF
#   slurm.sh stop DIR    stops them (whatever is left running in DIR) and removes DIR
#   slurm.sh why         prints why a cluster cannot run here; nothing if it can
#
# Sourced, it defines slurm_start, slurm_stop, slurm_unavailable and
# slurm_restart_slurmd DIR.

slurm_unavailable() {
  local b
  for b in /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch /usr/bin/squeue; do
    [ -x "$b" ] || { echo "Slurm is not installed ($b): apt-get install slurm-wlm munge"; return; }
  done
  [ "$(id -u)" = 0 ] || echo "a test cluster runs its daemons as root"
}

# Two free ports, distinct, below the ephemeral range (free_ports.py says why); a cluster
# that still loses one is started again by slurm_start.
_slurm_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_slurm_ports() { python3 "$_slurm_lib/free_ports.py" 2; }

# Whether DIR's slurmctld or slurmd is running, found by its command line
# (a daemon that dies at start may leave no pid file, or a stale one).
_slurm_alive() { pgrep -fx -- "/usr/sbin/$2 -f $1/slurm.conf" >/dev/null; }

# The last lines of each log, one file at a time (GNU tail refuses the
# obsolete "-5" form with two files, which hid the logs of a CI failure).
_slurm_logs() {
  local f
  for f in "$@"; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done >&2
}

slurm_start() {
  local dir=$1 try
  # A node that never registers (a port taken between choosing it and
  # slurmd binding it, a daemon lost on a loaded host) gets one more try on
  # new ports before the tests are told there is no cluster.
  for try in 1 2; do
    _slurm_start_once "$dir" && return 0
    [ $try = 2 ] && return 1
    echo "the Slurm cluster did not come up; starting it again on new ports" >&2
    _slurm_kill "$dir"
    rm -rf "$dir"
  done
}

_slurm_start_once() {
  local dir=$1 host ports
  host=$(hostname -s)
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" || return 1
  head -c 1024 /dev/urandom >"$dir/munge.key" && chmod 400 "$dir/munge.key"
  /usr/sbin/munged -f -S "$dir/munge.sock" --key-file="$dir/munge.key" --log-file="$dir/log/munged.log" \
    --pid-file="$dir/munged.pid" --seed-file="$dir/munged.seed" || return 1
  read -ra ports < <(_slurm_ports)
  [ ${#ports[@]} = 2 ] || { echo "no free ports for slurmctld and slurmd" >&2; return 1; }
  cat >"$dir/slurm.conf" <<EOF
ClusterName=kzoo-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=${ports[0]}
SlurmdPort=${ports[1]}
AuthType=auth/munge
AuthInfo=socket=$dir/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
SlurmdTimeout=10
MinJobAge=60
MpiDefault=none
NodeName=$host CPUs=4 RealMemory=16384 Gres=gpu:1 State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=01:00:00 DefaultTime=00:10:00 State=UP
EOF
  echo "Name=gpu File=/dev/null" >"$dir/gres.conf"
  # cgroup v2 hosts (LIBNOTES); ignored where proctrack/linuxproc needs no cgroup.
  printf 'CgroupPlugin=autodetect\nIgnoreSystemd=yes\n' >"$dir/cgroup.conf"
  export SLURM_CONF="$dir/slurm.conf"
  /usr/sbin/slurmctld -f "$SLURM_CONF" || { _slurm_logs "$dir/log/slurmctld.log"; return 1; }
  /usr/sbin/slurmd -f "$SLURM_CONF" || { _slurm_logs "$dir/log/slurmd.log"; return 1; }
  # Up to 30 s: a 2-core CI host running other suites registers the node in
  # about 2 s, but a daemon that died is reported at once.
  local deadline=$((SECONDS + 30)) state d
  while [ $SECONDS -lt $deadline ]; do
    state=$(sinfo -h -o %t 2>/dev/null)
    [ "$state" = idle ] && { echo "$SLURM_CONF"; return 0; }
    for d in slurmctld slurmd; do
      _slurm_alive "$dir" $d || {
        echo "$d exited before the node became idle (node: ${state:-no answer})" >&2
        _slurm_logs "$dir/log/slurmctld.log" "$dir/log/slurmd.log"
        return 1
      }
    done
    sleep 0.2
  done
  echo "the node never became idle in 30 s: $(sinfo -h 2>&1)" >&2
  _slurm_logs "$dir/log/slurmctld.log" "$dir/log/slurmd.log"
  return 1
}

# Kills slurmd as a dying node would lose it, then starts it again.
slurm_restart_slurmd() {
  local dir=$1
  [ -f "$dir/slurmd.pid" ] && kill -9 "$(cat "$dir/slurmd.pid")" 2>/dev/null
  sleep 0.5
  SLURM_CONF="$dir/slurm.conf" /usr/sbin/slurmd -f "$dir/slurm.conf"
}

# Kills whatever DIR's cluster left running, without removing DIR.
_slurm_kill() {
  local dir=$1 f
  [ -f "$dir/slurm.conf" ] && SLURM_CONF="$dir/slurm.conf" scontrol shutdown >/dev/null 2>&1
  sleep 0.5
  for f in slurmd slurmctld; do
    [ -f "$dir/$f.pid" ] && kill -9 "$(cat "$dir/$f.pid")" 2>/dev/null
  done
  [ -S "$dir/munge.sock" ] && /usr/sbin/munged -s -S "$dir/munge.sock" >/dev/null 2>&1
}

slurm_stop() {
  _slurm_kill "$1"
  rm -rf "$1"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  case "${1:-}" in
    start) slurm_start "$2" ;;
    stop) slurm_stop "$2" ;;
    why) slurm_unavailable ;;
    *) echo "usage: $0 start DIR | stop DIR | why" >&2; exit 2 ;;
  esac
fi
