#include "kzoo/task/skeleton.hpp"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kzoo/task/lint.hpp"

namespace kzoo::task {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using nlohmann::json;

fs::path fresh(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) / ("skeleton_" + name);
  fs::remove_all(d);
  return d;
}

TEST(TaskSkeleton, AFreshCatalogGetsItsLayoutAndTheThreeTaskFiles) {
  fs::path cat = fresh("layout") / "catalog";
  auto w = write_task_skeleton(cat.string(), "fused-silu");
  ASSERT_TRUE(w) << w.error().message;
  EXPECT_EQ(w->task_dir, (cat / "tasks" / "fused-silu").string());
  for (const char* f : {"tasks/fused-silu/task.json", "tasks/fused-silu/independent.py", "tasks/fused-silu/drop.py",
                        "kernel_data/.kernel_data", "device_classes.json"})
    EXPECT_TRUE(fs::is_regular_file(cat / f)) << f;
  EXPECT_EQ(w->files.size(), 5u);
}

TEST(TaskSkeleton, TheTaskIsSchemaValidAndOnlyAwaitsCalibration) {
  fs::path cat = fresh("lint") / "catalog";
  auto w = write_task_skeleton(cat.string(), "2bit-thing");
  ASSERT_TRUE(w) << w.error().message;
  auto device = load_device_class(default_device_classes_path(), "h200");
  ASSERT_TRUE(device);
  Violations vs = lint_task_file(w->task_dir + "/task.json", LintOptions{*device});
  ASSERT_EQ(vs.size(), 1u) << to_json(vs).dump(2);
  EXPECT_EQ(vs[0].rule, "task.uncalibrated");

  auto t = load_task(w->task_dir + "/task.json");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->entry_point, "op_2bit_thing");  // a Python name, though the task's starts with a digit
  json doc = t->doc;
  doc["grading"]["tolerance"]["measured_floor_E"] = 1e-7;
  doc["grading"]["tolerance"]["measured_drop_D"] = 0.3;
  auto calibrated = task_from_json(doc, "task.json");
  ASSERT_TRUE(calibrated);
  EXPECT_TRUE(lint_task(*calibrated, LintOptions{*device}).empty());
}

TEST(TaskSkeleton, TheHelpersDefineTheFunctionsCalibrationCalls) {
  EXPECT_THAT(skeleton_independent_py("x"), HasSubstr("\ndef independent(x):"));
  EXPECT_THAT(skeleton_drop_py("x"), HasSubstr("\ndef drop(x):"));
}

TEST(TaskSkeleton, AnExistingTaskIsNeverOverwritten) {
  fs::path cat = fresh("exists") / "catalog";
  ASSERT_TRUE(write_task_skeleton(cat.string(), "one"));
  std::ofstream(cat / "tasks" / "one" / "task.json") << "{\"mine\": true}\n";
  auto again = write_task_skeleton(cat.string(), "one");
  ASSERT_FALSE(again);
  EXPECT_THAT(again.error().message, HasSubstr("exists already"));
  std::ifstream in(cat / "tasks" / "one" / "task.json");
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "{\"mine\": true}\n");
  // A second task in the same catalog leaves the first and the layout alone.
  ASSERT_TRUE(write_task_skeleton(cat.string(), "two"));
}

TEST(TaskSkeleton, ANameTheSchemaRefusesWritesNothing) {
  fs::path root = fresh("names");
  for (const char* bad : {"Fused", "a--b", "-a", "a_b", "../x", "", "a/b"}) {
    auto w = write_task_skeleton((root / "catalog").string(), bad);
    ASSERT_FALSE(w) << bad;
    EXPECT_THAT(w.error().message, HasSubstr("is not a task name"));
  }
  EXPECT_FALSE(fs::exists(root));
}

}  // namespace
}  // namespace kzoo::task
