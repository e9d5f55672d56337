// The server-owned bench_result.yaml: current replaced, best only when better.
#include "kzoo/worker/bench_result.hpp"

#include <gtest/gtest.h>

#include "kzoo/format/yaml_json.hpp"

namespace kzoo::worker {
namespace {

using nlohmann::json;

const char* kId = "cpu/norm/softmax/fp32/tiny";
const std::string kEv(40, 'e');

json doc(double gbps, double us) {
  return json{{"cases", {{{"test_case_id", "a"}, {"status", "ok"}, {"correct", true},
                          {"metrics", {{"GB/s", gbps}, {"time_us", us}}}}}}};
}

Directions dirs() {
  return directions_from_metas(json::parse(R"([{"test_case_id": "a", "metrics": [
      {"name": "GB/s", "unit": "GB/s", "direction": "higher"}, {"name": "time_us", "unit": "us", "direction": "lower"}]}])"));
}

json parse(const std::string& yaml) {
  auto j = format::parse_yaml(yaml, "b.yaml");
  EXPECT_TRUE(j.has_value());
  return j ? *j : json();
}

TEST(BenchResult, FirstResultSetsBothCurrentAndBest) {
  auto y = next_bench_result("", kId, doc(100, 10), dirs(), kEv, "2026-01-01T00:00:00Z");
  ASSERT_TRUE(y) << y.error().message;
  auto j = parse(*y);
  EXPECT_EQ(j["kernel_id"], kId);
  EXPECT_EQ(j["cases"][0]["metrics_current"]["GB/s"], 100);
  EXPECT_EQ(j["cases"][0]["metrics_best"]["time_us"], 10);
  EXPECT_EQ(j["cases"][0]["best_commit"], kEv);
  EXPECT_EQ(j["cases"][0]["updated_at"], "2026-01-01T00:00:00Z");
}

TEST(BenchResult, BestMovesOnlyInTheMetricsDirection) {
  auto first = next_bench_result("", kId, doc(100, 10), dirs(), kEv, "2026-01-01T00:00:00Z");
  // Worse on both: current follows, best stays, best_commit stays.
  auto second = next_bench_result(*first, kId, doc(90, 11), dirs(), std::string(40, 'f'), "2026-01-02T00:00:00Z");
  ASSERT_TRUE(second) << second.error().message;
  auto j = parse(*second);
  EXPECT_EQ(j["cases"][0]["metrics_current"]["GB/s"], 90);
  EXPECT_EQ(j["cases"][0]["metrics_best"]["GB/s"], 100);
  EXPECT_EQ(j["cases"][0]["metrics_best"]["time_us"], 10);
  EXPECT_EQ(j["cases"][0]["best_commit"], kEv);
  EXPECT_EQ(j["cases"][0]["updated_at"], "2026-01-02T00:00:00Z");
  // Better: a higher GB/s and a LOWER time both count as better.
  auto third = next_bench_result(*second, kId, doc(120, 8), dirs(), std::string(40, 'a'), "2026-01-03T00:00:00Z");
  auto k = parse(*third);
  EXPECT_EQ(k["cases"][0]["metrics_best"]["GB/s"], 120);
  EXPECT_EQ(k["cases"][0]["metrics_best"]["time_us"], 8);
  EXPECT_EQ(k["cases"][0]["best_commit"], std::string(40, 'a'));
}

TEST(BenchResult, UnnamedTimeMetricsCountAsLowerIsBetter) {
  auto first = next_bench_result("", kId, doc(100, 10), {}, kEv, "2026-01-01T00:00:00Z");
  auto second = next_bench_result(*first, kId, doc(100, 12), {}, kEv, "2026-01-01T00:00:00Z");
  EXPECT_EQ(parse(*second)["cases"][0]["metrics_best"]["time_us"], 10);
}

TEST(BenchResult, CasesTheRunDidNotMeasureAreKept) {
  std::string seed = std::string("schema_version: \"1\"\nkernel_id: ") + kId +
                     "\ncases:\n  - test_case_id: old\n    metrics_best: {x: 1}\n    metrics_current: {x: 1}\n";
  auto y = next_bench_result(seed, kId, doc(100, 10), dirs(), kEv, "2026-01-01T00:00:00Z");
  ASSERT_TRUE(y) << y.error().message;
  auto j = parse(*y);
  ASSERT_EQ(j["cases"].size(), 2u);
  EXPECT_EQ(j["cases"][0]["test_case_id"], "old");
}

TEST(BenchResult, NullAndMissingMetricsAreNotRecorded) {
  json d = doc(100, 10);
  d["cases"][0]["metrics"]["GB/s"] = nullptr;
  auto j = parse(*next_bench_result("", kId, d, dirs(), kEv, "2026-01-01T00:00:00Z"));
  EXPECT_FALSE(j["cases"][0]["metrics_current"].contains("GB/s"));
  EXPECT_TRUE(j["cases"][0]["metrics_current"].contains("time_us"));
}

TEST(BenchResult, AnUnreadableCurrentFileIsAnErrorNotAReset) {
  auto y = next_bench_result("cases: [unclosed", kId, doc(1, 1), dirs(), kEv, "2026-01-01T00:00:00Z");
  ASSERT_FALSE(y);
  EXPECT_NE(y.error().message.find("bench_result.yaml cannot be read"), std::string::npos);
}

TEST(BenchResult, AResultBreakingTheSchemaIsRefused) {
  // best_commit must be hex: a bad evidence id is caught by the schema.
  auto y = next_bench_result("", kId, doc(1, 1), dirs(), "not-a-commit", "2026-01-01T00:00:00Z");
  ASSERT_FALSE(y);
  EXPECT_NE(y.error().message.find("schema"), std::string::npos);
}

}  // namespace
}  // namespace kzoo::worker
