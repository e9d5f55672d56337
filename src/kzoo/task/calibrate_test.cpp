#include "kzoo/task/calibrate.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>
#include <algorithm>
#include <cstdlib>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kzoo/util/test_prerequisite.hpp"

namespace kzoo::task {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
namespace fs = std::filesystem;

// A task folder with the files calibration needs (contents unused by the
// tests that stop at the prerequisite checks, before Python runs).
fs::path task_dir(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) / ("calibrate_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  std::ifstream src(std::string(KZOO_SOURCE_DIR) + "/catalog/tasks/softmax/task.json");
  std::ofstream(d / "task.json") << src.rdbuf();
  for (const char* f : {"independent.py", "drop.py"}) std::ofstream(d / f) << "\n";
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What the probe prints: two shapes, two independent variants, one drop.
json probe(double drop_at_small) {
  return json{{"workload", "synthetic"}, {"comparator", "relative-frobenius"}, {"device", "cpu"},
              {"torch", "1.13.1"}, {"seeds", 2},
              {"variants", {{{"role", "independent"}, {"file", "independent.py"}},
                            {{"role", "independent"}, {"file", "independent_f64.py"}},
                            {{"role", "drop"}, {"file", "drop.py"}}}},
              {"shapes", {{{"list", "correctness"}, {"index", 0}, {"shape", {1, 2}},
                           {"measures", {{"independent.py", {1e-7, 2e-7}}, {"independent_f64.py", {3e-7, 1e-7}},
                                         {"drop.py", {drop_at_small, 0.9}}}}},
                          {{"list", "measure"}, {"index", 0}, {"shape", {64, 1024}},
                           {"measures", {{"independent.py", {5e-6, 1e-6}}, {"independent_f64.py", {2e-6, 1e-6}},
                                         {"drop.py", {0.8, 0.7}}}}}}}};
}

TEST(Calibrate, ThePerShapeFiguresAndTheShapeThatSetEachBound) {
  auto c = summarise_calibration(probe(0.5), "t/task.json", 0.01, false);
  ASSERT_TRUE(c) << c.error().message;
  ASSERT_EQ(c->shapes.size(), 2u);
  EXPECT_EQ(c->shapes[0].label, "correctness[0] [1,2]");
  EXPECT_DOUBLE_EQ(c->shapes[0].E, 3e-7);  // the worst independent variant at that shape
  EXPECT_EQ(c->shapes[0].E_variant, "independent_f64.py");
  EXPECT_DOUBLE_EQ(c->shapes[0].D, 0.5);   // the best drop there
  EXPECT_DOUBLE_EQ(c->E, 5e-6);
  EXPECT_EQ(c->E_shape, "measure[0] [64,1024]");
  EXPECT_EQ(c->E_variant, "independent.py");
  EXPECT_DOUBLE_EQ(c->D, 0.5);
  EXPECT_EQ(c->D_shape, "correctness[0] [1,2]");
  EXPECT_DOUBLE_EQ(c->range.low, 1e-5);
  EXPECT_DOUBLE_EQ(c->range.high, 0.05);
  EXPECT_TRUE(c->refusals().empty());
  EXPECT_THAT(c->basis, HasSubstr("independent.py, independent_f64.py"));
  json j = c->to_json();
  EXPECT_EQ(j["allowed"]["above"], 1e-5);
  EXPECT_EQ(j["tolerance_ok"], true);
}

TEST(Calibrate, ADropThatMatchesTheReferenceIsRefusedNamingTheShape) {
  auto c = summarise_calibration(probe(0.0), "t/task.json", 0.01, false);
  ASSERT_TRUE(c) << c.error().message;
  auto why = c->refusals();
  ASSERT_EQ(why.size(), 1u);
  EXPECT_THAT(why[0], HasSubstr("drop.py reproduces the reference"));
  EXPECT_THAT(why[0], HasSubstr("correctness[0] [1,2] (D 0 by drop.py)"));
  EXPECT_THAT(why[0], ::testing::Not(HasSubstr("measure[0]")));  // that shape tells the drop apart
  EXPECT_EQ(c->to_json()["writable"], false);
}

TEST(Calibrate, AnExactComparatorNeedsOnlyADropThatDiffers) {
  auto fine = summarise_calibration(probe(0.5), "t/task.json", 0, true);
  ASSERT_TRUE(fine);
  EXPECT_TRUE(fine->refusals().empty());
  EXPECT_TRUE(fine->to_json()["allowed"].is_null());
  auto same = summarise_calibration(probe(0.0), "t/task.json", 0, true);
  ASSERT_TRUE(same);
  EXPECT_EQ(same->refusals().size(), 1u);
}

TEST(Calibrate, ANonFiniteMeasureNamesTheVariantAndTheShape) {
  json p = probe(0.5);
  p["shapes"][1]["measures"]["drop.py"][1] = nullptr;
  auto c = summarise_calibration(p, "t/task.json", 0.01, false);
  ASSERT_FALSE(c);
  EXPECT_THAT(c.error().message, HasSubstr("drop.py gives a non-finite error at measure[0] [64,1024]"));
}

TEST(Calibrate, WriteEditsTheThreeNumbersInPlaceAndKeepsTheFilesLayout) {
  fs::path d = task_dir("write");
  const std::string before = slurp(d / "task.json");
  auto c = summarise_calibration(probe(0.5), (d / "task.json").string(), 0.01, false);
  ASSERT_TRUE(c);
  ASSERT_TRUE(write_calibration((d / "task.json").string(), *c));
  const std::string after = slurp(d / "task.json");
  auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
  EXPECT_EQ(lines(after), lines(before));
  json doc = json::parse(after);
  EXPECT_EQ(doc["grading"]["tolerance"]["measured_floor_E"], 5e-6);
  EXPECT_EQ(doc["grading"]["tolerance"]["measured_drop_D"], 0.5);
  EXPECT_EQ(doc["grading"]["tolerance"]["basis"], c->basis);
  // Everything but those three values is byte for byte what it was.
  json was = json::parse(before);
  for (const char* k : {"measured_floor_E", "measured_drop_D", "basis"}) {
    was["grading"]["tolerance"].erase(k);
    doc["grading"]["tolerance"].erase(k);
  }
  EXPECT_EQ(doc, was);
  EXPECT_EQ(after.substr(0, after.find("\"measured_floor_E\"")), before.substr(0, before.find("\"measured_floor_E\"")));
}

TEST(Calibrate, ARefusedWriteChangesNothing) {
  fs::path d = task_dir("refused");
  const std::string before = slurp(d / "task.json");
  auto c = summarise_calibration(probe(0.0), (d / "task.json").string(), 0.01, false);
  ASSERT_TRUE(c);
  auto w = write_calibration((d / "task.json").string(), *c);
  ASSERT_FALSE(w);
  EXPECT_THAT(w.error().message, HasSubstr("not written"));
  EXPECT_THAT(w.error().message, HasSubstr("correctness[0] [1,2]"));
  EXPECT_EQ(slurp(d / "task.json"), before);
  EXPECT_FALSE(fs::exists(d / "task.json.kzoo-tmp"));
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

TEST(Calibrate, AnyIndependentVariantCounts) {
  fs::path d = task_dir("variants");
  fs::rename(d / "independent.py", d / "independent_f64.py");
  CalibrateOptions o;
  o.task_dir = d.string();
  o.python = "/nonexistent/python3";  // stops at the interpreter: the variant was found
  auto r = run_calibrate(o);
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("not an executable Python"));
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

// The probe against the real judge: the catalog's softmax measures what its
// task.json records (same seeds, same shapes, same comparator).
TEST(Calibrate, TheCatalogsSoftmaxMeasuresWhatItsTaskRecords) {
  KZOO_REQUIRE_PREREQUISITE(::access("/usr/bin/python3", X_OK) == 0 &&
                                    std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0
                                ? ""
                                : "Debian's python3 with python3-torch");
  CalibrateOptions o;
  o.task_dir = std::string(KZOO_SOURCE_DIR) + "/catalog/tasks/softmax";
  auto c = run_calibrate(o);
  ASSERT_TRUE(c) << c.error().message;
  json recorded = json::parse(slurp(o.task_dir + "/task.json"))["grading"]["tolerance"];
  EXPECT_NEAR(c->E, recorded["measured_floor_E"].get<double>(), recorded["measured_floor_E"].get<double>() * 0.5);
  EXPECT_NEAR(c->D, recorded["measured_drop_D"].get<double>(), 0.05);
  EXPECT_EQ(c->shapes.size(), 9u);  // eight correctness shapes and one measure shape
  EXPECT_TRUE(c->refusals().empty());
}

}  // namespace
}  // namespace kzoo::task
