#include "kzoo/verdict/verdict.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kzoo::verdict {
namespace {

using nlohmann::json;

std::optional<double> finite_number(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_number()) return std::nullopt;
  double v = obj[key].get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::string str_or(const json& obj, const char* key, const std::string& fallback = "") {
  return obj.is_object() && obj.contains(key) && obj[key].is_string() ? obj[key].get<std::string>() : fallback;
}

// Case messages come from the judge and can be long; reasons stay readable.
std::string clip(std::string s, std::size_t n = 400) {
  if (s.size() > n) s = s.substr(0, n) + "...";
  return s;
}

// A number as people read it: 4 significant digits, no exponent for everyday sizes.
std::string num(const json& v) {
  if (!v.is_number()) return v.is_null() ? "not measured" : v.dump();
  return fmt::format("{:.4g}", v.get<double>());
}

// "workload W at M=4096, N=1024" from the case's metas item; empty when unknown.
std::string shape_of(const json& metas, const std::string& case_id) {
  if (!metas.is_array()) return "";
  for (const auto& m : metas) {
    if (!m.is_object() || m.value("test_case_id", json()) != json(case_id)) continue;
    const json p = m.value("params", json::object());
    if (!p.is_object()) return "";
    std::string dims;
    if (p.contains("shape") && p["shape"].is_object())
      for (const auto& [k, v] : p["shape"].items()) dims += (dims.empty() ? "" : ", ") + k + "=" + v.dump();
    std::string w = p.contains("workload") && p["workload"].is_string() ? p["workload"].get<std::string>() : "";
    if (w.empty() && dims.empty()) return "";
    return fmt::format("{}{}{}", w.empty() ? "" : "workload " + w, w.empty() || dims.empty() ? "" : " at ", dims);
  }
  return "";
}

// Why a gate failed, its figures in their units.
std::string gate_failure(const std::string& name, const json& g) {
  const json value = g.is_object() && g.contains("value") ? g["value"] : json();
  const json limit = g.is_object() && g.contains("limit") ? g["limit"] : json();
  if (name == "roofline")
    return fmt::format("gate roofline failed: measured {} us, faster than the device's roofline of {} us, which is "
                       "impossible (a timing the judge cannot trust is refused, not celebrated)",
                       num(value), num(limit));
  const std::string unit = gate_unit(name);
  const std::string u = unit.empty() ? "" : " " + unit;
  return fmt::format("gate {} failed: {}{}, limit {}{}", name, num(value), u, num(limit), u);
}

}  // namespace

std::string gate_unit(const std::string& gate) {
  // The judge's gates (judge/kzoo_judge/gates.py): the roofline compares the
  // measured median with the fastest possible time; the others come from the
  // untimed profiler pass.
  if (gate == "roofline") return "us";
  if (gate == "library-calls") return "vendor-library calls the reference does not make";
  if (gate == "kernels-per-step") return "kernels per call";
  if (gate == "dominant-share") return "share of kernel time in the largest kernel";
  return "";
}

const char* to_string(Outcome o) { return o == Outcome::accepted ? "accepted" : "rejected"; }

Verdict decide(const json& doc, bool has_incumbent, const Policy& policy, const json& metas) {
  Verdict v;
  v.had_incumbent = has_incumbent;
  if (doc.is_object() && doc.contains("device_class") && doc["device_class"].is_string()) v.device_class = doc["device_class"];
  if (doc.is_object() && doc.contains("provenance") && doc["provenance"].is_object()) v.provenance = doc["provenance"];
  const json overall = doc.is_object() && doc.contains("overall") ? doc["overall"] : json();
  const json cases = doc.is_object() && doc.contains("cases") && doc["cases"].is_array() ? doc["cases"] : json::array();

  if (!(overall.is_object() && overall.value("build_ok", false) == true))
    v.reasons.push_back("the build failed (build_test_env.py or importing the submission): " +
                        clip(str_or(overall, "accept_reason", "no reason given")));
  if (cases.empty()) v.reasons.push_back("the judge reported no test cases");

  std::vector<double> speedups;
  int pairs = 0, wins = 0;
  bool comparable = true;
  // Case failures, grouped by what failed: one correctness failure ends every
  // case of its workload with the same message, and reads once.
  std::vector<std::pair<std::string, std::vector<std::string>>> failures;
  auto failed = [&](const std::string& case_id, std::string what) {
    for (auto& [w, ids] : failures)
      if (w == what) return ids.push_back(case_id);
    failures.push_back({std::move(what), {case_id}});
  };
  for (const auto& c : cases) {
    CaseFigures f;
    f.test_case_id = str_or(c, "test_case_id", "?");
    f.status = str_or(c, "status", "?");
    f.correct = c.is_object() && c.value("correct", json(false)) == json(true);
    f.metrics = c.is_object() && c.contains("metrics") ? c["metrics"] : json::object();
    const std::string shape = shape_of(metas, f.test_case_id);
    if (!shape.empty()) f.feedback["shape"] = shape;
    if (metas.is_array())
      for (const auto& m : metas)
        if (m.is_object() && m.value("test_case_id", json()) == json(f.test_case_id) && m.contains("params") &&
            m["params"].is_object())
          f.feedback["params"] = m["params"];  // {"workload", "shape": {dim: value}}, for datasets (kzoo export)
    if (f.status != "ok" || !f.correct) {
      const std::string msg = clip(str_or(c, "message"));
      // The judge's correctness messages name the shape they failed at; others get the case's.
      const bool names_shape = msg.find("shape") != std::string::npos;
      failed(f.test_case_id, fmt::format("{}{} ({}{})", f.status, f.correct ? "" : ", not correct", msg,
                                         names_shape || shape.empty() ? "" : "; " + shape));
    }
    json gate_list = json::array();
    if (c.is_object() && c.contains("gates") && c["gates"].is_object())
      for (const auto& [name, g] : c["gates"].items()) {
        const bool passed = g.is_object() && g.value("pass", false) == true;
        gate_list.push_back({{"name", name},
                             {"value", g.is_object() && g.contains("value") ? g["value"] : json()},
                             {"limit", g.is_object() && g.contains("limit") ? g["limit"] : json()},
                             {"unit", gate_unit(name)},
                             {"passed", passed}});
        if (!passed) failed(f.test_case_id, gate_failure(name, g) + (shape.empty() ? "" : " (" + shape + ")"));
      }
    if (!gate_list.empty()) f.feedback["gates"] = gate_list;
    // The roofline gate's figures: the judge's median and the fastest possible time.
    if (c.is_object() && c.contains("gates") && c["gates"].is_object() && c["gates"].contains("roofline")) {
      const json& r = c["gates"]["roofline"];
      auto t = finite_number(r, "value"), roof = finite_number(r, "limit");
      if (t) f.feedback["time_us"] = *t;
      if (roof) f.feedback["roofline_us"] = *roof;
      if (t && roof && *t > 0) f.feedback["roofline_pct"] = 100.0 * *roof / *t;
    }
    for (const char* k : {"error_rel", "error_abs_max", "message"})
      if (c.is_object() && c.contains(k) && !c[k].is_null()) f.feedback[k] = c[k];
    if (c.is_object() && c.contains("guardrails") && c["guardrails"].is_object()) {
      auto b = finite_number(c["guardrails"], "bound_ratio_max");
      if (b) f.feedback["bound_ratio_max"] = *b;
    }
    for (const char* k : {"worst", "top_kernels"})
      if (c.is_object() && c.contains(k) && (c[k].is_object() || c[k].is_array())) f.feedback[k] = c[k];
    const json inc = c.is_object() && c.contains("incumbent") ? c["incumbent"] : json();
    if (inc.is_object()) {
      f.incumbent_status = str_or(inc, "status", "?");
      f.incumbent_metrics = inc.contains("metrics") ? inc["metrics"] : json::object();
      if (f.incumbent_status == "incorrect")
        v.notes.push_back(fmt::format("case {}: the incumbent is incorrect ({}); only the submission must be correct",
                                      f.test_case_id, clip(str_or(inc, "message"))));
    }
    const json sp = c.is_object() && c.contains("speedup") ? c["speedup"] : json();
    f.speedup = finite_number(sp, "value");
    f.ratio_spread = finite_number(sp, "spread");
    auto count = [&](const char* key) {
      auto x = finite_number(sp, key);
      return x && *x >= 0 && *x <= 1e6 ? static_cast<int>(*x) : 0;
    };
    f.pairs = count("pairs");
    f.faster_pairs = std::min(count("faster_pairs"), f.pairs);
    if (f.speedup && *f.speedup <= 0) f.speedup.reset();
    if (has_incumbent) {
      if (!f.speedup) {
        comparable = false;
        if (f.status == "ok" && f.correct)
          failed(f.test_case_id, fmt::format(
              "no A/B comparison with the incumbent (incumbent {}: {}); without one a speed-up "
              "cannot be shown",
              f.incumbent_status.empty() ? "not timed" : f.incumbent_status,
              clip(str_or(inc, "message", "the judge ran without incumbent_src"))));
      } else {
        speedups.push_back(*f.speedup);
        pairs += f.pairs;
        wins += f.faster_pairs;
      }
    }
    v.cases.push_back(std::move(f));
  }

  for (const auto& [what, ids] : failures) {
    std::string names;
    for (const auto& id : ids) names += (names.empty() ? "" : ", ") + id;
    v.reasons.push_back(fmt::format("{} {}: {}", ids.size() == 1 ? "case" : "cases", names, what));
  }

  if (v.reasons.empty() && !(overall.is_object() && overall.value("accept", false) == true))
    v.reasons.push_back("the judge did not accept the run: " + clip(str_or(overall, "accept_reason", "no reason given")));

  if (has_incumbent && comparable && !speedups.empty()) {
    double log_sum = 0.0;
    for (double s : speedups) log_sum += std::log(s);
    double g = std::exp(log_sum / static_cast<double>(speedups.size()));
    double bar = 1.0 + policy.min_gain;
    double p = sign_test_p(wins, pairs);
    v.geomean_speedup = g;
    v.required_speedup = bar;
    v.sign_test_p = p;
    v.pairs = pairs;
    v.faster_pairs = wins;
    if (!(g > bar))
      v.reasons.push_back(fmt::format(
          "not faster than the incumbent: geometric-mean speed-up {:.4f}x over {} case(s), needs > {:.4f}x "
          "(1 + min_gain {:.3f})",
          g, speedups.size(), bar, policy.min_gain));
    else if (!(p <= policy.max_p))
      v.reasons.push_back(fmt::format(
          "not faster than the incumbent by more than the noise: faster in {} of {} A/B pairs, which noise alone "
          "gives with probability {:.4f} (sign test; needs <= {:.4f}); time more iterations or a larger gain",
          wins, pairs, p, policy.max_p));
  }

  v.outcome = v.reasons.empty() ? Outcome::accepted : Outcome::rejected;
  if (v.outcome == Outcome::accepted)
    v.summary = v.geomean_speedup
                    ? fmt::format("accepted: correct on {} case(s), {:.4f}x faster than the incumbent (bar {:.4f}x)",
                                  v.cases.size(), *v.geomean_speedup, *v.required_speedup)
                    : fmt::format("accepted: correct on {} case(s), first source of this package", v.cases.size());
  else
    v.summary = "rejected: " + v.reasons.front();
  return v;
}

double sign_test_p(int wins, int n) {
  if (n <= 0) return 1.0;
  // Sum C(n, k) / 2^n for k >= wins, in logs so large n stays finite.
  double p = 0.0;
  for (int k = std::max(wins, 0); k <= n; ++k)
    p += std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) - n * std::log(2.0));
  return std::min(p, 1.0);
}

json Verdict::to_json() const {
  json cs = json::array();
  auto opt = [](const std::optional<double>& x) { return x ? json(*x) : json(); };
  for (const auto& c : cases) {
    json j{{"test_case_id", c.test_case_id}, {"status", c.status},    {"correct", c.correct},
           {"metrics", c.metrics},           {"speedup", opt(c.speedup)}, {"ratio_spread", opt(c.ratio_spread)},
             {"pairs", c.pairs}, {"faster_pairs", c.faster_pairs}};
    if (!c.incumbent_status.empty()) {
      j["incumbent_status"] = c.incumbent_status;
      j["incumbent_metrics"] = c.incumbent_metrics;
    }
    j["feedback"] = c.feedback;
    cs.push_back(std::move(j));
  }
  return json{{"outcome", to_string(outcome)},
              {"summary", summary},
              {"reasons", reasons},
              {"notes", notes},
              {"had_incumbent", had_incumbent},
              {"device_class", device_class.empty() ? json() : json(device_class)},
              {"provenance", provenance},
              {"geomean_speedup", opt(geomean_speedup)},
              {"required_speedup", opt(required_speedup)},
              {"sign_test_p", opt(sign_test_p)},
              {"pairs", pairs},
              {"faster_pairs", faster_pairs},
              {"cases", cs}};
}

}  // namespace kzoo::verdict
