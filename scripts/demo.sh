#!/usr/bin/env bash
# The README's "main job" command: installs, builds, brings kzoo up on its
# embedded defaults (SQLite, local runner, CPU PyTorch when there is no GPU),
# measures the board's eager baselines, submits an improved sample package on
# a route, waits for the verdict and ends by printing the benchmark board and
# the URL of its page. KZOO_DEMO_KEEP=1 keeps the server up afterwards.
#
# It installs and builds only what it runs (install-deps.sh --runtime, build.sh --cli-only: the kzoo
# binary, not the test programs), and each step says how long the demo has run so far (docs/PERF.md
# records the figures).
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() {
  local t=$((SECONDS - started))
  printf '== [%d:%02d] %s\n' $((t / 60)) $((t % 60)) "$*"
}
step "install the Debian packages kzoo needs to build and run (scripts/install-deps.sh --runtime)"
bash scripts/install-deps.sh --runtime
step "build the kzoo binary (scripts/build.sh --cli-only)"
bash scripts/build.sh --cli-only
K=$PWD/build/kzoo
device=cpu
if command -v nvidia-smi >/dev/null 2>&1 && /usr/bin/python3 -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  device=cuda
fi
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT

step "1. validate every package of the demo catalog"
for pkg in $(find catalog/kernel_data -type d -name .kernel_package | sort); do
  $K validate "$(dirname "$pkg")"
done

step "2. initialise a kernel_data repository and state DB from the catalog (the board's rules, tagged checks)"
data=$tmp/data
# The demo board ranks the device class this machine can fill: the CPU when
# there is no GPU (docs/BOARD.md).
board_class=cpu
[ "$device" = cuda ] && board_class=${KZOO_DEVICE_CLASS:-h200}
$K init "$data" --catalog catalog/kernel_data --board-device-class "$board_class"
# Every request that changes something carries a bearer token (docs/SECURITY.md):
# a maintainer (who may queue the baselines) and a member (who submits).
$K user add maint --role maintainer --data "$data"
$K user add demo --role member --data "$data"
MAINT_TOKEN=$($K token new maint --data "$data")
KZOO_TOKEN=$($K token new demo --data "$data"); export KZOO_TOKEN
# a free port below the ephemeral range, which no outgoing connection can take (tests/lib/free_ports.py)
port=$(/usr/bin/python3 tests/lib/free_ports.py)
export KZOO_SERVER=http://127.0.0.1:$port

step "3. start the server (127.0.0.1:$port) and a worker (device: $device)"
$K serve --data "$data" --listen "127.0.0.1:$port" > "$tmp/serve.log" 2>&1 & pids+=($!)
$K worker --data "$data" --device "$device" --catalog catalog --judge-dir judge > "$tmp/worker.log" 2>&1 & pids+=($!)
for _ in $(seq 50); do
  curl -fsS "$KZOO_SERVER/healthz" >/dev/null 2>&1 && break
  sleep 0.2
done
$K kernels

step "4. measure the eager baseline of the softmax (the speed-up's denominator; \`kzoo baselines\` alone measures every board kernel)"
kid=h200/norm/softmax/bf16/softmax_eager
KZOO_TOKEN=$MAINT_TOKEN $K baselines --kernel "$kid" --wait || echo "(a kernel without a baseline counts 1 on the board)"

step "5. submit an improved softmax (fused) on the route fused-softmax and wait for its verdict"
kid=h200/norm/softmax/bf16/softmax_eager
mkdir -p "$tmp/sub"
cp -r "catalog/kernel_data/$kid" "$tmp/sub/pkg"
cp catalog/samples/softmax_fused.py "$tmp/sub/pkg/src/softmax.py"
set +e
$K submit "$tmp/sub/pkg" --kernel-id "$kid" --submitter demo --route fused-softmax --summary "softmax: one fused pass instead of three"
rc=$?
set -e

step "6. the benchmark board (its page is the URL printed last)"
$K board
# A verdict either way (0 accepted, 1 rejected) is the service working; only
# an error (2) fails the demo.
if [ "$rc" -ge 2 ]; then
  echo "-- worker log (tail)"; tail -n 30 "$tmp/worker.log"
  exit "$rc"
fi
echo "board page: $KZOO_SERVER/"
step "done"
if [ "${KZOO_DEMO_KEEP:-0}" = 1 ]; then
  echo "(KZOO_DEMO_KEEP=1: the server stays up; Ctrl-C stops it)"
  wait
fi
exit 0
