#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "kzoo/util/test_prerequisite.hpp"

namespace kzoo::util {
namespace {

// What KZOO_REQUIRE_PREREQUISITE(why) reported with CI set to `ci` (unset when
// nullopt), caught before it reaches this test.
struct Report {
  int size = 0;
  bool skipped = false, fatal = false;
  std::string message;
};

Report report(std::optional<std::string> ci, const std::string& why) {
  std::optional<std::string> saved;
  if (const char* v = std::getenv("CI")) saved = v;
  if (ci) ::setenv("CI", ci->c_str(), 1); else ::unsetenv("CI");
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter catcher(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    [&] { KZOO_REQUIRE_PREREQUISITE(why); }();
  }
  if (saved) ::setenv("CI", saved->c_str(), 1); else ::unsetenv("CI");
  Report r;
  r.size = results.size();
  if (r.size > 0) {
    const auto& p = results.GetTestPartResult(0);
    r.skipped = p.skipped();
    r.fatal = p.fatally_failed();
    r.message = p.message();
  }
  return r;
}

TEST(TestPrerequisite, AMissingPrerequisiteIsASkipOnADevelopersMachine) {
  for (std::optional<std::string> ci : {std::optional<std::string>(), std::optional<std::string>("false"),
                                       std::optional<std::string>("")}) {
    auto r = report(ci, "bubblewrap is not installed");
    ASSERT_EQ(r.size, 1);
    EXPECT_TRUE(r.skipped);
    EXPECT_NE(r.message.find("bubblewrap is not installed"), std::string::npos);
  }
}

TEST(TestPrerequisite, UnderCiAMissingPrerequisiteIsAFailureNotASkip) {
  for (const char* ci : {"true", "1"}) {
    auto r = report(std::string(ci), "needs a cgroup (run as root)");
    ASSERT_EQ(r.size, 1) << ci;
    EXPECT_TRUE(r.fatal) << ci;
    EXPECT_NE(r.message.find("needs a cgroup"), std::string::npos);
  }
}

TEST(TestPrerequisite, APresentPrerequisiteReportsNothingEvenUnderCi) {
  EXPECT_EQ(report(std::string("true"), "").size, 0);
  EXPECT_EQ(report(std::nullopt, "").size, 0);
}

}  // namespace
}  // namespace kzoo::util
