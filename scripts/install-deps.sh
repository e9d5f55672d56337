#!/usr/bin/env bash
# Installs kzoo's dependencies from Debian 12 packages. Idempotent; run as root
# (or with sudo). No vendored copies, no other registries.
#   bash scripts/install-deps.sh            every build, test and runtime dependency (CI, scripts/test.sh)
#   bash scripts/install-deps.sh --runtime  what building the kzoo binary and running it need
#                                           (scripts/demo.sh): no test frameworks, fuzzing compiler,
#                                           browser or Node.js, which are most of the download
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
PKGS=(
  # toolchain
  build-essential cmake ninja-build pkg-config git curl
  # libraries (DESIGN §7)
  nlohmann-json3-dev libvalijson-dev libyaml-cpp-dev libarchive-dev libgit2-dev
  libsqlite3-dev libsqlitecpp-dev libpqxx-dev libcli11-dev libspdlog-dev libfmt-dev
  libcpp-httplib-dev libexpected-dev libssl-dev zlib1g-dev libseccomp-dev
  # bearer tokens: random bytes, hashing, constant-time comparison (access/)
  libsodium-dev
  # the board's pages: templates and AGENTS.md (LIBNOTES)
  libkainjow-mustache-dev libcmark-dev
  # the judge (CPU PyTorch for machines without a GPU) and the sandbox
  python3 python3-torch python3-yaml python3-numpy bubblewrap
  # `kzoo serve` runs git's own /usr/lib/git-core/git-http-backend for clones
  # and pushes over HTTP (docs/GIT.md): git is a runtime dependency, not only
  # the toolchain's (git >= 2.29 for the proc-receive hook; bookworm has 2.39)
  git
)
runtime_only=0
[ "${1:-}" = --runtime ] && runtime_only=1
if [ $runtime_only = 0 ]; then
  PKGS+=(
    # the fuzzers (scripts/fuzz.sh)
    clang libclang-rt-14-dev
    # the state on PostgreSQL: its tests start a real server (initdb, pg_ctl) as the postgres user
    postgresql-15
    # the Slurm runner: its tests start a single-node cluster (tests/lib/slurm.sh)
    slurm-wlm munge
    # tests and benchmarks
    libgtest-dev libgmock-dev libbenchmark-dev
    wrk  # normal traffic beside slow clients (scripts/bench_front_door.sh)
    # the pages' browser test (tests/cli/board.sh): Debian's chromium, driven by npm playwright-core
    chromium
  )
  # Node.js and npm for the browser test: Debian's, unless the machine already has a node with
  # npm (an image with NodeSource's nodejs, which bundles npm: Debian's npm package cannot be
  # installed beside it, "held broken packages").
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    PKGS+=(nodejs npm)
  fi
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${PKGS[@]}"
if [ $runtime_only = 0 ]; then
  # The board pages' browser test drives Debian's chromium with npm's
  # playwright-core (tests/browser/package.json); playwright-core downloads no browser.
  (cd "$(dirname "$0")/../tests/browser" && npm install --no-audit --no-fund --silent)
fi
