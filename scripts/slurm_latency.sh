#!/usr/bin/env bash
# sbatch-to-start latency on the tests' single-node Slurm cluster
# (tests/lib/slurm.sh): N batch jobs, one after another on an idle node; each
# writes the time its script starts. Latency = that time - the time just
# before sbatch. Prints each latency, then median and max (docs/PERF.md,
# docs/SCALE.md "Sizing").
#
#   scripts/slurm_latency.sh [N=20]      (as root, like the tests' cluster)
set -euo pipefail
n=${1:-20}
here=$(cd "$(dirname "$0")/.." && pwd)
. "$here/tests/lib/slurm.sh"
why=$(slurm_unavailable)
[ -z "$why" ] || { echo "SKIP: $why"; exit 77; }
dir=$(mktemp -d /tmp/kzoo-slurm-lat-XXXXXX)
trap 'slurm_stop "$dir/c"; rm -rf "$dir"' EXIT
export SLURM_CONF
SLURM_CONF=$(slurm_start "$dir/c")
mkdir -p "$dir/out"
cat >"$dir/job.sh" <<'JOB'
#!/bin/bash
date +%s.%N >"$1"
JOB
chmod +x "$dir/job.sh"
lat=()
for i in $(seq "$n"); do
  t0=$(date +%s.%N)
  id=$(sbatch --parsable -o /dev/null -n 1 "$dir/job.sh" "$dir/out/$i")
  until [ -s "$dir/out/$i" ]; do sleep 0.01; done
  l=$(python3 -c "print(f'{$(cat "$dir/out/$i")-$t0:.3f}')")
  echo "job $id: ${l} s"
  lat+=("$l")
  # wait until it has left the queue, so the next one finds the node idle
  while [ -n "$(squeue -h -t PD,CF,R,CG -j "$id" 2>/dev/null)" ]; do sleep 0.05; done
done
printf '%s\n' "${lat[@]}" | python3 -c '
import statistics, sys
v = sorted(float(x) for x in sys.stdin)
print(f"n={len(v)} median={statistics.median(v):.3f} s min={v[0]:.3f} s max={v[-1]:.3f} s")'
