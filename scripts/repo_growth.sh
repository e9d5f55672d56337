#!/usr/bin/env bash
# Growth of kernel_data.git and refs/jobs per graded job (docs/PERF.md,
# docs/SCALE.md "Sizing"): the demo's setup (kzoo init from the catalog, one
# serve, one CPU worker), the softmax baseline, then N submissions of the
# softmax (each with a different comment line, alternating the fused sample
# and the reference) graded one after another. Prints, before and after:
# refs/jobs count, loose objects and bytes, pack bytes, the repository's
# bytes on disk, and the same after `git gc` on a copy.
#
#   scripts/repo_growth.sh [N=10] [BUILD=build]
set -euo pipefail
n=${1:-10}
cd "$(dirname "$0")/.."
K=$PWD/${2:-build}/kzoo
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
data=$tmp/data
$K init "$data" --catalog catalog/kernel_data --board-device-class cpu >/dev/null
$K user add maint --role maintainer --data "$data" >/dev/null
$K user add demo --role member --data "$data" >/dev/null
MAINT_TOKEN=$($K token new maint --data "$data")
KZOO_TOKEN=$($K token new demo --data "$data"); export KZOO_TOKEN
# a free port below the ephemeral range, which no outgoing connection can take (tests/lib/free_ports.py)
port=$(/usr/bin/python3 tests/lib/free_ports.py)
export KZOO_SERVER=http://127.0.0.1:$port
$K serve --data "$data" --listen "127.0.0.1:$port" >"$tmp/serve.log" 2>&1 & pids+=($!)
$K worker --data "$data" --device cpu --catalog catalog --judge-dir judge >"$tmp/worker.log" 2>&1 & pids+=($!)
for _ in $(seq 50); do curl -fsS "$KZOO_SERVER/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
repo=$(find "$data" -maxdepth 2 -name '*.git' -type d | head -1)
measure() {  # label
  local c
  c=$(git -C "$repo" count-objects -v | tr '\n' ' ')
  echo "$1: refs/jobs=$(git -C "$repo" for-each-ref refs/jobs | wc -l) refs=$(git -C "$repo" for-each-ref | wc -l) du_bytes=$(du -sb "$repo" | cut -f1) $c"
  rm -rf "$tmp/gc.git"; cp -a "$repo" "$tmp/gc.git"
  git -C "$tmp/gc.git" gc -q --prune=now
  c=$(git -C "$tmp/gc.git" count-objects -v | tr '\n' ' ')
  echo "$1 after gc: du_bytes=$(du -sb "$tmp/gc.git" | cut -f1) $c"
}
kid=h200/norm/softmax/bf16/softmax_eager
KZOO_TOKEN=$MAINT_TOKEN $K baselines --kernel "$kid" --wait >/dev/null || true
measure "before"
t0=$SECONDS
for i in $(seq "$n"); do
  rm -rf "$tmp/sub"; mkdir -p "$tmp/sub"
  cp -r "catalog/kernel_data/$kid" "$tmp/sub/pkg"
  [ $((i % 2)) = 1 ] && cp catalog/samples/softmax_fused.py "$tmp/sub/pkg/src/softmax.py"
  echo "# growth run $i" >>"$tmp/sub/pkg/src/softmax.py"
  set +e
  $K submit "$tmp/sub/pkg" --kernel-id "$kid" --submitter demo --route "growth-$i" --summary "growth $i" >"$tmp/submit.log" 2>&1
  echo "submission $i: rc=$? ($((SECONDS - t0)) s)"
  set -e
done
measure "after $n"
echo "evidence files of the last job:"
last=$(git -C "$repo" for-each-ref --sort=-creatordate --format='%(refname)' refs/jobs | head -1)
git -C "$repo" ls-tree -r -l "$last"
