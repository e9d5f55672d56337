// For tests only (include after <gtest/gtest.h>): what a test does when a
// prerequisite of the machine is missing (bubblewrap, root, a cgroup).
//
// On a developer's machine it skips, saying why. Under CI=true it FAILS:
// CI runs as root with everything scripts/install-deps.sh installs, so a
// skip there would mean the test silently stopped running, and a suite that
// passes by skipping proves nothing. The shell suites use the same rule
// (tests/lib/prerequisite.sh) and so do the judge's (judge/tests/helpers.py).
// A test that needs what CI has not got (a GPU) uses GTEST_SKIP directly.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

namespace kzoo::testing {

// True when CI=true (or CI=1) is set: every prerequisite must be there.
inline bool ci_requires_every_test() {
  const char* v = std::getenv("CI");
  if (v == nullptr) return false;
  std::string_view s(v);
  return s == "true" || s == "1";
}

}  // namespace kzoo::testing

// KZOO_REQUIRE_PREREQUISITE(why): `why` is empty when the prerequisite is
// there; otherwise the test stops here, skipped, or failed under CI=true.
// Used in SetUp, a fatal failure also keeps the test body from running.
#define KZOO_REQUIRE_PREREQUISITE(why_expr)                                                      \
  do {                                                                                           \
    const std::string kzoo_why_ = (why_expr);                                                    \
    if (!kzoo_why_.empty()) {                                                                    \
      if (::kzoo::testing::ci_requires_every_test())                                             \
        GTEST_FAIL() << "CI=true, so this test must run, but its prerequisite is missing: "      \
                     << kzoo_why_ << " (scripts/install-deps.sh installs it; CI runs as root)"; \
      GTEST_SKIP() << kzoo_why_;                                                                 \
    }                                                                                            \
  } while (0)
