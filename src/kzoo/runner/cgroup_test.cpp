// A run's cgroup: made with its limits, holds the processes put in it, kills
// them all, and leaves nothing behind.
#include "kzoo/runner/cgroup.hpp"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace kzoo::runner {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (detect_cgroup_version() == CgroupVersion::none)
      GTEST_SKIP() << "no writable cgroup hierarchy here (needs root); the sandbox falls back to rlimits";
  }
};

TEST_F(CgroupTest, IsCreatedWithItsLimitsWritten) {
  auto cg = Cgroup::create({64ull << 20, 17});
  ASSERT_TRUE(cg.has_value()) << cg.error().message;
  ASSERT_FALSE(cg->dirs().empty());
  for (const auto& d : cg->dirs()) EXPECT_TRUE(std::filesystem::is_directory(d)) << d;
  if (cg->version() == CgroupVersion::v1) {
    EXPECT_EQ(std::stoull(slurp(cg->dirs()[0] + "/memory.limit_in_bytes")), 64ull << 20);
    EXPECT_EQ(slurp(cg->dirs()[1] + "/pids.max"), "17\n");
  } else {
    EXPECT_EQ(slurp(cg->dirs()[0] + "/memory.max"), std::to_string(64ull << 20) + "\n");
    EXPECT_EQ(slurp(cg->dirs()[0] + "/pids.max"), "17\n");
  }
  EXPECT_FALSE(cg->usage().oom);
}

TEST_F(CgroupTest, ACpuCapIsACfsQuotaOfThatManyCpusOrSaysWhyNot) {
  auto cg = Cgroup::create({64ull << 20, 17, 3});
  ASSERT_TRUE(cg.has_value()) << cg.error().message;
  if (!cg->cpu_capped()) {
    EXPECT_FALSE(cg->cpu_note().empty()) << "an uncapped run must say why";
    GTEST_SKIP() << "no cpu controller here: " << cg->cpu_note();
  }
  if (cg->version() == CgroupVersion::v1) {
    ASSERT_EQ(cg->dirs().size(), 3u);  // memory, pids, cpu
    EXPECT_EQ(slurp(cg->dirs()[2] + "/cpu.cfs_period_us"), "100000\n");
    EXPECT_EQ(slurp(cg->dirs()[2] + "/cpu.cfs_quota_us"), "300000\n");
  } else {
    EXPECT_EQ(slurp(cg->dirs()[0] + "/cpu.max"), "300000 100000\n");
  }
  // Without a cap asked for, none is set and nothing is noted.
  auto plain = Cgroup::create({64ull << 20, 17});
  ASSERT_TRUE(plain.has_value());
  EXPECT_FALSE(plain->cpu_capped());
  EXPECT_TRUE(plain->cpu_note().empty());
  if (plain->version() == CgroupVersion::v1) EXPECT_EQ(plain->dirs().size(), 2u);
}

TEST_F(CgroupTest, KillsEveryMemberAndRemovesItselfWhenDestroyed) {
  std::vector<std::string> dirs;
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Once inside the group, a member forks a grandchild: both must die with it.
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(1);
    if (::fork() == 0) ::pause();
    ::pause();
    ::_exit(0);
  }
  ::close(go[0]);
  {
    auto cg = Cgroup::create({0, 0});
    if (!cg) ::kill(child, SIGKILL);
    ASSERT_TRUE(cg.has_value()) << cg.error().message;
    dirs = cg->dirs();
    ASSERT_TRUE(cg->add(child).has_value());
    ASSERT_EQ(::write(go[1], "g", 1), 1);
    ::close(go[1]);
    for (int i = 0; i < 200 && cg->members().size() < 2; ++i) ::usleep(10000);
    EXPECT_EQ(cg->members().size(), 2u);
    // Reap the direct child concurrently so the group can empty.
    EXPECT_EQ(::kill(child, 0), 0);
    cg->kill_all(0);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
  }
  for (const auto& d : dirs) EXPECT_FALSE(std::filesystem::exists(d)) << d << " left behind";
}

// Names hold the pid and a counter: a group left behind by a dead process whose pid is ours
// now (a killed worker) would take the name of one of our runs. Empty, it is replaced.
TEST_F(CgroupTest, AnEmptyGroupLeftUnderItsNameByADeadProcessIsReplaced) {
  auto first = Cgroup::create({64ull << 20, 17});
  ASSERT_TRUE(first.has_value()) << first.error().message;
  std::vector<std::string> next;
  for (const auto& d : first->dirs()) {
    auto dash = d.rfind('-');
    next.push_back(d.substr(0, dash + 1) + std::to_string(std::stoul(d.substr(dash + 1)) + 1));
    ASSERT_TRUE(std::filesystem::create_directory(next.back())) << next.back();
  }
  auto second = Cgroup::create({64ull << 20, 17});
  ASSERT_TRUE(second.has_value()) << second.error().message;
  EXPECT_EQ(second->dirs(), next);
  EXPECT_EQ(slurp(second->dirs().back() + "/pids.max"), "17\n");
}

TEST_F(CgroupTest, RemoveIsIdempotent) {
  auto cg = Cgroup::create({});
  ASSERT_TRUE(cg.has_value());
  EXPECT_TRUE(cg->remove().has_value());
  EXPECT_TRUE(cg->remove().has_value());
  EXPECT_TRUE(cg->dirs().empty());
}

TEST(CgroupVersionName, IsStable) {
  EXPECT_STREQ(to_string(CgroupVersion::v1), "cgroup-v1");
  EXPECT_STREQ(to_string(CgroupVersion::v2), "cgroup-v2");
  EXPECT_STREQ(to_string(CgroupVersion::none), "none");
}

}  // namespace
}  // namespace kzoo::runner
