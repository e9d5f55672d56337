// What one measurement shows the board (board/): the cases it measured, the
// board's guardrails it broke, and the check record (check.json) and metrics
// file (scienceslack.json's `metrics`: {"score", "cost", "subtasks"}) that
// go into the job's evidence. A check that did not pass counts for nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/board/decision.hpp"
#include "kzoo/jobs/transport.hpp"
#include "kzoo/store/state_db.hpp"
#include "kzoo/verdict/verdict.hpp"

namespace kzoo::jobs {

struct CheckFacts {
  const store::Submission& sub;
  std::int64_t job_id = 0;
  const BoardContext& ctx;
  const nlohmann::json& document;  // the verified benchmark output; null when there is none
  const nlohmann::json& metas;     // KERNEL_ZOO_TEST_CASE_METAS of the trusted harness
  const board::RunDecision& decided;  // board::decide_run of the document: measured cases, breaks, notes
  const nlohmann::json& run;       // run.json of the evidence
  int timed_runs = 0;              // what the judge was told to time
  double cost_s = 0;               // wall time of the sandboxed run
};

struct Check {
  nlohmann::json measured;             // board::measured_cases of the document
  std::vector<std::string> breaks;     // guardrails broken (the board's atol / rtol)
  std::vector<std::string> notes;      // why a passing run still does not count (too few timed runs)
  bool passed = false;
  nlohmann::json record;               // check.json
  nlohmann::json metrics;              // the rules' metrics file
};

Check board_check(const CheckFacts& f);

}  // namespace kzoo::jobs
