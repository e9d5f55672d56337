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
# One fuzzer per CPU at a time: each is single-threaded, and each still runs its full SECONDS
# (on CI's 2 cores the seven took 7 minutes one after another).
run_one() {  # run_one SRC: fuzz one target; its verdict goes to build-fuzz/NAME.status
  local src=$1 name dir corpus artifacts log
  name="$(basename "$src" .cpp)"
  dir="$(dirname "$src")"
  corpus="build-fuzz/corpus/$name"
  artifacts="build-fuzz/artifacts/$name"
  log="build-fuzz/$name.log"
  mkdir -p "$corpus" "$artifacts"
  local args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096
              -print_final_stats=1 -artifact_prefix="$artifacts/")
  if [ -f "$dir/$name.dict" ]; then args+=(-dict="$dir/$name.dict"); fi
  local dirs=("$corpus")
  if [ -d "$dir/${name}_seeds" ]; then dirs+=("$dir/${name}_seeds"); fi
  echo "fuzz: $name for ${seconds}s" >&2
  if "build-fuzz/kzoo_$name" "${args[@]}" "${dirs[@]}" >"$log" 2>&1; then
    echo ok > "build-fuzz/$name.status"
  else
    echo failed > "build-fuzz/$name.status"
  fi
}
mapfile -t targets < <(find src/kzoo -name '*_fuzz.cpp' | sort)
running=0
for src in "${targets[@]}"; do
  rm -f "build-fuzz/$(basename "$src" .cpp).status"
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  run_one "$src" &
  running=$((running + 1))
done
wait
failed=0
for src in "${targets[@]}"; do
  name="$(basename "$src" .cpp)"
  log="build-fuzz/$name.log"
  if [ "$(cat "build-fuzz/$name.status" 2>/dev/null)" = ok ]; then
    grep -E "^stat::(number_of_executed_units|peak_rss_mb)|^#[0-9]+.*DONE" "$log" | sed "s/^/fuzz: $name: /" >&2 || true
  else
    echo "fuzz: $name FAILED; log: $log; inputs: build-fuzz/artifacts/$name/" >&2
    tail -n 60 "$log" >&2
    failed=1
  fi
done
exit "$failed"
