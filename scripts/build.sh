#!/usr/bin/env bash
# Configures and builds kzoo into ./build (Release with debug info, Ninja).
#   bash scripts/build.sh             everything: the kzoo binary, every test program, the benchmarks
#                                     (scripts/test.sh; needs scripts/install-deps.sh's full set)
#   bash scripts/build.sh --cli-only  only the kzoo binary, -O1 without debug info, configured without the
#                                     test programs and benchmarks (scripts/demo.sh; what install-deps.sh
#                                     --runtime installs is enough). A later full build rebuilds it with
#                                     debug info.
set -euo pipefail
cd "$(dirname "$0")/.."
tests=ON
type=RelWithDebInfo
extra=()
target=()
if [ "${1:-}" = --cli-only ]; then
  # The demo's first build on a fresh 2-core machine: no debug info, -O1. One unity
  # translation unit of the library took 85.6 s of CPU at -O2 -g and 30.9 s at -O1 -g0
  # (docs/PERF.md, "The first run"); the service's hot paths are git, SQLite and the judge.
  tests=OFF
  type=Release
  extra=(-DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG")
  target=(--target kzoo_cli)
fi
# Unity build (CMakeLists.txt, KZOO_UNITY_BUILD): the library and the CLI parse their
# headers once per batch of files, not once per file: 26.5 -> 11.8 min of CPU for the kzoo
# binary at RelWithDebInfo.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=$type -DKZOO_UNITY_BUILD=ON -DKZOO_BUILD_TESTS=$tests \
  -DKZOO_BUILD_BENCHMARKS=$tests "${extra[@]}" >/dev/null
cmake --build build -j "$(nproc)" "${target[@]}"
