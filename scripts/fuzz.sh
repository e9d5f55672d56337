#!/usr/bin/env bash
# Builds every src/kzoo/**/*_fuzz.cpp with clang (libFuzzer + ASan + UBSan)
# in build-fuzz/ and runs each for SECONDS (default 60). Fails on any crash,
# sanitizer report, leak, timeout or out-of-memory. Usage: fuzz.sh [SECONDS]
#
# Per target `dir/NAME_fuzz.cpp`: the dictionary `dir/NAME_fuzz.dict` and the
# seed inputs in `dir/NAME_fuzz_seeds/` are used when present; new inputs
# accumulate in build-fuzz/corpus/NAME_fuzz/, and a crashing input is saved
# in build-fuzz/artifacts/NAME_fuzz/ (reproduce: build-fuzz/kzoo_NAME_fuzz FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
jobs="$(nproc)"

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DKZOO_BUILD_FUZZERS=ON -DKZOO_BUILD_TESTS=OFF -DKZOO_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-fuzz -j "$jobs" --target kzoo_fuzzers

export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
failed=0
while IFS= read -r src; do
  name="$(basename "$src" .cpp)"
  dir="$(dirname "$src")"
  corpus="build-fuzz/corpus/$name"
  artifacts="build-fuzz/artifacts/$name"
  log="build-fuzz/$name.log"
  mkdir -p "$corpus" "$artifacts"
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096
        -print_final_stats=1 -artifact_prefix="$artifacts/")
  if [ -f "$dir/$name.dict" ]; then args+=(-dict="$dir/$name.dict"); fi
  dirs=("$corpus")
  if [ -d "$dir/${name}_seeds" ]; then dirs+=("$dir/${name}_seeds"); fi
  echo "fuzz: $name for ${seconds}s" >&2
  if "build-fuzz/kzoo_$name" "${args[@]}" "${dirs[@]}" >"$log" 2>&1; then
    grep -E "^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+.*DONE" "$log" | sed "s/^/fuzz: $name: /" >&2 || true
  else
    echo "fuzz: $name FAILED; log: $log; inputs: $artifacts/" >&2
    tail -n 60 "$log" >&2
    failed=1
  fi
done < <(find src/kzoo -name '*_fuzz.cpp' | sort)
exit "$failed"
