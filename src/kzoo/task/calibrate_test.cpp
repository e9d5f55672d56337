#include "kzoo/task/calibrate.hpp"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kzoo::task {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

// A task folder with the three files calibration needs (contents unused here:
// these tests stop at the prerequisite checks, before Python runs).
fs::path task_dir(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) / ("calibrate_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  for (const char* f : {"task.json", "independent.py", "drop.py"}) std::ofstream(d / f) << "\n";
  return d;
}

TEST(Calibrate, RunsTheJudgesCalibrateCommand) {
  CalibrateOptions o;
  o.task_dir = "catalog/tasks/softmax";
  o.device = "cuda";
  o.write = true;
  EXPECT_EQ(calibrate_argv(o), (std::vector<std::string>{"/usr/bin/python3", "-m", "kzoo_judge", "calibrate",
                                                         "--task-dir", "catalog/tasks/softmax", "--device", "cuda",
                                                         "--write"}));
}

TEST(Calibrate, NamesAMissingHelperFile) {
  fs::path d = task_dir("nodrop");
  fs::remove(d / "drop.py");
  CalibrateOptions o;
  o.task_dir = d.string();
  auto r = run_calibrate(o);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("drop.py is missing"));
}

TEST(Calibrate, NamesAMissingInterpreter) {
  CalibrateOptions o;
  o.task_dir = task_dir("nopython").string();
  o.python = "/nonexistent/python3";
  auto r = run_calibrate(o);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("not an executable Python"));
}

TEST(Calibrate, NamesAMissingJudge) {
  CalibrateOptions o;
  o.task_dir = task_dir("nojudge").string();
  o.judge_dir = (fs::path(::testing::TempDir()) / "no_judge_here").string();
  auto r = run_calibrate(o);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("kzoo_judge is missing"));
}

TEST(Calibrate, NamesAnInterpreterWithoutTorch) {
  // /bin/false stands in for a Python whose `import torch` fails.
  fs::path judge = fs::path(::testing::TempDir()) / "fake_judge";
  fs::create_directories(judge / "kzoo_judge");
  std::ofstream(judge / "kzoo_judge" / "__init__.py") << "\n";
  CalibrateOptions o;
  o.task_dir = task_dir("notorch").string();
  o.python = "/bin/false";
  o.judge_dir = judge.string();
  auto r = run_calibrate(o);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("cannot import torch"));
}

TEST(Calibrate, RefusesAnUnknownDevice) {
  CalibrateOptions o;
  o.task_dir = task_dir("device").string();
  o.device = "tpu";
  auto r = run_calibrate(o);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("cpu or cuda"));
}

}  // namespace
}  // namespace kzoo::task
