// board::decide_run is the one decision the worker and `kzoo grade --against`
// both make; these pin what it decides on crafted judge documents. That the
// worker completes a real job with exactly this decision is pinned in
// worker/worker_test.cpp (EveryJobIsCompletedAsDecideRunDecidesOnItsEvidence).
#include "kzoo/board/decision.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kzoo::board {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;

const json kMetas = json::array({{{"test_case_id", "g0"},
                                  {"primary_metric", "GB/s"},
                                  {"metrics", {{{"name", "GB/s"}, {"unit", "GB/s"}, {"direction", "higher"}}}}}});

Rules rules() {
  auto r = parse_rules(demo_rules({"k/x"}, "cpu").dump(), "scienceslack.json");
  EXPECT_TRUE(r) << r.error().message;
  return *r;
}

// A correct case that beat the incumbent in 15 of 16 A/B pairs, 1.5x faster.
json document(double speedup = 1.5, int wins = 15, double bound_ratio = 0.2) {
  json c{{"test_case_id", "g0"}, {"status", "ok"}, {"correct", true}, {"error_rel", 1e-6}, {"error_abs_max", 1e-6},
         {"metrics", {{"GB/s", 100.0}}}, {"gates", json::object()},
         {"guardrails", {{"correctness_atol", 0.01}, {"correctness_rtol", 0.01}, {"bound_ratio_max", bound_ratio}}},
         {"speedup", {{"value", speedup}, {"pairs", 16}, {"faster_pairs", wins}, {"spread", 0.1}}},
         {"incumbent", {{"status", "ok"}, {"metrics", {{"GB/s", 100.0 / speedup}}}}}};
  return json{{"overall", {{"accept", true}, {"build_ok", true}, {"accept_reason", ""}}}, {"cases", {c}}};
}

TEST(Decision, TheRulesSetTheJudgesRunCountsAndBoundsAnOperatorsIterationsWin) {
  Rules r = rules();
  r.commit = "abc123";
  json o = judge_options_for(json{{"batch", 4}}, &r, std::nullopt);
  EXPECT_EQ(o, (json{{"batch", 4}, {"iterations", 100}, {"warmup", 10}, {"trials", 5}, {"atol", 0.01},
                     {"rtol", 0.01}, {"rules_commit", "abc123"}}));
  EXPECT_EQ(judge_options_for(json::object(), &r, 3)["iterations"], 3);
  EXPECT_EQ(timed_runs_for(&r, std::nullopt), 100);
  EXPECT_EQ(timed_runs_for(&r, 3), 3);
  EXPECT_EQ(judge_options_for(json::object(), nullptr, std::nullopt), json::object());
  EXPECT_EQ(timed_runs_for(nullptr, std::nullopt), 100);
}

TEST(Decision, AFasterCorrectSubmissionWithinTheGuardrailsIsAccepted) {
  Rules r = rules();
  json doc = document();
  auto d = decide_run({doc, kMetas, true, &r, 100, false}, {});
  EXPECT_TRUE(d.accepted) << d.to_json().dump(2);
  EXPECT_TRUE(d.reasons.empty());
  EXPECT_TRUE(d.check_passed);
  EXPECT_EQ(d.verdict.outcome, verdict::Outcome::accepted);
  EXPECT_EQ(d.to_json()["outcome"], "accepted");
}

TEST(Decision, ABrokenGuardrailRejectsWhatThePolicyAccepts) {
  Rules r = rules();
  json doc = document(1.5, 15, 3.0);
  auto d = decide_run({doc, kMetas, true, &r, 100, false}, {});
  EXPECT_EQ(d.verdict.outcome, verdict::Outcome::accepted);
  EXPECT_FALSE(d.accepted);
  ASSERT_EQ(d.reasons.size(), 1u);
  EXPECT_THAT(d.reasons[0], HasSubstr("test case g0: an element is 3x outside atol 0.01"));
  EXPECT_FALSE(d.check_passed);
  // Without rules there is no board guardrail to break.
  EXPECT_TRUE(decide_run({doc, kMetas, true, nullptr, 100, false}, {}).accepted);
}

TEST(Decision, ThePolicysReasonsAreTheRejection) {
  Rules r = rules();
  json doc = document(1.02, 9);
  auto d = decide_run({doc, kMetas, true, &r, 100, false}, {});
  EXPECT_FALSE(d.accepted);
  ASSERT_FALSE(d.reasons.empty());
  EXPECT_EQ(d.reasons, d.verdict.reasons);
  EXPECT_THAT(d.reasons[0], HasSubstr("by more than the noise"));
}

TEST(Decision, FewerTimedRunsThanTheRulesStillDecideButDoNotCountOnTheBoard) {
  Rules r = rules();
  json doc = document();
  auto d = decide_run({doc, kMetas, true, &r, 8, false}, {});
  EXPECT_TRUE(d.accepted);
  EXPECT_FALSE(d.check_passed);
  ASSERT_EQ(d.board_notes.size(), 1u);
  EXPECT_THAT(d.board_notes[0], HasSubstr("timed 8 runs, the board's rules ask for 100"));
}

TEST(Decision, ABaselineIsTheBoardsWhenItsCheckPasses) {
  Rules r = rules();
  json doc = document();
  doc["cases"][0].erase("speedup");
  doc["cases"][0].erase("incumbent");
  EXPECT_TRUE(decide_run({doc, kMetas, false, &r, 100, true}, {}).accepted);
  auto few = decide_run({doc, kMetas, false, &r, 8, true}, {});
  EXPECT_FALSE(few.accepted);
  EXPECT_EQ(few.reasons, few.board_notes);
}

TEST(Decision, NoDocumentIsNoAcceptanceAndLeavesTheReasonToTheGrade) {
  Rules r = rules();
  json none;
  auto d = decide_run({none, kMetas, true, &r, 100, false}, {});
  EXPECT_FALSE(d.accepted);
  EXPECT_FALSE(d.check_passed);
  EXPECT_TRUE(d.reasons.empty());
}

}  // namespace
}  // namespace kzoo::board
