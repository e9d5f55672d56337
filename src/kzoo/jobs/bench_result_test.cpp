// The server-owned bench_result.yaml: current replaced, best only when better.
#include "kzoo/jobs/bench_result.hpp"

#include <gtest/gtest.h>

#include "kzoo/format/yaml_json.hpp"

namespace kzoo::jobs {
namespace {

using nlohmann::json;

const char* kId = "cpu/norm/softmax/fp32/tiny";
const std::string kEv(40, 'e');

json doc(double gbps, double us, const std::string& device_class = "cpu") {
  return json{{"device_class", device_class},
              {"cases", {{{"test_case_id", "a"}, {"status", "ok"}, {"correct", true},
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

TEST(BenchResult, OnlyResultsOfTheKernelsOwnDeviceClassEnterIt) {
  // The demo's bug: a CPU worker's figures at the measure shapes filed under an h200 kernel's cases.
  const std::string h200 = "h200/norm/softmax/bf16/softmax_eager";
  auto first = next_bench_result("", h200, doc(4000, 500, "h200"), dirs(), kEv, "2026-01-01T00:00:00Z");
  ASSERT_TRUE(first) << first.error().message;
  for (const std::string& other : {std::string("cpu"), std::string("h100"), std::string()}) {
    json d = doc(1.01, 99999, other);
    if (other.empty()) d.erase("device_class");
    EXPECT_FALSE(foreign_device_reason(d, h200).empty()) << other;
    auto y = next_bench_result(*first, h200, d, dirs(), std::string(40, 'f'), "2026-02-01T00:00:00Z");
    ASSERT_TRUE(y) << y.error().message;
    EXPECT_EQ(*y, *first) << "a result of device class '" << other << "' changed an h200 kernel's bench_result";
  }
  // An empty file stays without figures, but valid.
  auto empty = next_bench_result("", h200, doc(1.01, 99999, "cpu"), dirs(), kEv, "2026-01-01T00:00:00Z");
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(parse(*empty)["cases"], json::array());
  EXPECT_EQ(parse(*empty)["kernel_id"], h200);
  // The kernel's own class enters it.
  auto own = next_bench_result(*first, h200, doc(4100, 490, "h200"), dirs(), kEv, "2026-02-01T00:00:00Z");
  ASSERT_TRUE(own);
  EXPECT_EQ(parse(*own)["cases"][0]["metrics_current"]["GB/s"], 4100);
}

TEST(BenchResult, TheForeignReasonNamesBothClasses) {
  auto why = foreign_device_reason(doc(1, 1, "cpu"), "h200/norm/softmax/bf16/x");
  EXPECT_NE(why.find("device class cpu"), std::string::npos) << why;
  EXPECT_NE(why.find("device class h200"), std::string::npos) << why;
  EXPECT_EQ(foreign_device_reason(doc(1, 1, "cpu"), "cpu/norm/softmax/fp32/tiny"), "");
}

}  // namespace
}  // namespace kzoo::jobs
