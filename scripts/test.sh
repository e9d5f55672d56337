#!/usr/bin/env bash
# Installs the dependencies, builds, and runs every test (ctest), then every
# fuzzer for a minute. This is the README's test command and what CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
# The format docs are generated from the schemas: stale docs fail the run.
if [ -x build/kzoo ] && build/kzoo docs --help >/dev/null 2>&1; then
  build/kzoo docs --check docs/formats.md
fi
# So is docs/TASKS.md's catalog table, from catalog/.
build/kzoo task table --check docs/TASKS.md --catalog catalog
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 900
cd ..
# Every *_fuzz.cpp target (clang, libFuzzer + ASan + UBSan), 60 s each.
bash scripts/fuzz.sh 60
