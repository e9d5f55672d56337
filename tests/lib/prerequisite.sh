# Sourced by the suites in tests/cli/: what a suite does when a prerequisite
# of the machine is missing. The same rule as the C++ tests'
# (src/kzoo/util/test_prerequisite.hpp) and the judge's (judge/tests/helpers.py):
# on a developer's machine the suite is SKIPPED (exit 77, which ctest reports
# as "Skipped", never as passed); under CI=true it FAILS, because CI runs as
# root with everything scripts/install-deps.sh installs, and a suite that
# passes by skipping there proves nothing.

ci_requires_every_test() {
  [ "${CI:-}" = "true" ] || [ "${CI:-}" = "1" ]
}

# require_prerequisite WHY: call when a prerequisite is missing; never returns.
require_prerequisite() {
  if ci_requires_every_test; then
    echo "FAIL: CI=true, so this suite must run, but its prerequisite is missing: $*" >&2
    echo "FAIL: $*"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

# The bubblewrap the sandbox will use (KZOO_BWRAP, as src/kzoo/runner/sandbox.cpp reads it).
bwrap_path() {
  echo "${KZOO_BWRAP:-/usr/bin/bwrap}"
}
