#!/usr/bin/env bash
# Configures and builds kzoo into ./build (Release with debug info, Ninja).
#   bash scripts/build.sh             everything: the kzoo binary, every test program, the benchmarks
#                                     (scripts/test.sh; needs scripts/install-deps.sh's full set)
#   bash scripts/build.sh --cli-only  only the kzoo binary, configured without the test programs and
#                                     benchmarks (scripts/demo.sh; what install-deps.sh --runtime installs
#                                     is enough). A later full build reuses every object it made.
set -euo pipefail
cd "$(dirname "$0")/.."
tests=ON
target=()
if [ "${1:-}" = --cli-only ]; then
  tests=OFF
  target=(--target kzoo_cli)
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKZOO_BUILD_TESTS=$tests -DKZOO_BUILD_BENCHMARKS=$tests >/dev/null
cmake --build build -j "$(nproc)" "${target[@]}"
