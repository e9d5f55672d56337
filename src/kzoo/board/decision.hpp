// What one graded run of a package comes to, decided ONE way for everyone who
// decides it: the worker (a job on the service) and `kzoo grade --against`
// (a contributor's local A/B) both call judge_options_for and decide_run, so
// the verdict a contributor sees before submitting is the server's, on the
// same judge document.
//
// In order:
//   1. the board's rules set the judge's parameters (KZOO_OPTIONS): timed
//      runs, warm-up, inputs per correctness trial, the elementwise atol and
//      rtol, and the rules' commit; an operator's --iterations wins, but a
//      check that timed fewer runs than the rules ask does not count;
//   2. the accept policy, verdict::decide (correct, every gate, and an A/B
//      gain over the incumbent beyond the noise);
//   3. the board's guardrails on every case (guardrail_breaks);
//   4. the outcome: a submission is accepted when the policy accepts it and no
//      guardrail is broken; a baseline when its check passes. Whether the
//      run's check counts on the board (a passing check with the rules' run
//      count) is told apart from the outcome.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/board/rules.hpp"
#include "kzoo/verdict/verdict.hpp"

namespace kzoo::board {

// The timed runs a check runs: an operator's override, else the rules', else
// the judge's default of 100.
int timed_runs_for(const Rules* rules, std::optional<int> iterations);

// `base` (an object of KZOO_OPTIONS keys) with what the rules set.
nlohmann::json judge_options_for(nlohmann::json base, const Rules* rules, std::optional<int> iterations);

// The board's guardrails a case must keep besides the task's own tolerance.
// The judge holds every compared element to atol + rtol * |reference| itself
// and says so in each case's `guardrails` (docs/JUDGE.md): then what counts is
// that it held the board's bound, or a task's own where its calibration
// proves the board's impossible (an fp8 output one rounding step apart). A
// document without them (an older judge) is held to the largest absolute and
// relative errors instead. `measured` is measured_cases() of `document`.
std::vector<std::string> guardrail_breaks(const nlohmann::json& measured, const nlohmann::json& document,
                                          const Rules& rules);

struct RunDecision {
  verdict::Verdict verdict;              // the accept policy's, with its figures
  nlohmann::json measured;               // measured_cases() of the document
  std::vector<std::string> breaks;       // guardrails broken
  std::vector<std::string> board_notes;  // why a passing check would still not count
  bool accepted = false;
  // Why not accepted. Empty when accepted, and when there is no document or a
  // baseline's check failed without a named break: the grade's own reason says why.
  std::vector<std::string> reasons;
  bool check_passed = false;             // the check counts on the board

  nlohmann::json to_json() const;
};

struct RunFacts {
  const nlohmann::json& document;  // the verified benchmark output (an object)
  const nlohmann::json& metas;     // KERNEL_ZOO_TEST_CASE_METAS of the TRUSTED harness
  bool has_incumbent = false;      // the package had accepted source to beat
  const Rules* rules = nullptr;    // the rules in force; null: the project declares none
  int timed_runs = 100;            // what the judge was told to time (timed_runs_for)
  bool is_baseline = false;        // a measurement of the eager baseline, not a submission
};

RunDecision decide_run(const RunFacts& facts, const verdict::Policy& policy);

}  // namespace kzoo::board
