// What `kzoo grade` refuses before anything runs, and where it finds its
// catalog and rules. The sandboxed A/B itself is driven end to end by
// tests/cli/grade.sh and tests/cli/maintainer_path.sh; that it decides as the
// worker does is board::decide_run's (board/decision_test.cpp,
// worker/worker_test.cpp).
#include "kzoo/local/local_grade.hpp"

#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kzoo/package/package_tree.hpp"

namespace kzoo::local {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kCatalog = std::string(KZOO_SOURCE_DIR) + "/catalog";
const std::string kSoftmax = "h200/norm/softmax/bf16/softmax_eager";

PackageInput catalog_package(const std::string& kernel_id) {
  auto t = package::read_package_dir(kCatalog + "/kernel_data/" + kernel_id);
  EXPECT_TRUE(t) << t.error().message;
  return PackageInput{"pkg", kernel_id, std::move(t->tree), {}};
}

LocalGradeOptions options() {
  LocalGradeOptions o;
  o.catalog_dir = kCatalog;
  o.grade.judge_dir = std::string(KZOO_SOURCE_DIR) + "/judge";
  return o;
}

TEST(LocalGrade, TheCatalogIsTheOneHoldingThePackagesKernelDataRoot) {
  EXPECT_EQ(catalog_of_root(kCatalog + "/kernel_data"), fs::path(kCatalog).lexically_normal().string());
  EXPECT_EQ(catalog_of_root(kCatalog + "/kernel_data/"), fs::path(kCatalog).lexically_normal().string());
  EXPECT_EQ(catalog_of_root(kCatalog + "/tasks/softmax"), std::nullopt);  // its parent holds no tasks/
}

TEST(LocalGrade, WithoutAProjectsRulesTheRunIsHeldToThoseKzooInitWrites) {
  auto r = default_rules(kCatalog, kSoftmax, "cpu");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->kernels, std::vector<std::string>{kSoftmax});
  EXPECT_EQ(r->timed_runs, 100);
  EXPECT_EQ(r->atol, 0.01);
  EXPECT_EQ(r->device_class, "cpu");
}

TEST(LocalGrade, APackageThatBreaksARuleIsRejectedBeforeAnythingRuns) {
  PackageInput p = catalog_package(kSoftmax);
  p.tree.files.push_back({"src/weights.pt", std::string("\x80\x02\x8a\x0a", 4) + std::string(64, '\0'), false});
  auto g = grade_locally(p, std::nullopt, options());
  EXPECT_EQ(g.status, runner::GradeStatus::rejected);
  EXPECT_THAT(g.summary, HasSubstr("the package breaks"));
  EXPECT_FALSE(g.graded.violations.empty());
  EXPECT_FALSE(g.decision);
}

TEST(LocalGrade, AnIncumbentOfAnotherKernelIsRefused) {
  PackageInput p = catalog_package(kSoftmax);
  PackageInput other = catalog_package("h200/norm/layernorm/bf16/layernorm_eager");
  auto g = grade_locally(p, other, options());
  EXPECT_EQ(g.status, runner::GradeStatus::error);
  EXPECT_THAT(g.summary, HasSubstr("an A/B compares two sources of one kernel"));
}

TEST(LocalGrade, ABaselineIsMeasuredAloneNeverAgainstAnIncumbent) {
  auto o = options();
  o.baseline = true;
  auto g = grade_locally(catalog_package(kSoftmax), catalog_package(kSoftmax), o);
  EXPECT_EQ(g.status, runner::GradeStatus::error);
  EXPECT_THAT(g.summary, HasSubstr("a baseline is measured, not compared"));
  EXPECT_FALSE(g.decision);
}

TEST(LocalGrade, ADeviceTheTaskRulesOutIsRefusedBeforeAnythingRuns) {
  auto o = options();
  o.grade.device = "cuda";
  o.device = DeviceFacts{"cuda", 1, "NVIDIA A100-SXM4-80GB", "8.0"};
  auto g = grade_locally(catalog_package(kSoftmax), std::nullopt, o);
  EXPECT_EQ(g.status, runner::GradeStatus::error);
  EXPECT_THAT(g.summary, HasSubstr("refused before running"));
  EXPECT_THAT(g.summary, HasSubstr("compute capability 9.0 or more"));
  EXPECT_TRUE(g.graded.document.is_null());
}

TEST(LocalGrade, AKernelTheCatalogLacksRunsItsOwnHarnessAndSaysItIsUntrusted) {
  PackageInput p = catalog_package(kSoftmax);
  p.kernel_id = "x/elsewhere";
  for (auto& f : p.tree.files)
    if (f.path == ".kernel_package/bench_result.yaml")
      f.content.replace(f.content.find(kSoftmax), kSoftmax.size(), p.kernel_id);
  auto o = options();
  o.task_file = "/nonexistent/task.json";  // stop right after the harness is chosen
  auto g = grade_locally(p, std::nullopt, o);
  EXPECT_FALSE(g.trusted_harness);
  ASSERT_FALSE(g.graded.warnings.empty());
  EXPECT_THAT(g.graded.warnings[0], HasSubstr("untrusted harness"));
  EXPECT_EQ(g.status, runner::GradeStatus::error);
  EXPECT_THAT(g.summary, HasSubstr("/nonexistent/task.json"));
}

}  // namespace
}  // namespace kzoo::local
