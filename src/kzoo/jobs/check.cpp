#include "kzoo/jobs/check.hpp"

#include <map>
#include <optional>

#include <fmt/format.h>

#include "kzoo/board/board.hpp"
#include "kzoo/board/score.hpp"

namespace kzoo::jobs {

using nlohmann::json;

namespace {

// The board's guardrails a case must keep besides the task's own tolerance. The judge
// holds every compared element to atol + rtol * |reference| itself and says so in each
// case's `guardrails` (docs/JUDGE.md): then what counts is that it held the board's bound,
// or a task's own where its calibration proves the board's impossible (an fp8 output one
// rounding step apart). A document without them (an older judge) is held to the largest
// absolute and relative errors instead.
std::vector<std::string> guardrail_breaks(const json& measured, const json& document, const board::Rules& rules) {
  std::vector<std::string> out;
  std::map<std::string, const json*> held;
  if (document.is_object() && document.contains("cases") && document["cases"].is_array())
    for (const auto& c : document["cases"])
      if (c.is_object() && c.contains("guardrails") && c["guardrails"].is_object() && c.contains("test_case_id") &&
          c["test_case_id"].is_string())
        held[c["test_case_id"].get<std::string>()] = &c["guardrails"];
  for (const auto& c : measured["cases"]) {
    std::string id = c["id"];
    if (auto it = held.find(id); it != held.end()) {
      const json& g = *it->second;
      bool bounded = g.value("correctness_atol", json()).is_number() || g.value("correctness_rtol", json()).is_number();
      if ((rules.atol || rules.rtol) && !bounded)
        out.push_back(fmt::format("test case {}: the judge held no elementwise bound, the board asks for atol {} and "
                                  "rtol {} (scienceslack.json guardrails)",
                                  id, rules.atol.value_or(0), rules.rtol.value_or(0)));
      else if (g.value("bound_ratio_max", json()).is_number() && g["bound_ratio_max"].get<double>() > 1.0)
        out.push_back(fmt::format("test case {}: an element is {:.3g}x outside atol {} + rtol {} x |reference| "
                                  "(scienceslack.json guardrails)",
                                  id, g["bound_ratio_max"].get<double>(), g.value("correctness_atol", json(0)).dump(),
                                  g.value("correctness_rtol", json(0)).dump()));
      continue;
    }
    if (rules.atol && c["error_abs_max"].is_number() && c["error_abs_max"].get<double>() > *rules.atol)
      out.push_back(fmt::format("test case {}: largest absolute error {:.4g} is over the board's atol {:.4g} "
                                "(scienceslack.json guardrails)",
                                id, c["error_abs_max"].get<double>(), *rules.atol));
    if (rules.rtol && c["error_rel"].is_number() && c["error_rel"].get<double>() > *rules.rtol)
      out.push_back(fmt::format("test case {}: error {:.4g} by the task's comparator is over the board's rtol {:.4g} "
                                "(scienceslack.json guardrails)",
                                id, c["error_rel"].get<double>(), *rules.rtol));
  }
  return out;
}

}  // namespace

Check board_check(const CheckFacts& f) {
  const std::optional<board::Rules>& rules = f.ctx.rules;
  const bool is_baseline = f.sub.kind == "baseline";
  const std::string& kernel_id = f.sub.kernel_id;
  Check c;
  c.measured = board::measured_cases(f.document, board::primaries_from_metas(f.metas));
  if (rules) c.breaks = guardrail_breaks(c.measured, f.document, *rules);
  const bool judged_ok = f.document.is_object() && c.measured["correct"].get<bool>() &&
                         (is_baseline || f.decided.outcome == verdict::Outcome::accepted);
  if (rules && f.timed_runs < rules->timed_runs)
    c.notes.push_back(fmt::format("timed {} runs, the board's rules ask for {} (the worker's --iterations): "
                                  "this check does not count on the board",
                                  f.timed_runs, rules->timed_runs));
  c.passed = judged_ok && c.breaks.empty() && c.notes.empty();
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
