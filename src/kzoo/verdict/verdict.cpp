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

std::string str(const json& obj, const char* key, const std::string& fallback = "") {
  return obj.is_object() && obj.contains(key) && obj[key].is_string() ? obj[key].get<std::string>() : fallback;
}

// Case messages come from the judge and can be long; reasons stay readable.
std::string clip(std::string s, std::size_t n = 400) {
  if (s.size() > n) s = s.substr(0, n) + "...";
  return s;
}

}  // namespace

const char* to_string(Outcome o) { return o == Outcome::accepted ? "accepted" : "rejected"; }

Verdict decide(const json& doc, bool has_incumbent, const Policy& policy) {
  Verdict v;
  v.had_incumbent = has_incumbent;
  if (doc.is_object() && doc.contains("device_class") && doc["device_class"].is_string()) v.device_class = doc["device_class"];
  if (doc.is_object() && doc.contains("provenance") && doc["provenance"].is_object()) v.provenance = doc["provenance"];
  const json overall = doc.is_object() && doc.contains("overall") ? doc["overall"] : json();
  const json cases = doc.is_object() && doc.contains("cases") && doc["cases"].is_array() ? doc["cases"] : json::array();

  if (!(overall.is_object() && overall.value("build_ok", false) == true))
    v.reasons.push_back("the build failed (build_test_env.py or importing the submission): " +
                        clip(str(overall, "accept_reason", "no reason given")));
  if (cases.empty()) v.reasons.push_back("the judge reported no test cases");

  std::vector<double> speedups;
  int pairs = 0, wins = 0;
  bool comparable = true;
  for (const auto& c : cases) {
    CaseFigures f;
    f.test_case_id = str(c, "test_case_id", "?");
    f.status = str(c, "status", "?");
    f.correct = c.is_object() && c.value("correct", json(false)) == json(true);
    f.metrics = c.is_object() && c.contains("metrics") ? c["metrics"] : json::object();
    if (f.status != "ok" || !f.correct)
      v.reasons.push_back(fmt::format("case {}: {}{} ({})", f.test_case_id, f.status, f.correct ? "" : ", not correct",
                                      clip(str(c, "message"))));
    if (c.is_object() && c.contains("gates") && c["gates"].is_object())
      for (const auto& [name, g] : c["gates"].items())
        if (!(g.is_object() && g.value("pass", false) == true))
          v.reasons.push_back(fmt::format("case {}: gate {} failed (value {}, limit {})", f.test_case_id, name,
                                          g.is_object() && g.contains("value") ? g["value"].dump() : "?",
                                          g.is_object() && g.contains("limit") ? g["limit"].dump() : "?"));
    const json inc = c.is_object() && c.contains("incumbent") ? c["incumbent"] : json();
    if (inc.is_object()) {
      f.incumbent_status = str(inc, "status", "?");
      f.incumbent_metrics = inc.contains("metrics") ? inc["metrics"] : json::object();
      if (f.incumbent_status == "incorrect")
        v.notes.push_back(fmt::format("case {}: the incumbent is incorrect ({}); only the submission must be correct",
                                      f.test_case_id, clip(str(inc, "message"))));
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
          v.reasons.push_back(fmt::format(
              "case {}: no A/B comparison with the incumbent (incumbent {}: {}); without one a speed-up "
              "cannot be shown",
              f.test_case_id, f.incumbent_status.empty() ? "not timed" : f.incumbent_status,
              clip(str(inc, "message", "the judge ran without incumbent_src"))));
      } else {
        speedups.push_back(*f.speedup);
        pairs += f.pairs;
        wins += f.faster_pairs;
      }
    }
    v.cases.push_back(std::move(f));
  }

  if (v.reasons.empty() && !(overall.is_object() && overall.value("accept", false) == true))
    v.reasons.push_back("the judge did not accept the run: " + clip(str(overall, "accept_reason", "no reason given")));

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
