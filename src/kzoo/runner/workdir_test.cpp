// The workdir takes its harness from the trusted tree and only src/ from the
// submission: whatever else a submission ships never reaches the run.
#include "kzoo/runner/workdir.hpp"

#include <filesystem>

#include <sys/stat.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kzoo/runner/test_support.hpp"

namespace kzoo::runner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using package::PackageTree;

PackageTree trusted() {
  return {{{".kernel_package/bench_result.yaml", "trusted results\n"},
           {".kernel_package/benchmark.py", "trusted benchmark\n"},
           {".kernel_package/build_test_env.py", "trusted build\n"},
           {".kernel_package/desc.yaml", "trusted desc\n"}},
          {".kernel_package"}};
}

PackageTree submission() {
  return {{{".kernel_package/bench_result.yaml", "forged results\n"},
           {".kernel_package/benchmark.py", "forged benchmark\n"},
           {".kernel_package/build_test_env.py", "forged build\n"},
           {".kernel_package/desc.yaml", "desc\n"},
           {".kzoo/task.json", "{\"forged\": true}"},
           {"README.md", "hello\n"},
           {"src/kernel.py", "def run(): pass\n"},
           {"src/sub/helper.py", "x = 1\n"}},
          {".kernel_package", ".kzoo", "src", "src/sub"}};
}

std::vector<std::string> paths(const PackageTree& t) {
  std::vector<std::string> out;
  for (const auto& f : t.files) out.push_back(f.path);
  return out;
}

TEST(WorkdirTree, TakesTheTrustedHarnessTheSubmissionsSrcAndTheCatalogsTask) {
  auto t = workdir_tree(trusted(), submission(), "{\"task\": 1}");
  ASSERT_TRUE(t.has_value()) << t.error().message;
  EXPECT_THAT(paths(*t), ElementsAre(".kernel_package/bench_result.yaml", ".kernel_package/benchmark.py",
                                     ".kernel_package/build_test_env.py", ".kernel_package/desc.yaml",
                                     ".kzoo/task.json", "src/kernel.py", "src/sub/helper.py"));
  EXPECT_EQ(t->find(".kernel_package/benchmark.py")->content, "trusted benchmark\n");
  EXPECT_EQ(t->find(".kernel_package/bench_result.yaml")->content, "trusted results\n");
  EXPECT_EQ(t->find(".kzoo/task.json")->content, "{\"task\": 1}");
  EXPECT_EQ(t->find("README.md"), nullptr);
  EXPECT_THAT(t->dirs, ElementsAre(".kernel_package", ".kzoo", ".kzoo/run", "src", "src/sub"));
}

TEST(WorkdirTree, RefusesAnIncompleteTrustedHarness) {
  auto h = trusted();
  h.files.erase(h.files.begin() + 1);  // benchmark.py
  auto t = workdir_tree(h, submission(), "{}");
  ASSERT_FALSE(t.has_value());
  EXPECT_THAT(t.error().message, HasSubstr(".kernel_package/benchmark.py"));
}

TEST(WorkdirTree, RefusesASubmissionWithoutSource) {
  PackageTree s{{{"README.md", "no code\n"}}, {}};
  auto t = workdir_tree(trusted(), s, "{}");
  ASSERT_FALSE(t.has_value());
  EXPECT_THAT(t.error().message, HasSubstr("src/"));
}

TEST(LayOutWorkdir, WritesTheTreeIntoAFreshDirectoryOnly) {
  testing::TempDir dir;
  auto w = lay_out_workdir(dir / "w", trusted(), submission(), "{\"task\": 1}");
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(testing::read_file(w->harness_dir + "/benchmark.py"), "trusted benchmark\n");
  EXPECT_EQ(testing::read_file(w->src_dir + "/sub/helper.py"), "x = 1\n");
  EXPECT_EQ(testing::read_file(w->task_file), "{\"task\": 1}");
  EXPECT_TRUE(std::filesystem::is_directory(w->run_dir));
  EXPECT_FALSE(std::filesystem::exists(dir / "w/README.md"));
  // Never over an existing directory.
  EXPECT_FALSE(lay_out_workdir(dir / "w", trusted(), submission(), "{}").has_value());
}

TEST(WorkdirSkeleton, FillsTheSameDirectoriesAndTheSameTaskFileAsLaidOut) {
  testing::TempDir dir;
  auto skel = make_workdir_skeleton(dir / "w");
  ASSERT_TRUE(skel.has_value()) << skel.error().message;
  for (const auto* d : {".kernel_package", "src", ".kzoo/run", ".kzoo/incumbent/src"})
    EXPECT_TRUE(std::filesystem::is_directory(std::filesystem::path(dir / "w") / d)) << d;
  EXPECT_EQ(testing::read_file(skel->task_file), "");
  struct stat before {};
  ASSERT_EQ(::stat(skel->task_file.c_str(), &before), 0);

  auto w = fill_workdir(*skel, trusted(), submission(), "{\"task\": 1}");
  ASSERT_TRUE(w.has_value()) << w.error().message;
  EXPECT_EQ(w->root, skel->root);
  EXPECT_EQ(testing::read_file(w->harness_dir + "/benchmark.py"), "trusted benchmark\n");
  EXPECT_EQ(testing::read_file(w->src_dir + "/sub/helper.py"), "x = 1\n");
  EXPECT_EQ(testing::read_file(w->task_file), "{\"task\": 1}");
  EXPECT_FALSE(std::filesystem::exists(dir / "w/README.md"));
  // The task went into the placeholder's own inode: a bind made of it earlier shows it.
  struct stat after {};
  ASSERT_EQ(::stat(w->task_file.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
}

TEST(WorkdirSkeleton, IsFilledOnceAndNeverOverAnotherJobsFiles) {
  testing::TempDir dir;
  auto skel = make_workdir_skeleton(dir / "w");
  ASSERT_TRUE(skel.has_value());
  ASSERT_TRUE(fill_workdir(*skel, trusted(), submission(), "{}").has_value());
  auto again = fill_workdir(*skel, trusted(), submission(), "{}");
  ASSERT_FALSE(again.has_value());
  EXPECT_THAT(again.error().message, HasSubstr("bench_result.yaml"));
  // Nor over an existing directory.
  EXPECT_FALSE(make_workdir_skeleton(dir / "w").has_value());
}

TEST(WorkdirSkeleton, RefusesATaskPlaceholderThatIsALink) {
  testing::TempDir dir;
  auto skel = make_workdir_skeleton(dir / "w");
  ASSERT_TRUE(skel.has_value());
  std::filesystem::remove(skel->task_file);
  std::filesystem::create_symlink(dir / "elsewhere", skel->task_file);
  auto w = fill_workdir(*skel, trusted(), submission(), "{}");
  ASSERT_FALSE(w.has_value());
  EXPECT_THAT(w.error().message, HasSubstr("task.json"));
  EXPECT_FALSE(std::filesystem::exists(dir / "elsewhere"));
}

}  // namespace
}  // namespace kzoo::runner
