#include "kzoo/package/inspect.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "kzoo/format/json_schema.hpp"

namespace kzoo::package {
namespace {

const char* kDesc = R"(schema_version: "1"
name: softmax
category: {arch: hopper, op_class: norm, sub_class: softmax, quant: fp32}
summary: Row softmax
description: Softmax over the last dimension of a 2-D fp32 tensor.
io_signature:
  - {name: x, direction: in, dtype: float32, shape: [M, N]}
  - {name: y, direction: out, dtype: float32, shape: [M, N]}
quantization: {scheme: none}
reference_sources:
  - {kind: task, ref: softmax}
)";

const char* kBenchResult = R"(schema_version: "1"
kernel_id: hopper/norm/softmax/fp32/triton
cases:
  - test_case_id: small
    metrics_best: {latency_us: 181.2}
    metrics_current: {latency_us: 182.9}
)";

std::string benchmark_py(const std::string& metas) {
  return "import sys\n\nKERNEL_ZOO_TEST_CASE_METAS = " + metas +
         "\n\nif __name__ == \"__main__\":\n    from kzoo_judge.entry import run_package_benchmark\n"
         "    sys.exit(run_package_benchmark(KERNEL_ZOO_TEST_CASE_METAS))\n";
}

std::string meta_case(const std::string& id, const std::string& primary = "latency_us",
                      const std::string& metrics = R"([{"name": "latency_us", "unit": "us", "direction": "lower"}])") {
  return R"({"test_case_id": ")" + id + R"(", "params": {"workload": "synthetic", "shape": {"M": 64, "N": 64}},
     "primary_metric": ")" + primary + R"(", "metrics": )" + metrics + R"(,
     "tolerance": {"correctness_atol": 1e-3, "correctness_rtol": 1e-3}})";
}

const char* kKernel = "import torch\n\n\ndef softmax(x):\n    return torch.softmax(x, dim=-1)\n";

// A package tree built in memory, with every ancestor directory listed.
class TreeBuilder {
 public:
  TreeBuilder() {
    files_[".kernel_package/desc.yaml"] = kDesc;
    files_[".kernel_package/bench_result.yaml"] = kBenchResult;
    files_[".kernel_package/build_test_env.py"] = "from kzoo_judge.entry import build_test_env\nbuild_test_env()\n";
    files_[".kernel_package/benchmark.py"] = benchmark_py("[" + meta_case("small") + ", " + meta_case("large") + "]");
    files_["src/softmax.py"] = kKernel;
  }
  TreeBuilder& set(const std::string& path, const std::string& content) {
    files_[path] = content;
    return *this;
  }
  TreeBuilder& erase(const std::string& path) {
    files_.erase(path);
    return *this;
  }
  TreeBuilder& dir(const std::string& path) {
    extra_dirs_.insert(path);
    return *this;
  }
  PackageTree build() const {
    PackageTree t;
    std::set<std::string> dirs(extra_dirs_);
    for (const auto& [path, content] : files_) {
      t.files.push_back(PackageFile{path, content});
      for (std::size_t p = path.find('/'); p != std::string::npos; p = path.find('/', p + 1))
        dirs.insert(path.substr(0, p));
    }
    t.dirs.assign(dirs.begin(), dirs.end());
    return t;
  }

 private:
  std::map<std::string, std::string> files_;
  std::set<std::string> extra_dirs_;
};

const std::string kId = "hopper/norm/softmax/fp32/triton";

Inspection inspect(const TreeBuilder& b, const std::string& id = kId) { return inspect_tree(b.build(), id, "pkg"); }

std::string rules(const Violations& vs) {
  std::string s;
  for (const auto& v : vs) s += to_string(v) + "\n";
  return s;
}

const Violation* find_rule(const Violations& vs, const std::string& rule) {
  auto it = std::find_if(vs.begin(), vs.end(), [&](const Violation& v) { return v.rule == rule; });
  return it == vs.end() ? nullptr : &*it;
}

TEST(Inspect, AWellFormedPackageHasNoViolations) {
  auto r = inspect(TreeBuilder());
  EXPECT_TRUE(r.ok()) << rules(r.violations);
  EXPECT_EQ(r.kernel_id, kId);
  EXPECT_EQ(r.meta["path"], "pkg");
  EXPECT_EQ(r.meta["kernel_id"], kId);
  EXPECT_EQ(r.meta["has_dot_kernel_package"], true);
  EXPECT_EQ(r.meta["required_files_present"].size(), 4u);
  EXPECT_TRUE(r.meta["required_files_missing"].empty());
  EXPECT_TRUE(r.meta["violations"].is_array() && r.meta["violations"].empty());
  EXPECT_EQ(r.desc["name"], "softmax");
  ASSERT_TRUE(r.metas.is_array());
  EXPECT_EQ(r.metas.size(), 2u);
}

TEST(Inspect, TheMetaDocumentFollowsItsSchema) {
  auto good = inspect(TreeBuilder());
  auto bad = inspect(TreeBuilder().erase(".kernel_package/desc.yaml").set("src/w.pt", "x"));
  for (const auto* r : {&good, &bad}) {
    auto vs = format::SchemaSet::bundled().validate(r->meta, "kernel_package_meta", "meta");
    EXPECT_TRUE(vs.empty()) << rules(vs);
  }
}

TEST(Inspect, ReadmeLicenseAndBuildFilesMaySitAtTheTop) {
  auto r = inspect(TreeBuilder()
                       .set("README.md", "# softmax\n\nA row softmax.\n")
                       .set("LICENSE", "MIT License\n")
                       .set(".gitignore", "__pycache__/\n")
                       .set("setup.py", "from setuptools import setup\nsetup(name='k')\n"));
  EXPECT_TRUE(r.ok()) << rules(r.violations);
}

TEST(Inspect, MissingRequiredFilesAreEachReported) {
  auto r = inspect(TreeBuilder().erase(".kernel_package/bench_result.yaml").erase(".kernel_package/benchmark.py"));
  std::size_t missing = std::count_if(r.violations.begin(), r.violations.end(),
                                      [](const Violation& v) { return v.rule == "package.missing-file"; });
  EXPECT_EQ(missing, 2u) << rules(r.violations);
  EXPECT_EQ(r.meta["required_files_missing"],
            nlohmann::json({".kernel_package/bench_result.yaml", ".kernel_package/benchmark.py"}));
  EXPECT_TRUE(r.metas.is_null());
  const Violation* v = find_rule(r.violations, "package.missing-file");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->path, "pkg/.kernel_package/bench_result.yaml");
}

TEST(Inspect, NoDotKernelPackageAtAll) {
  TreeBuilder b;
  for (const char* f : kRequiredFiles) b.erase(f);
  auto r = inspect(b);
  EXPECT_EQ(r.meta["has_dot_kernel_package"], false);
  EXPECT_EQ(r.meta["required_files_missing"].size(), 4u);
  EXPECT_TRUE(has_rule(r.violations, "package.missing-file"));
}

TEST(Inspect, APackageWithoutSourceIsRefused) {
  EXPECT_TRUE(has_rule(inspect(TreeBuilder().erase("src/softmax.py")).violations, "package.no-source"));
  EXPECT_TRUE(has_rule(inspect(TreeBuilder().erase("src/softmax.py").dir("src")).violations, "package.no-source"));
}

TEST(Inspect, StrayTopLevelEntriesAndExtraMetadataFilesAreRefused) {
  auto r = inspect(TreeBuilder()
                       .set("bench.py", "print('hi')\n")
                       .set("tests/test_k.py", "def test(): pass\n")
                       .set("tests/more.py", "x = 1\n")
                       .set(".kernel_package/notes.py", "x = 1\n")
                       .dir("results"));
  std::set<std::string> paths;
  for (const auto& v : r.violations)
    if (v.rule == "package.unexpected-entry") paths.insert(v.path);
  EXPECT_EQ(paths, (std::set<std::string>{"pkg/bench.py", "pkg/tests/", "pkg/.kernel_package/notes.py",
                                          "pkg/results/"}))
      << rules(r.violations);
}

TEST(Inspect, TheKernelIdIsChecked) {
  EXPECT_TRUE(has_rule(inspect(TreeBuilder(), "a b/c").violations, "kernel-id.segment"));
  EXPECT_TRUE(has_rule(inspect(TreeBuilder(), "").violations, "kernel-id.empty"));
}

TEST(Inspect, DescIsParsedAndValidated) {
  auto broken = inspect(TreeBuilder().set(".kernel_package/desc.yaml", "name: [unclosed\n"));
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.violations[0].path, "pkg/.kernel_package/desc.yaml") << rules(broken.violations);
  EXPECT_EQ(broken.violations[0].rule.rfind("yaml.", 0), 0u) << rules(broken.violations);
  EXPECT_TRUE(broken.desc.is_null());

  auto incomplete = inspect(TreeBuilder().set(".kernel_package/desc.yaml", "schema_version: \"1\"\nname: x\n"));
  EXPECT_TRUE(has_rule(incomplete.violations, "schema.required")) << rules(incomplete.violations);
}

TEST(Inspect, IoSignatureNamesAreUnique) {
  std::string desc = kDesc;
  desc.replace(desc.find("{name: y"), 8, "{name: x");
  auto r = inspect(TreeBuilder().set(".kernel_package/desc.yaml", desc));
  const Violation* v = find_rule(r.violations, "package.duplicate-io-name");
  ASSERT_NE(v, nullptr) << rules(r.violations);
  EXPECT_EQ(v->pointer, "/io_signature/1/name");
}

TEST(Inspect, MetasMustBeALiteralList) {
  auto missing = inspect(TreeBuilder().set(".kernel_package/benchmark.py", "print('no metas')\n"));
  EXPECT_TRUE(has_rule(missing.violations, "literal.missing")) << rules(missing.violations);
  auto computed = inspect(TreeBuilder().set(".kernel_package/benchmark.py", benchmark_py("make_cases()")));
  EXPECT_TRUE(has_rule(computed.violations, "literal.not-literal")) << rules(computed.violations);
  auto dict = inspect(TreeBuilder().set(".kernel_package/benchmark.py", benchmark_py(meta_case("a"))));
  EXPECT_TRUE(has_rule(dict.violations, "package.metas-not-list")) << rules(dict.violations);
  auto empty = inspect(TreeBuilder().set(".kernel_package/benchmark.py", benchmark_py("[]")));
  EXPECT_TRUE(has_rule(empty.violations, "package.no-test-cases"));
}

TEST(Inspect, EachMetaIsValidatedAtItsIndex) {
  std::string bad = R"({"test_case_id": "b", "params": {}, "metrics": [], "tolerance": {}})";
  auto r = inspect(TreeBuilder().set(".kernel_package/benchmark.py",
                                     benchmark_py("[" + meta_case("small") + ", " + bad + "]")));
  ASSERT_FALSE(r.ok());
  bool at_index_1 = false;
  for (const auto& v : r.violations) {
    if (v.rule.rfind("schema.", 0) == 0) {
      EXPECT_EQ(v.pointer.rfind("/1", 0), 0u) << to_string(v);
      EXPECT_EQ(v.path, "pkg/.kernel_package/benchmark.py");
      at_index_1 = true;
    }
  }
  EXPECT_TRUE(at_index_1) << rules(r.violations);
}

TEST(Inspect, TestCaseIdsAreUnique) {
  auto r = inspect(TreeBuilder().set(".kernel_package/benchmark.py",
                                     benchmark_py("[" + meta_case("small") + ", " + meta_case("small") + "]")));
  const Violation* v = find_rule(r.violations, "package.duplicate-test-case");
  ASSERT_NE(v, nullptr) << rules(r.violations);
  EXPECT_EQ(v->pointer, "/1/test_case_id");
  EXPECT_NE(v->detail.find("\"small\""), std::string::npos);
}

TEST(Inspect, PrimaryMetricMustBeAmongTheMetrics) {
  auto r = inspect(TreeBuilder().set(".kernel_package/benchmark.py",
                                     benchmark_py("[" + meta_case("small", "tflops") + "]")));
  const Violation* v = find_rule(r.violations, "package.primary-metric");
  ASSERT_NE(v, nullptr) << rules(r.violations);
  EXPECT_EQ(v->pointer, "/0/primary_metric");
  EXPECT_NE(v->detail.find("latency_us"), std::string::npos) << v->detail;
}

TEST(Inspect, MetricNamesAreUniquePerCase) {
  std::string twice = R"([{"name": "latency_us", "unit": "us", "direction": "lower"},
                          {"name": "latency_us", "unit": "ms", "direction": "lower"}])";
  auto r = inspect(TreeBuilder().set(".kernel_package/benchmark.py",
                                     benchmark_py("[" + meta_case("small", "latency_us", twice) + "]")));
  const Violation* v = find_rule(r.violations, "package.duplicate-metric");
  ASSERT_NE(v, nullptr) << rules(r.violations);
  EXPECT_EQ(v->pointer, "/0/metrics/1/name");
}

TEST(Inspect, BenchResultMustBelongToThisPackageAndItsCases) {
  std::string other_id = kBenchResult;
  other_id.replace(other_id.find(kId), kId.size(), "hopper/norm/softmax/fp32/other");
  auto r = inspect(TreeBuilder().set(".kernel_package/bench_result.yaml", other_id));
  const Violation* v = find_rule(r.violations, "package.bench-result-mismatch");
  ASSERT_NE(v, nullptr) << rules(r.violations);
  EXPECT_EQ(v->pointer, "/kernel_id");

  std::string unknown_case = kBenchResult;
  unknown_case.replace(unknown_case.find("small"), 5, "ghost");
  auto r2 = inspect(TreeBuilder().set(".kernel_package/bench_result.yaml", unknown_case));
  const Violation* v2 = find_rule(r2.violations, "package.bench-result-mismatch");
  ASSERT_NE(v2, nullptr) << rules(r2.violations);
  EXPECT_EQ(v2->pointer, "/cases/0/test_case_id");
}

TEST(Inspect, EveryFileGoesThroughTheEvidenceScan) {
  auto r = inspect(TreeBuilder()
                       .set("src/weights.pt", "PK\x03\x04")
                       .set("src/notes.md", "n,ms\n1,0.5\n2,0.7\n3,0.9\n")
                       .set("README.md", "\x7f" "ELF"));
  EXPECT_TRUE(has_rule(r.violations, "evidence.name"));
  EXPECT_TRUE(has_rule(r.violations, "evidence.magic"));
  EXPECT_TRUE(has_rule(r.violations, "evidence.table")) << rules(r.violations);
  std::set<std::string> paths;
  for (const auto& v : r.violations) paths.insert(v.path);
  EXPECT_TRUE(paths.count("pkg/src/weights.pt") && paths.count("pkg/src/notes.md") && paths.count("pkg/README.md"));
  EXPECT_EQ(r.meta["violations"].size(), r.violations.size());
}

}  // namespace
}  // namespace kzoo::package
