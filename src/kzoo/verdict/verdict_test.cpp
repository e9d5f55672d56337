// The accept policy, rule by rule, on crafted benchmark documents.
#include "kzoo/verdict/verdict.hpp"

#include <gtest/gtest.h>

namespace kzoo::verdict {
namespace {

using nlohmann::json;

// A correct case of the submission; with `speedup` > 0, the A/B figures too:
// 10 pairs, of which the submission won `wins` (default: all when faster,
// none when slower).
json ok_case(const std::string& id, double speedup = 0, int wins = -1, const std::string& inc_status = "ok") {
  if (wins < 0) wins = speedup > 1 ? 10 : 0;
  json c{{"test_case_id", id}, {"status", "ok"}, {"correct", true}, {"error_rel", 1e-7},
         {"metrics", {{"GB/s", 100.0}, {"time_us", 10.0}}}, {"samples", 100}, {"spread", 0.02},
         {"gates", {{"library-calls", {{"value", 0}, {"limit", 0}, {"pass", true}}}}}, {"message", "fine"}};
  if (speedup > 0) {
    c["incumbent"] = {{"status", inc_status}, {"correct", inc_status == "ok"}, {"median_us", 10.0 * speedup},
                      {"spread", 0.02}, {"samples", 100}, {"metrics", {{"GB/s", 100.0 / speedup}}},
                      {"message", inc_status == "ok" ? "" : "the incumbent is incorrect: call 0: off by 3"}};
    c["speedup"] = {{"value", speedup}, {"ratio_median", speedup}, {"spread", 0.05}, {"pairs", 10}, {"faster_pairs", wins}};
  }
  return c;
}

json doc_of(json cases, bool accept = true, bool build_ok = true) {
  return json{{"schema_version", "1"}, {"kernel_id", "cpu/x/y/fp32/k"}, {"ran_at", "2026-01-01T00:00:00Z"},
              {"runner_id", "t"}, {"arch", "cpu"},
              {"overall", {{"accept", accept}, {"accept_reason", accept ? "all correct" : "case a: incorrect"},
                           {"build_ok", build_ok}}},
              {"cases", std::move(cases)}};
}

bool mentions(const Verdict& v, const std::string& what) {
  for (const auto& r : v.reasons)
    if (r.find(what) != std::string::npos) return true;
  return false;
}

TEST(Verdict, FirstSubmissionIsAcceptedWhenCorrect) {
  auto v = decide(doc_of({ok_case("a"), ok_case("b")}), /*has_incumbent=*/false);
  EXPECT_EQ(v.outcome, Outcome::accepted) << v.summary;
  EXPECT_TRUE(v.reasons.empty());
  EXPECT_FALSE(v.geomean_speedup);
  EXPECT_NE(v.summary.find("first source"), std::string::npos);
  ASSERT_EQ(v.cases.size(), 2u);
  EXPECT_EQ(v.cases[0].metrics["GB/s"], 100.0);
}

TEST(Verdict, BuildFailureIsRejected) {
  auto d = doc_of({ok_case("a")}, false, /*build_ok=*/false);
  d["overall"]["accept_reason"] = "importing the submission failed: SyntaxError";
  auto v = decide(d, false);
  EXPECT_EQ(v.outcome, Outcome::rejected);
  EXPECT_TRUE(mentions(v, "build failed")) << v.summary;
  EXPECT_TRUE(mentions(v, "SyntaxError"));
}

TEST(Verdict, NoCasesIsRejected) {
  auto v = decide(doc_of(json::array()), false);
  EXPECT_EQ(v.outcome, Outcome::rejected);
  EXPECT_TRUE(mentions(v, "no test cases"));
}

TEST(Verdict, AnIncorrectCaseIsRejectedWhateverTheSpeed) {
  auto bad = ok_case("b", 5.0);
  bad["status"] = "incorrect";
  bad["correct"] = false;
  bad["message"] = "timed 0/3: relative error 0.2 > 1e-05";
  auto v = decide(doc_of({ok_case("a", 5.0), bad}, false), true);
  EXPECT_EQ(v.outcome, Outcome::rejected);
  EXPECT_TRUE(mentions(v, "case b: incorrect, not correct (timed 0/3"));
}

TEST(Verdict, ErrorAndTimeoutCasesAreRejected) {
  for (const char* status : {"error", "timeout"}) {
    auto c = ok_case("a");
    c["status"] = status;
    c["correct"] = false;
    auto v = decide(doc_of({c}, false), false);
    EXPECT_EQ(v.outcome, Outcome::rejected) << status;
    EXPECT_TRUE(mentions(v, std::string("case a: ") + status)) << status;
  }
}

TEST(Verdict, AStatusOkButNotCorrectIsStillRejected) {
  auto c = ok_case("a");
  c["correct"] = nullptr;  // not checked
  auto v = decide(doc_of({c}), false);
  EXPECT_EQ(v.outcome, Outcome::rejected);
  EXPECT_TRUE(mentions(v, "not correct"));
}

TEST(Verdict, AFailedGateIsRejected) {
  auto c = ok_case("a", 3.0);
  c["gates"]["roofline"] = {{"value", 1.0}, {"limit", 250.0}, {"pass", false}};
  auto v = decide(doc_of({c}, false), true);
  EXPECT_EQ(v.outcome, Outcome::rejected);
  EXPECT_TRUE(mentions(v, "case a: gate roofline failed: measured 1 us, faster than the device's roofline of 250 us"))
      << v.reasons.front();
}

TEST(Verdict, TheJudgesOwnRejectionIsHonouredEvenIfNoRuleHereSeesWhy) {
  auto v = decide(doc_of({ok_case("a")}, /*accept=*/false), false);
  EXPECT_EQ(v.outcome, Outcome::rejected);
  EXPECT_TRUE(mentions(v, "the judge did not accept"));
}

TEST(Verdict, FasterThanTheIncumbentBeyondTheNoiseIsAccepted) {
  auto v = decide(doc_of({ok_case("a", 1.5), ok_case("b", 1.2)}), true);
  EXPECT_EQ(v.outcome, Outcome::accepted) << v.summary;
  ASSERT_TRUE(v.geomean_speedup);
  EXPECT_NEAR(*v.geomean_speedup, std::sqrt(1.5 * 1.2), 1e-12);
  EXPECT_NEAR(*v.required_speedup, 1.01, 1e-12);  // 1 + min_gain
  EXPECT_EQ(v.pairs, 20);
  EXPECT_EQ(v.faster_pairs, 20);
  EXPECT_NEAR(*v.sign_test_p, std::ldexp(1.0, -20), 1e-15);
}

TEST(Verdict, AGainBelowMinGainIsRejected) {
  auto v = decide(doc_of({ok_case("a", 1.005)}), true);  // won every pair, by too little
  EXPECT_EQ(v.outcome, Outcome::rejected);
  EXPECT_TRUE(mentions(v, "not faster than the incumbent"));
  EXPECT_NEAR(*v.required_speedup, 1.01, 1e-12);
}

TEST(Verdict, AGainInsideTheNoiseIsRejected) {
  // 8% faster by the medians, but won only 6 of 10 pairs: a fair coin does
  // that or better with probability 386/1024.
  auto v = decide(doc_of({ok_case("a", 1.08, 6)}), true);
  EXPECT_EQ(v.outcome, Outcome::rejected);
  EXPECT_TRUE(mentions(v, "by more than the noise"));
  EXPECT_NEAR(*v.sign_test_p, 386.0 / 1024.0, 1e-12);
  // The same gain won in every pair passes; 9 of 10 (p = 11/1024 > 0.01) does not.
  EXPECT_EQ(decide(doc_of({ok_case("a", 1.08, 10)}), true).outcome, Outcome::accepted);
  EXPECT_EQ(decide(doc_of({ok_case("a", 1.08, 9)}), true).outcome, Outcome::rejected);
}

TEST(Verdict, PairsArePooledOverCases) {
  // One case won every pair, the other lost most: 12 of 20 is noise.
  auto v = decide(doc_of({ok_case("a", 1.3, 10), ok_case("b", 1.3, 2)}), true);
  EXPECT_EQ(v.faster_pairs, 12);
  EXPECT_EQ(v.outcome, Outcome::rejected);
  // Two cases that each won 9 of 10 pool to 18 of 20 (p = 211/2^20): accepted.
  EXPECT_EQ(decide(doc_of({ok_case("a", 1.3, 9), ok_case("b", 1.3, 9)}), true).outcome, Outcome::accepted);
}

TEST(Verdict, SignTestProbabilities) {
  EXPECT_DOUBLE_EQ(sign_test_p(10, 10), 1.0 / 1024.0);
  EXPECT_NEAR(sign_test_p(9, 10), 11.0 / 1024.0, 1e-15);
  EXPECT_NEAR(sign_test_p(0, 10), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(sign_test_p(0, 0), 1.0);
  EXPECT_LT(sign_test_p(700, 1000), 1e-30);  // large counts stay finite
}

TEST(Verdict, ASlowerCaseCanBeOutweighedInTheGeometricMean) {
  // Case b lost 3 of its 10 pairs; pooled, 17 of 20 wins (p = 1351/2^20).
  auto v = decide(doc_of({ok_case("a", 2.0), ok_case("b", 0.9, 7)}), true);
  EXPECT_EQ(v.outcome, Outcome::accepted) << v.summary;
  EXPECT_NEAR(*v.geomean_speedup, std::sqrt(1.8), 1e-12);
}

TEST(Verdict, SlowerThanTheIncumbentIsRejected) {
  auto v = decide(doc_of({ok_case("a", 0.7)}), true);
  EXPECT_EQ(v.outcome, Outcome::rejected);
  EXPECT_TRUE(mentions(v, "0.7000x"));
}

TEST(Verdict, PolicyIsConfigurable) {
  Policy strict{0.10, 0.01};
  EXPECT_EQ(decide(doc_of({ok_case("a", 1.08)}), true, strict).outcome, Outcome::rejected);
  Policy lax{0.0, 0.5};  // 6 of 10 wins (p = 0.377) is enough for this one
  EXPECT_EQ(decide(doc_of({ok_case("a", 1.001, 6)}), true, lax).outcome, Outcome::accepted);
  EXPECT_EQ(decide(doc_of({ok_case("a", 1.001, 6)}), true).outcome, Outcome::rejected);
}

TEST(Verdict, MissingComparisonWithAnIncumbentFailsClosed) {
  auto c = ok_case("a", 3.0);
  c["incumbent"]["status"] = "error";
  c["incumbent"]["message"] = "the incumbent failed: the child was killed by signal 9";
  c["speedup"] = nullptr;
  auto v = decide(doc_of({c}), true);
  EXPECT_EQ(v.outcome, Outcome::rejected);
  EXPECT_TRUE(mentions(v, "no A/B comparison with the incumbent (incumbent error: the incumbent failed: the child"));
  EXPECT_FALSE(v.geomean_speedup);
}

TEST(Verdict, AJudgeRunWithoutTheOptionCannotBeatAnIncumbent) {
  auto v = decide(doc_of({ok_case("a")}), true);
  EXPECT_EQ(v.outcome, Outcome::rejected);
  EXPECT_TRUE(mentions(v, "without incumbent_src"));
}

TEST(Verdict, TooFewPairsCannotShowAGain) {
  auto c = ok_case("a", 1.3);
  c["speedup"]["pairs"] = 1;  // one pair: a coin flip
  c["speedup"]["faster_pairs"] = 1;
  auto v = decide(doc_of({c}), true);
  EXPECT_NEAR(*v.sign_test_p, 0.5, 1e-12);
  EXPECT_EQ(v.outcome, Outcome::rejected);
  // A document without pair counts shows nothing either.
  auto d = ok_case("a", 1.3);
  d["speedup"].erase("faster_pairs");
  EXPECT_EQ(decide(doc_of({d}), true).outcome, Outcome::rejected);
}

TEST(Verdict, AnIncorrectIncumbentIsReportedAndDoesNotBlock) {
  auto v = decide(doc_of({ok_case("a", 1.5, 10, "incorrect")}), true);
  EXPECT_EQ(v.outcome, Outcome::accepted) << v.summary;
  ASSERT_EQ(v.notes.size(), 1u);
  EXPECT_NE(v.notes[0].find("the incumbent is incorrect"), std::string::npos);
  // ...but it does not waive the speed rule: its times still count.
  EXPECT_EQ(decide(doc_of({ok_case("a", 0.9, 0, "incorrect")}), true).outcome, Outcome::rejected);
}

TEST(Verdict, NonsenseSpeedupsAreNotTrusted) {
  for (json bad : {json(-2.0), json(0.0), json("fast"), json(nullptr)}) {
    auto c = ok_case("a", 2.0);
    c["speedup"]["value"] = bad;
    EXPECT_EQ(decide(doc_of({c}), true).outcome, Outcome::rejected) << bad.dump();
  }
}

TEST(Verdict, MalformedDocumentsAreRejectedNotCrashed) {
  for (json d : {json(nullptr), json::array(), json{{"overall", 3}}, json{{"cases", "x"}, {"overall", json::object()}}}) {
    auto v = decide(d, true);
    EXPECT_EQ(v.outcome, Outcome::rejected) << d.dump();
    EXPECT_FALSE(v.reasons.empty());
  }
}

TEST(Verdict, JsonCarriesTheFigures) {
  auto j = decide(doc_of({ok_case("a", 1.5)}), true).to_json();
  EXPECT_EQ(j["outcome"], "accepted");
  EXPECT_DOUBLE_EQ(j["geomean_speedup"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["required_speedup"].get<double>(), 1.01);
  EXPECT_DOUBLE_EQ(j["sign_test_p"].get<double>(), 1.0 / 1024.0);
  EXPECT_EQ(j["faster_pairs"], 10);
  EXPECT_EQ(j["cases"][0]["incumbent_status"], "ok");
  EXPECT_DOUBLE_EQ(j["cases"][0]["ratio_spread"].get<double>(), 0.05);
  EXPECT_EQ(j["cases"][0]["faster_pairs"], 10);
  EXPECT_TRUE(j["reasons"].empty());
}

// The metas of three cases of one workload at three shapes.
json three_shapes() {
  json metas = json::array();
  for (int i = 0; i < 3; ++i)
    metas.push_back({{"test_case_id", "c" + std::to_string(i)},
                     {"params", {{"workload", "rows"}, {"shape", {{"M", 1024 << i}, {"N", 4096}}}}}});
  return metas;
}

TEST(Verdict, OneFailureThatEndsEveryCaseReadsOnceNamingTheCasesItEnded) {
  json cases = json::array();
  for (int i = 0; i < 3; ++i) {
    auto c = ok_case("c" + std::to_string(i));
    c["status"] = "incorrect";
    c["correct"] = false;
    c["message"] = "correctness trials: correctness rows/0/0 at shape {'M': 8, 'N': 16}: output 'y': relative error 0.2 "
                   "exceeds 1e-05";
    cases.push_back(c);
  }
  auto v = decide(doc_of(cases, false), false, {}, three_shapes());
  ASSERT_EQ(v.reasons.size(), 1u) << "one failure, one reason";
  EXPECT_TRUE(mentions(v, "cases c0, c1, c2: incorrect, not correct (correctness trials: correctness rows/0/0 at shape "
                          "{'M': 8, 'N': 16}"))
      << v.reasons.front();
}

TEST(Verdict, DistinctFailuresEachReadOnceAndNameTheirShapeAndUnits) {
  auto slow = ok_case("c0");
  slow["gates"]["kernels-per-step"] = {{"value", 7}, {"limit", 2}, {"pass", false}};
  auto err = ok_case("c1");
  err["status"] = "error";
  err["correct"] = false;
  err["message"] = "the submission raised on call 3: CUDA out of memory";
  auto v = decide(doc_of({slow, err, ok_case("c2")}, false), false, {}, three_shapes());
  ASSERT_EQ(v.reasons.size(), 2u);
  EXPECT_TRUE(mentions(v, "case c0: gate kernels-per-step failed: 7 kernels per call, limit 2 kernels per call "
                          "(workload rows at M=1024, N=4096)"))
      << v.reasons[0];
  EXPECT_TRUE(mentions(v, "case c1: error, not correct (the submission raised on call 3: CUDA out of memory; workload "
                          "rows at M=2048, N=4096)"))
      << v.reasons[1];
}

TEST(Verdict, EachCaseCarriesWhatAContributorActsOn) {
  auto c = ok_case("c0");
  c["gates"]["roofline"] = {{"value", 400.0}, {"limit", 300.0}, {"pass", true}};
  c["guardrails"] = {{"bound_ratio_max", 0.25}};
  c["top_kernels"] = json::array({{{"name", "softmax_kernel"}, {"count", 2}, {"time_us", 380.0}, {"share", 0.95}}});
  auto bad = ok_case("c1");
  bad["status"] = "incorrect";
  bad["correct"] = false;
  bad["error_abs_max"] = 3.5;
  bad["worst"] = {{"output", "y"}, {"index", json::array({3, 17})}, {"shape", {{"M", 8}, {"N", 32}}}, {"out", 4.0},
                  {"expected", 0.5}};
  auto j = decide(doc_of({c, bad}, false), false, {}, three_shapes()).to_json();
  const json& f = j["cases"][0]["feedback"];
  EXPECT_EQ(f["shape"], "workload rows at M=1024, N=4096");
  EXPECT_DOUBLE_EQ(f["time_us"].get<double>(), 400.0);
  EXPECT_DOUBLE_EQ(f["roofline_us"].get<double>(), 300.0);
  EXPECT_DOUBLE_EQ(f["roofline_pct"].get<double>(), 75.0) << "the roofline's time over the measured time";
  EXPECT_DOUBLE_EQ(f["bound_ratio_max"].get<double>(), 0.25);
  EXPECT_EQ(f["top_kernels"][0]["name"], "softmax_kernel");
  bool roofline_gate = false;
  for (const auto& g : f["gates"])
    if (g["name"] == "roofline") roofline_gate = g["unit"] == "us" && g["passed"] == true;
  EXPECT_TRUE(roofline_gate) << f["gates"];
  const json& w = j["cases"][1]["feedback"];
  EXPECT_EQ(w["worst"]["index"], json::array({3, 17}));
  EXPECT_DOUBLE_EQ(w["error_abs_max"].get<double>(), 3.5);
  EXPECT_FALSE(w.contains("roofline_pct")) << "no figure is made up where the judge reported none";
}

}  // namespace
}  // namespace kzoo::verdict
