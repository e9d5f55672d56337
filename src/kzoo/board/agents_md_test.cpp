#include "kzoo/board/agents_md.hpp"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kzoo/store/test_support.hpp"

namespace kzoo::board {
namespace {

using ::testing::HasSubstr;
using store::testing::TempDir;

TEST(AgentsMd, TheStarterSaysHowToGradeSubmitStartARouteOpenAPullRequestAndTheGuardrails) {
  const std::string s = starter_agents_md();
  for (const char* must : {"kzoo grade PACKAGE --against CURRENT", "kzoo submit PACKAGE --summary",
                           "--route NAME --summary", "--route NAME --pull-request", "## 5. The guardrails",
                           "atol and rtol", "roofline"})
    EXPECT_THAT(s, HasSubstr(must));
}

TEST(AgentsMd, InitCommitsTheStarterOnceAndNeverOverAProjectsOwn) {
  TempDir tmp;
  auto r = store::KernelRepo::init_from_catalog(KZOO_SOURCE_DIR "/catalog/kernel_data", tmp / "kd.git");
  ASSERT_TRUE(r) << r.error().message;
  auto first = ensure_agents_md(*r);
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(*first);
  EXPECT_EQ(*r->read_file(kAgentsFile, "refs/heads/main"), starter_agents_md());
  const std::string head = *r->head();
  auto again = ensure_agents_md(*r);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);
  EXPECT_EQ(*r->head(), head);

  // A catalog that brings its own keeps it.
  std::filesystem::create_directories(tmp / "cat");
  std::filesystem::copy(KZOO_SOURCE_DIR "/catalog/kernel_data", tmp / "cat", std::filesystem::copy_options::recursive);
  std::ofstream(tmp / (std::string("cat/") + kAgentsFile)) << "# Ours\n";
  auto own = store::KernelRepo::init_from_catalog(tmp / "cat", tmp / "own.git");
  ASSERT_TRUE(own) << own.error().message;
  auto kept = ensure_agents_md(*own);
  ASSERT_TRUE(kept);
  EXPECT_FALSE(*kept);
  EXPECT_EQ(*own->read_file(kAgentsFile, "refs/heads/main"), "# Ours\n");
}

}  // namespace
}  // namespace kzoo::board
