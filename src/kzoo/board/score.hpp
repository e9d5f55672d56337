// The board's arithmetic, as pure functions over check records (docs/BOARD.md):
//
//   case speed-up    = eager figure / candidate figure on the case's primary
//                      metric, turned by its direction (GB/s: cand / eager;
//                      a time: eager / cand) -- a ratio of times either way;
//   kernel speed-up  = geometric mean of its cases' speed-ups; it needs a
//                      result for every case the baseline has;
//   board score      = geometric mean over the board's kernels, a kernel
//                      without a result counting 1 (the baseline).
//
// A check record (check.json in a job's evidence) is what a check measured,
// in the form these functions read; check_record() builds it from the judge's
// benchmark output.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kzoo::board {

// The device class that produced a result. Kept in this one function so the
// field can move: today it is read from the worker's run record (`device`,
// `device_class`) and, failing that, the judge's `arch` ("cpu" is a class of
// its own; a GPU arch alone does not name a class).
std::string result_device_class(const nlohmann::json& run, const nlohmann::json& benchmark_output);

// test_case_id -> {"metric": name, "direction": "higher"|"lower"} from the
// trusted KERNEL_ZOO_TEST_CASE_METAS.
using Primaries = std::map<std::string, std::pair<std::string, std::string>>;
Primaries primaries_from_metas(const nlohmann::json& metas);

// {"cases": [{id, metric, direction, value, time_us, roofline_us, correct, status}],
//  "correct": all cases ok and correct}. time_us: the judge's measured median
// (its roofline gate's `value`, or a time-unit metric); roofline_us: the gate's
// `limit`; null where the document has none.
nlohmann::json measured_cases(const nlohmann::json& benchmark_output, const Primaries& primaries);

struct KernelFigures {
  std::optional<double> speedup;      // null: no comparable result
  std::optional<double> eager_us;     // sum over cases
  std::optional<double> time_us;      // sum over cases
  std::optional<double> roofline_pct; // 100 * sum(roofline) / sum(time)
  std::string note;                   // why there is no speed-up
};

// `baseline` and `candidate` are measured_cases() documents of one kernel.
KernelFigures kernel_figures(const nlohmann::json& baseline, const nlohmann::json& candidate);

// Per case of `candidate` (measured_cases documents of one kernel):
// {id: {"metric", "direction", "value", "speedup_over_eager", "eager_time_us"}},
// the last two only where `baseline` measured that case with the same metric
// -- the case speed-up above, what a contributor reads beside the incumbent's.
nlohmann::json case_figures(const nlohmann::json& baseline, const nlohmann::json& candidate);

double geomean(const std::vector<double>& xs);  // 1 for an empty list

// Geometric mean over `kernels`; a kernel absent from `speedups` counts 1.
double board_score(const std::vector<std::string>& kernels, const std::map<std::string, double>& speedups);

}  // namespace kzoo::board
