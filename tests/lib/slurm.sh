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

_slurm_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

slurm_start() {
  local dir=$1 host
  host=$(hostname -s)
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" || return 1
  head -c 1024 /dev/urandom >"$dir/munge.key" && chmod 400 "$dir/munge.key"
  /usr/sbin/munged -f -S "$dir/munge.sock" --key-file="$dir/munge.key" --log-file="$dir/log/munged.log" \
    --pid-file="$dir/munged.pid" --seed-file="$dir/munged.seed" || return 1
  cat >"$dir/slurm.conf" <<EOF
ClusterName=kzoo-test
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$(_slurm_port)
SlurmdPort=$(_slurm_port)
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
  /usr/sbin/slurmctld -f "$SLURM_CONF" || { tail -5 "$dir/log/slurmctld.log" >&2; return 1; }
  /usr/sbin/slurmd -f "$SLURM_CONF" || { tail -5 "$dir/log/slurmd.log" >&2; return 1; }
  local _
  for _ in $(seq 100); do
    [ "$(sinfo -h -o %t 2>/dev/null)" = idle ] && { echo "$SLURM_CONF"; return 0; }
    sleep 0.2
  done
  echo "the node never became idle: $(sinfo -h 2>&1)" >&2
  tail -5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" >&2
  return 1
}

# Kills slurmd as a dying node would lose it, then starts it again.
slurm_restart_slurmd() {
  local dir=$1
  [ -f "$dir/slurmd.pid" ] && kill -9 "$(cat "$dir/slurmd.pid")" 2>/dev/null
  sleep 0.5
  SLURM_CONF="$dir/slurm.conf" /usr/sbin/slurmd -f "$dir/slurm.conf"
}

slurm_stop() {
  local dir=$1 f
  [ -f "$dir/slurm.conf" ] && SLURM_CONF="$dir/slurm.conf" scontrol shutdown >/dev/null 2>&1
  sleep 0.5
  for f in slurmd slurmctld; do
    [ -f "$dir/$f.pid" ] && kill -9 "$(cat "$dir/$f.pid")" 2>/dev/null
  done
  [ -S "$dir/munge.sock" ] && /usr/sbin/munged -s -S "$dir/munge.sock" >/dev/null 2>&1
  rm -rf "$dir"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  case "${1:-}" in
    start) slurm_start "$2" ;;
    stop) slurm_stop "$2" ;;
    why) slurm_unavailable ;;
    *) echo "usage: $0 start DIR | stop DIR | why" >&2; exit 2 ;;
  esac
fi
