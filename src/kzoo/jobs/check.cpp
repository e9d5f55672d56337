#include "kzoo/jobs/check.hpp"

#include <map>
#include <optional>

#include <fmt/format.h>

#include "kzoo/board/board.hpp"
#include "kzoo/board/score.hpp"

namespace kzoo::jobs {

using nlohmann::json;

Check board_check(const CheckFacts& f) {
  const std::optional<board::Rules>& rules = f.ctx.rules;
  const bool is_baseline = f.sub.kind == "baseline";
  const std::string& kernel_id = f.sub.kernel_id;
  Check c;
  // What the run measured, the guardrails it broke and whether its check counts: decided once,
  // by board::decide_run (the worker's decision and `kzoo grade --against`'s).
  c.measured = f.document.is_object() ? f.decided.measured
                                      : board::measured_cases(f.document, board::primaries_from_metas(f.metas));
  c.breaks = f.decided.breaks;
  c.notes = f.decided.board_notes;
  if (!f.document.is_object() && rules && f.timed_runs < rules->timed_runs)
    c.notes.push_back(fmt::format("timed {} runs, the board's rules ask for {} (the worker's --iterations): "
                                  "this check does not count on the board",
                                  f.timed_runs, rules->timed_runs));
  c.passed = f.document.is_object() && f.decided.check_passed;
  c.record = json{{"kind", f.sub.kind}, {"kernel_id", kernel_id}, {"route", f.sub.route}, {"job", f.job_id},
                  {"submission", f.sub.id}, {"rules_commit", rules ? json(rules->commit) : json()},
                  {"version", rules ? json(rules->version) : json()},
                  {"device_class", board::result_device_class(f.run, f.document)},
                  {"board_device_class", rules ? json(rules->device_class) : json()}, {"cost_s", f.cost_s},
                  {"passed", c.passed}, {"reasons", c.breaks}, {"notes", c.notes}, {"timed_runs", f.timed_runs},
                  {"measured", c.measured},
                  {"measured_commit", is_baseline ? f.ctx.baseline_commit : std::string()}};
  c.metrics = json{{"score", nullptr}, {"cost", f.cost_s}, {"subtasks", json::array()}};
  if (!rules) return c;
  std::optional<double> speedup;
  if (!f.ctx.baseline_measured.is_null())
    speedup = board::kernel_figures(f.ctx.baseline_measured, c.measured).speedup;
  else if (is_baseline && c.passed)
    speedup = 1.0;
  double time_us = 0;
  bool have_time = true;
  for (const auto& m : c.measured["cases"])
    if (m["time_us"].is_number()) time_us += m["time_us"].get<double>();
    else have_time = false;
  c.metrics["subtasks"].push_back({{"id", kernel_id}, {"speedup", speedup ? json(*speedup) : json()},
                                   {"metric", have_time ? json(time_us) : json()}, {"correct", c.measured["correct"]}});
  if (c.passed) {
    std::map<std::string, double> m = f.ctx.standing;
    if (is_baseline) m.erase(kernel_id);
    else if (speedup) m[kernel_id] = *speedup;
    c.metrics["score"] = board::board_score(rules->kernels, m);
  }
  return c;
}

}  // namespace kzoo::jobs
