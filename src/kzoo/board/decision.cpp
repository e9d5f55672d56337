#include "kzoo/board/decision.hpp"

#include <map>

#include <fmt/format.h>

#include "kzoo/board/score.hpp"

namespace kzoo::board {

using nlohmann::json;

int timed_runs_for(const Rules* rules, std::optional<int> iterations) {
  if (iterations) return *iterations;
  return rules ? rules->timed_runs : 100;
}

json judge_options_for(json base, const Rules* rules, std::optional<int> iterations) {
  json o = base.is_object() ? std::move(base) : json::object();
  if (iterations) o["iterations"] = *iterations;
  if (!rules) return o;
  if (!iterations) o["iterations"] = rules->timed_runs;
  o["warmup"] = rules->warmup;
  o["trials"] = rules->inputs;
  // The board's elementwise guardrail, held by the judge on every compared element
  // (docs/JUDGE.md, "Guardrails"), and the rules it ran under (its provenance).
  if (rules->atol) o["atol"] = *rules->atol;
  if (rules->rtol) o["rtol"] = *rules->rtol;
  o["rules_commit"] = rules->commit;
  return o;
}

std::vector<std::string> guardrail_breaks(const json& measured, const json& document, const Rules& rules) {
  std::vector<std::string> out;
  std::map<std::string, const json*> held;
  if (document.is_object() && document.contains("cases") && document["cases"].is_array())
    for (const auto& c : document["cases"])
      if (c.is_object() && c.contains("guardrails") && c["guardrails"].is_object() && c.contains("test_case_id") &&
          c["test_case_id"].is_string())
        held[c["test_case_id"].get<std::string>()] = &c["guardrails"];
  if (!measured.is_object() || !measured.contains("cases")) return out;
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

RunDecision decide_run(const RunFacts& f, const verdict::Policy& policy) {
  RunDecision d;
  const bool have_document = f.document.is_object();
  if (have_document) d.verdict = verdict::decide(f.document, f.has_incumbent, policy, f.metas);
  d.measured = measured_cases(f.document, primaries_from_metas(f.metas));
  if (f.rules) d.breaks = guardrail_breaks(d.measured, f.document, *f.rules);
  if (f.rules && f.timed_runs < f.rules->timed_runs)
    d.board_notes.push_back(fmt::format("timed {} runs, the board's rules ask for {} (the worker's --iterations): "
                                        "this check does not count on the board",
                                        f.timed_runs, f.rules->timed_runs));
  const bool judged_ok = have_document && d.measured.value("correct", false) &&
                         (f.is_baseline || d.verdict.outcome == verdict::Outcome::accepted);
  d.check_passed = judged_ok && d.breaks.empty() && d.board_notes.empty();
  if (f.is_baseline) {
    // A baseline measures; it is the board's baseline when its check passes.
    d.accepted = d.check_passed;
    if (!d.accepted) {
      d.reasons = d.breaks;
      d.reasons.insert(d.reasons.end(), d.board_notes.begin(), d.board_notes.end());
    }
  } else if (d.verdict.outcome != verdict::Outcome::accepted) {
    d.reasons = d.verdict.reasons;
  } else if (!d.breaks.empty()) {
    d.reasons = d.breaks;
  } else {
    d.accepted = true;
  }
  return d;
}

json RunDecision::to_json() const {
  return json{{"outcome", accepted ? "accepted" : "rejected"},
              {"reasons", reasons},
              {"verdict", verdict.to_json()},
              {"guardrail_breaks", breaks},
              {"board_notes", board_notes},
              {"check_passed", check_passed},
              {"measured", measured}};
}

}  // namespace kzoo::board
