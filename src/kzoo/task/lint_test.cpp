#include "kzoo/task/lint.hpp"

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kzoo::task {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// A valid block-scaled fp8 GEMM task, small enough to read, that every rule
// test breaks in exactly one way.
json valid_task() {
  return json::parse(R"JSON({
    "name": "gemm-test",
    "family": "test",
    "description": "a block-scaled fp8 GEMM",
    "definition": {
      "entry_point": "gemm",
      "module": "gemm.py",
      "inputs": [
        {"name": "A", "shape": ["M", "K"], "dtype": "float8_e4m3fn",
         "quantized": {"format": "float8_e4m3fn", "scale_granularity": "per-block", "block_size": 128}},
        {"name": "A_scale", "shape": ["M", "cdiv(K, 128)"], "dtype": "float32"},
        {"name": "B", "shape": ["N", "K"], "dtype": "float8_e4m3fn",
         "quantized": {"format": "float8_e4m3fn", "scale_granularity": "per-block", "block_size": 128}},
        {"name": "B_scale", "shape": ["cdiv(N, 128)", "cdiv(K, 128)"], "dtype": "float32"}
      ],
      "outputs": [{"name": "out", "shape": ["M", "N"], "dtype": "bfloat16"}],
      "reference": {"language": "python/pytorch",
                    "source": "import torch\n\ndef gemm(A, A_scale, B, B_scale):\n    return A\n"}
    },
    "workloads": {
      "synthetic": {
        "dims": ["M", "N", "K"],
        "graded": [[8192, 8192, 8192]],
        "correctness": [[1, 1, 1], [129, 257, 1000]],
        "measure": [[64, 128, 256]],
        "roofline_us": 555.6
      }
    },
    "grading": {
      "metric": "TFLOP/s",
      "reward": {"kind": "absolute-uncapped", "canonical_work": "2*M*N*K"},
      "tolerance": {"value": 0.01, "comparator": "relative-frobenius",
                    "measured_floor_E": 0.0001, "measured_drop_D": 1.0}
    }
  })JSON");
}

DeviceClass h200() {
  return DeviceClass{"h200", 4800, {{"bfloat16", 989}, {"float32", 67}, {"float8_e4m3fn", 1979}}};
}

Violations lint_json(const json& doc) {
  auto t = task_from_json(doc, "tasks/t/task.json");
  if (!t) return t.error();
  return lint_task(*t, LintOptions{h200()});
}

// Lints valid_task() after `edit`, and expects exactly `rule` to fire (at
// least once) and nothing else, so every test pins one rule.
Violations expect_only(const std::string& rule, const std::function<void(json&)>& edit) {
  json doc = valid_task();
  edit(doc);
  Violations vs = lint_json(doc);
  EXPECT_TRUE(has_rule(vs, rule)) << "expected " << rule << ", got " << to_json(vs).dump(2);
  for (const auto& v : vs) {
    EXPECT_EQ(v.rule, rule) << to_string(v);
    EXPECT_EQ(v.path, "tasks/t/task.json");
    EXPECT_FALSE(v.detail.empty());
  }
  return vs;
}

std::string details(const Violations& vs) {
  std::string out;
  for (const auto& v : vs) out += v.pointer + " " + v.detail + "\n";
  return out;
}

TEST(TaskLint, TheValidTaskIsClean) {
  Violations vs = lint_json(valid_task());
  EXPECT_TRUE(vs.empty()) << to_json(vs).dump(2);
}

TEST(TaskLint, EveryCatalogTaskIsClean) {
  auto device = load_device_class(default_device_classes_path(), "h200");
  ASSERT_TRUE(device) << device.error().message;
  int seen = 0;
  for (const auto& dir : fs::directory_iterator(std::string(KZOO_SOURCE_DIR) + "/catalog/tasks")) {
    const auto file = dir.path() / "task.json";
    Violations vs = lint_task_file(file.string(), LintOptions{*device});
    EXPECT_TRUE(vs.empty()) << file << "\n" << to_json(vs).dump(2);
    EXPECT_TRUE(fs::exists(dir.path() / "independent.py")) << dir.path();
    EXPECT_TRUE(fs::exists(dir.path() / "drop.py")) << dir.path();
    ++seen;
  }
  EXPECT_GE(seen, 12);  // docs/CATALOG.md
}

TEST(TaskLint, SchemaViolationsComeThroughAsTheyAre) {
  json doc = valid_task();
  doc.erase("grading");
  Violations vs = lint_json(doc);
  EXPECT_TRUE(has_rule(vs, "schema.required")) << to_json(vs).dump(2);
}

TEST(TaskLint, MissingOrUnparsableFilesAreNamed) {
  Violations missing = lint_task_file("/nonexistent/task.json", LintOptions{h200()});
  ASSERT_EQ(missing.size(), 1u);
  EXPECT_EQ(missing[0].rule, "task.io");
  EXPECT_EQ(missing[0].path, "/nonexistent/task.json");

  const std::string path = ::testing::TempDir() + "/lint_bad_syntax.json";
  std::ofstream(path) << "{\"name\": \"x\",}";
  Violations bad = lint_task_file(path, LintOptions{h200()});
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].rule.rfind("json.", 0), 0u) << to_string(bad[0]);
}

// ---- the library gate's opt-ins

TEST(TaskLint, AllowedLibrariesNeedARationale) {
  auto vs = expect_only("task.allowed-libraries-rationale",
                        [](json& d) { d["grading"]["allowed_libraries"] = json::array({"cublas"}); });
  EXPECT_EQ(vs[0].pointer, "/grading/allowed_libraries");
  json doc = valid_task();
  doc["grading"]["allowed_libraries"] = json::array({"cublas", "cutlass"});
  doc["difficulty"] = {{"tier", "T3"}, {"rationale", "the block scaling is the kernel; the GEMM may be cuBLAS's"}};
  Violations ok = lint_json(doc);
  EXPECT_TRUE(ok.empty()) << to_json(ok).dump(2);
}

TEST(TaskLint, AllowedLibrariesAreKnownFamiliesListedOnce) {
  for (const json& bad : {json::array({"mkl"}), json::array({"cublas", "cublas"}), json("cublas")}) {
    json doc = valid_task();
    doc["difficulty"] = {{"tier", "T3"}, {"rationale", "r"}};
    doc["grading"]["allowed_libraries"] = bad;
    Violations vs = lint_json(doc);
    EXPECT_FALSE(vs.empty()) << bad.dump();
  }
}

// ---- canonical_work

TEST(TaskLint, WorkMustBeGiven) {
  expect_only("task.work-missing", [](json& d) { d["grading"]["reward"].erase("canonical_work"); });
}

TEST(TaskLint, WorkMustParse) {
  auto vs = expect_only("task.work-expr", [](json& d) { d["grading"]["reward"]["canonical_work"] = "2*M*N*"; });
  EXPECT_EQ(vs[0].pointer, "/grading/reward/canonical_work");
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("column 7"));
}

TEST(TaskLint, WorkMayUseOnlyTheWorkloadsDims) {
  auto vs = expect_only("task.work-dim", [](json& d) { d["grading"]["reward"]["canonical_work"] = "2*M*N*Q"; });
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("uses Q"));
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("dims are M, N, K"));
}

TEST(TaskLint, WorkMustBePositiveAtEveryShape) {
  auto vs = expect_only("task.work-value", [](json& d) { d["grading"]["reward"]["canonical_work"] = "2*M*N*(K - 1)"; });
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("[1,1,1]"));
}

// ---- shapes

TEST(TaskLint, ShapeTuplesHaveOneValuePerDim) {
  auto vs = expect_only("task.shape-arity", [](json& d) { d["workloads"]["synthetic"]["measure"][0] = {64, 128}; });
  EXPECT_EQ(vs[0].pointer, "/workloads/synthetic/measure/0");
}

TEST(TaskLint, SymbolicShapesMustParse) {
  auto vs = expect_only("task.shape-expr", [](json& d) { d["definition"]["inputs"][1]["shape"][1] = "cdiv(K,"; });
  EXPECT_EQ(vs[0].pointer, "/definition/inputs/1/shape/1");
}

TEST(TaskLint, SymbolicShapesUseKnownDims) {
  expect_only("task.shape-dim", [](json& d) { d["definition"]["outputs"][0]["shape"][1] = "Z"; });
}

TEST(TaskLint, SymbolicShapesAreNonNegativeIntegersAtEveryShape) {
  // N - 200 is negative at the correctness shape N = 1.
  auto vs = expect_only("task.shape-value", [](json& d) { d["definition"]["outputs"][0]["shape"][1] = "N - 200"; });
  EXPECT_THAT(details(vs), ::testing::HasSubstr("[1,1,1]"));
}

TEST(TaskLint, BlockScaleShapesMustUseCdivForRaggedSizes) {
  auto vs = expect_only("task.quant-scale-shape",
                        [](json& d) { d["definition"]["inputs"][1]["shape"][1] = "K // 128"; });
  // K // 128 is 0 at K = 1 (one partial block) and 7 at K = 1000 (8 blocks).
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("cdiv(1, 128) = 1"));
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("write the extent with cdiv()"));
  EXPECT_EQ(vs[0].pointer, "/definition/inputs/1/shape/1");
}

TEST(TaskLint, FractionalExtentsAreShapeValueErrors) {
  json doc = valid_task();
  doc["definition"]["inputs"][1]["shape"][1] = "K / 128";
  Violations vs = lint_json(doc);
  EXPECT_TRUE(has_rule(vs, "task.shape-value")) << to_json(vs).dump(2);
  EXPECT_THAT(details(vs), ::testing::HasSubstr("gives 0.0078125 (use cdiv() or // to round)"));
}

// ---- roofline

TEST(TaskLint, GradedShapesMustReachTheRoofline) {
  auto vs = expect_only("task.roofline", [](json& d) {
    d["workloads"]["synthetic"]["graded"].push_back({1024, 1024, 1024});
  });
  EXPECT_EQ(vs[0].pointer, "/workloads/synthetic/graded/1");
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("1.085 us"));  // 2*1024^3 / 1979 TFLOP/s
}

TEST(TaskLint, StatedRooflineMustMatchTheLargestGradedShape) {
  auto vs = expect_only("task.roofline-us", [](json& d) { d["workloads"]["synthetic"]["roofline_us"] = 300; });
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("555.6"));
  // Within 5% passes.
  json ok = valid_task();
  ok["workloads"]["synthetic"]["roofline_us"] = 530;
  EXPECT_TRUE(lint_json(ok).empty());
}

TEST(TaskLint, RooflineUsesTheDominantInputDtype) {
  auto t = task_from_json(valid_task(), "t.json");
  ASSERT_TRUE(t);
  json dims{{"M", 8192}, {"N", 8192}, {"K", 8192}};
  EXPECT_EQ(dominant_input_dtype(*t, dims), "float8_e4m3fn");
  auto r = roofline_us(*t, *WorkExpr::parse("2*M*N*K"), dims, h200());
  ASSERT_TRUE(r && r->has_value());
  EXPECT_NEAR(**r, 555.59, 0.01);
}

TEST(TaskLint, BandwidthRooflineIsBytesOverBandwidth) {
  json doc = valid_task();
  doc["grading"]["metric"] = "GB/s";
  auto t = task_from_json(doc, "t.json");
  ASSERT_TRUE(t);
  auto r = roofline_us(*t, *WorkExpr::parse("4.8e9"), json::object(), h200());
  ASSERT_TRUE(r && r->has_value());
  EXPECT_DOUBLE_EQ(**r, 1000.0);  // 4.8 GB at 4800 GB/s
}

// ---- tolerance

TEST(TaskLint, ToleranceNeedsCalibration) {
  auto vs = expect_only("task.uncalibrated", [](json& d) { d["grading"]["tolerance"].erase("measured_drop_D"); });
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("kzoo task calibrate"));
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("measured_drop_D"));
}

TEST(TaskLint, ATasksOwnElementwiseAtolSaysWhy) {
  auto vs = expect_only("task.elementwise-atol-why", [](json& d) { d["grading"]["tolerance"]["elementwise_atol"] = 0.1; });
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("elementwise_atol_why"));
  json doc = valid_task();
  doc["grading"]["tolerance"]["elementwise_atol"] = 0.1;
  doc["grading"]["tolerance"]["elementwise_atol_why"] = "calibration at K=4097 put an element 0.0178 off";
  EXPECT_TRUE(lint_json(doc).empty()) << to_json(lint_json(doc)).dump(2);
}

TEST(TaskLint, ToleranceMustSitAboveTwiceTheFloor) {
  auto vs = expect_only("task.tolerance-floor", [](json& d) { d["grading"]["tolerance"]["measured_floor_E"] = 0.006; });
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("0.012"));
}

TEST(TaskLint, ToleranceMustSitFarBelowTheDrop) {
  auto vs = expect_only("task.tolerance-drop", [](json& d) { d["grading"]["tolerance"]["measured_drop_D"] = 0.05; });
  EXPECT_EQ(vs[0].pointer, "/grading/tolerance/value");
}

TEST(TaskLint, AT4TaskMustBeReviewedByHand) {
  auto vs = expect_only("task.reviewed-by-hand", [](json& d) { d["difficulty"] = {{"tier", "T4"}}; });
  EXPECT_EQ(vs[0].pointer, "/difficulty/reviewed_by_hand");
  expect_only("task.reviewed-by-hand",
              [](json& d) { d["difficulty"] = {{"tier", "T4"}, {"reviewed_by_hand", false}}; });
  json doc = valid_task();
  doc["difficulty"] = {{"tier", "T4"}, {"reviewed_by_hand", true}};
  EXPECT_TRUE(lint_json(doc).empty());
  doc["difficulty"] = {{"tier", "T3"}};  // only T4 claims the hardware limit
  EXPECT_TRUE(lint_json(doc).empty());
}

TEST(TaskLint, RowwiseNeedsARowPassFraction) {
  expect_only("task.row-pass", [](json& d) { d["grading"]["tolerance"]["comparator"] = "rowwise"; });
  expect_only("task.row-pass", [](json& d) {
    d["grading"]["tolerance"]["comparator"] = "rowwise";
    d["grading"]["tolerance"]["row_pass"] = 1.5;
  });
  json ok = valid_task();
  ok["grading"]["tolerance"]["comparator"] = "rowwise";
  ok["grading"]["tolerance"]["row_pass"] = 1;
  EXPECT_TRUE(lint_json(ok).empty());
}

// ---- quantised inputs

TEST(TaskLint, QuantisedInputsNeedAFloat32ScaleInput) {
  expect_only("task.quant-scale", [](json& d) { d["definition"]["inputs"][1]["dtype"] = "float16"; });
  expect_only("task.quant-scale", [](json& d) { d["definition"]["inputs"][1]["name"] = "A_scales"; });
}

TEST(TaskLint, PerTensorScalesAreScalars) {
  auto vs = expect_only("task.quant-scale-shape", [](json& d) {
    d["definition"]["inputs"][0]["quantized"] = {{"format", "float8_e4m3fn"}, {"scale_granularity", "per-tensor"}};
    d["definition"]["inputs"][1]["shape"] = {"M"};
  });
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("power-of-two"));
  for (json shape : {json::array(), json::array({1})}) {
    json ok = valid_task();
    ok["definition"]["inputs"][0]["quantized"] = {{"format", "float8_e4m3fn"}, {"scale_granularity", "per-tensor"}};
    ok["definition"]["inputs"][1]["shape"] = shape;
    EXPECT_TRUE(lint_json(ok).empty()) << shape.dump();
  }
}

TEST(TaskLint, PerBlockScalesNeedABlockSizeAndMatchingRank) {
  expect_only("task.quant-block-size", [](json& d) { d["definition"]["inputs"][2]["quantized"].erase("block_size"); });
  expect_only("task.quant-scale-shape", [](json& d) { d["definition"]["inputs"][3]["shape"] = {"cdiv(N, 128)"}; });
}

TEST(TaskLint, QuantisedInputsNameTheirGranularity) {
  expect_only("task.quant-granularity",
              [](json& d) { d["definition"]["inputs"][0]["quantized"].erase("scale_granularity"); });
}

// ---- interface

TEST(TaskLint, InPlaceOutputsNameInputs) {
  expect_only("task.in-place", [](json& d) {
    d["definition"]["in_place_outputs"] = {"nope"};
    d["definition"]["read_only_inputs"] = false;
  });
}

TEST(TaskLint, InPlaceOutputsMatchTheirInput) {
  auto vs = expect_only("task.in-place", [](json& d) {
    d["definition"]["in_place_outputs"] = {"A_scale"};
    d["definition"]["read_only_inputs"] = false;
    d["definition"]["outputs"].push_back({{"name", "A_scale"}, {"shape", {"M"}}, {"dtype", "float32"}});
  });
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("must match"));
  expect_only("task.in-place", [](json& d) {
    d["definition"]["outputs"].push_back({{"name", "A_scale"}, {"shape", {"M", "cdiv(K, 128)"}}, {"dtype", "float32"}});
  });
}

TEST(TaskLint, ReadOnlyInputsAgreesWithInPlaceOutputs) {
  expect_only("task.read-only", [](json& d) { d["definition"]["read_only_inputs"] = false; });
  expect_only("task.read-only", [](json& d) { d["definition"]["in_place_outputs"] = {"A_scale"}; });
}

TEST(TaskLint, EntryPointIsAPythonIdentifier) {
  // The reference defines neither, so that rule stays quiet (it only checks
  // names that could be defined).
  expect_only("task.entry-point", [](json& d) { d["definition"]["entry_point"] = "1gemm"; });
  expect_only("task.entry-point", [](json& d) { d["definition"]["entry_point"] = "class"; });
}

TEST(TaskLint, ModuleIsAPlainPythonFile) {
  expect_only("task.module", [](json& d) { d["definition"]["module"] = "gemm.cu"; });
  expect_only("task.module", [](json& d) { d["definition"]["module"] = "../gemm.py"; });
  auto vs = expect_only("task.module", [](json& d) { d["definition"].erase("module"); });
  EXPECT_THAT(vs[0].detail, ::testing::HasSubstr("gemm.py"));
}

TEST(TaskLint, ReferenceDefinesTheEntryPoint) {
  expect_only("task.reference-entry-point",
              [](json& d) { d["definition"]["reference"]["source"] = "def gemm_ref(A, A_scale, B, B_scale):\n  pass\n"; });
  expect_only("task.reference-entry-point",
              [](json& d) { d["definition"]["reference"]["source"] = "# def gemm(\n"; });
}

TEST(TaskLint, DeviceClassesNameTheUnknownClass) {
  json doc = {{"default", "h200"}, {"classes", {{"h200", {{"bandwidth_GBps", 4800}}}}}};
  EXPECT_EQ(device_class_from_json(doc, "")->name, "h200");
  auto bad = device_class_from_json(doc, "a100");
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.error().message, ::testing::HasSubstr("known: h200"));
}

// ---- the CLI verb

int run(const std::string& args, std::string* out) {
  std::string cmd = std::string(KZOO_BINARY) + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int status = pclose(p);
  return WEXITSTATUS(status);
}

TEST(TaskLintCli, ExitCodesAndJson) {
  const std::string good = std::string(KZOO_SOURCE_DIR) + "/catalog/tasks/softmax/task.json";
  std::string out;
  EXPECT_EQ(run("task lint " + good + " --json", &out), 0);
  json doc = json::parse(out);
  EXPECT_EQ(doc["ok"], true);
  EXPECT_EQ(doc["device_class"], "h200");

  json broken = valid_task();
  broken["workloads"]["synthetic"]["roofline_us"] = 1;
  const std::string path = ::testing::TempDir() + "/lint_cli_broken.json";
  std::ofstream(path) << broken.dump();
  out.clear();
  EXPECT_EQ(run("task lint " + path + " --json", &out), 1);
  EXPECT_EQ(json::parse(out)["violations"][0]["rule"], "task.roofline-us");

  out.clear();
  EXPECT_EQ(run("task lint /nonexistent/task.json", &out), 2);
  EXPECT_EQ(run("task lint " + good + " --device-class a100", &out), 2);
}

}  // namespace
}  // namespace kzoo::task
