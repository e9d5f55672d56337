#include "kzoo/board/score.hpp"

#include <cmath>

namespace kzoo::board {

using nlohmann::json;

std::string result_device_class(const json& run, const json& benchmark_output) {
  if (run.is_object()) {
    if (run.contains("device_class") && run["device_class"].is_string()) return run["device_class"];
    if (run.value("device", "") == "cpu") return "cpu";
  }
  if (benchmark_output.is_object() && benchmark_output.value("arch", "") == "cpu") return "cpu";
  return "";
}

Primaries primaries_from_metas(const json& metas) {
  Primaries out;
  if (!metas.is_array()) return out;
  for (const auto& m : metas) {
    if (!m.is_object() || !m.contains("test_case_id") || !m["test_case_id"].is_string()) continue;
    std::string primary = m.value("primary_metric", "");
    std::string dir = "higher";
    if (m.contains("metrics") && m["metrics"].is_array())
      for (const auto& x : m["metrics"])
        if (x.is_object() && x.value("name", "") == primary) dir = x.value("direction", "higher");
    out[m["test_case_id"]] = {primary, dir};
  }
  return out;
}

namespace {

std::optional<double> num(const json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_number()) {
    double v = j[key].get<double>();
    if (std::isfinite(v)) return v;
  }
  return std::nullopt;
}

std::optional<double> time_metric_us(const json& metrics) {
  if (!metrics.is_object()) return std::nullopt;
  for (auto& [k, v] : metrics.items()) {
    if (!v.is_number()) continue;
    double x = v.get<double>();
    if (k.ends_with("_us")) return x;
    if (k.ends_with("_ms")) return x * 1e3;
    if (k.ends_with("_ns")) return x / 1e3;
  }
  return std::nullopt;
}

}  // namespace

json measured_cases(const json& doc, const Primaries& primaries) {
  json cases = json::array();
  bool all_ok = doc.is_object() && doc.contains("cases") && doc["cases"].is_array() && !doc["cases"].empty();
  if (doc.is_object() && doc.contains("cases") && doc["cases"].is_array())
    for (const auto& c : doc["cases"]) {
      if (!c.is_object() || !c.contains("test_case_id") || !c["test_case_id"].is_string()) continue;
      std::string id = c["test_case_id"];
      auto p = primaries.find(id);
      std::string metric = p != primaries.end() ? p->second.first : "";
      std::string dir = p != primaries.end() ? p->second.second : "higher";
      const json metrics = c.value("metrics", json::object());
      if (metric.empty() && metrics.is_object() && !metrics.empty()) metric = metrics.begin().key();
      json roof = c.contains("gates") && c["gates"].is_object() && c["gates"].contains("roofline") ? c["gates"]["roofline"] : json();
      auto t = num(roof, "value");
      if (!t) t = time_metric_us(metrics);
      bool ok = c.value("status", "") == "ok" && c.value("correct", json()) == json(true);
      all_ok = all_ok && ok;
      json x = {{"id", id},
                {"metric", metric},
                {"direction", dir},
                {"value", num(metrics, metric.c_str()) ? json(*num(metrics, metric.c_str())) : json()},
                {"time_us", t ? json(*t) : json()},
                {"roofline_us", num(roof, "limit") ? json(*num(roof, "limit")) : json()},
                {"status", c.value("status", "")},
                {"correct", ok}};
      for (const char* k : {"error_rel", "error_abs_max"})
        x[k] = c.contains(k) ? c[k] : json();
      cases.push_back(x);
    }
  return {{"cases", cases}, {"correct", all_ok}};
}

namespace {

// The case speed-up (score.hpp): a ratio of times whichever way the metric points.
std::optional<double> case_speedup(const json& b, const json& c) {
  if (!b.is_object() || !c.is_object() || !b["value"].is_number() || !c["value"].is_number()) return std::nullopt;
  if (b["metric"] != c["metric"]) return std::nullopt;
  double bv = b["value"], cv = c["value"];
  if (!(bv > 0) || !(cv > 0)) return std::nullopt;
  return c["direction"] == "lower" ? bv / cv : cv / bv;
}

}  // namespace

json case_figures(const json& baseline, const json& candidate) {
  json out = json::object();
  std::map<std::string, json> base;
  if (baseline.is_object() && baseline.contains("cases") && baseline["cases"].is_array())
    for (const auto& b : baseline["cases"])
      if (b.is_object() && b.contains("id") && b["id"].is_string()) base[b["id"]] = b;
  if (!candidate.is_object() || !candidate.contains("cases") || !candidate["cases"].is_array()) return out;
  for (const auto& c : candidate["cases"]) {
    if (!c.is_object() || !c.contains("id") || !c["id"].is_string()) continue;
    json f = {{"metric", c.value("metric", "")}, {"direction", c.value("direction", "")},
              {"value", c.contains("value") ? c["value"] : json()}};
    auto it = base.find(c["id"]);
    if (it != base.end()) {
      if (auto r = case_speedup(it->second, c)) f["speedup_over_eager"] = *r;
      if (it->second.contains("time_us") && it->second["time_us"].is_number()) f["eager_time_us"] = it->second["time_us"];
    }
    out[c["id"].get<std::string>()] = f;
  }
  return out;
}

KernelFigures kernel_figures(const json& baseline, const json& candidate) {
  KernelFigures f;
  std::map<std::string, json> cand;
  if (candidate.contains("cases"))
    for (const auto& c : candidate["cases"]) cand[c["id"]] = c;
  std::vector<double> ratios;
  double eager = 0, time = 0, roof = 0;
  bool have_times = true, have_roof = true;
  if (!baseline.contains("cases") || baseline["cases"].empty()) {
    f.note = "no baseline";
    return f;
  }
  for (const auto& b : baseline["cases"]) {
    auto it = cand.find(b["id"]);
    if (it == cand.end()) {
      f.note = "no result for test case " + b["id"].get<std::string>();
      return f;
    }
    const json& c = it->second;
    if (!b["value"].is_number() || !c["value"].is_number() || !(b["value"].get<double>() > 0) ||
        !(c["value"].get<double>() > 0)) {
      f.note = "test case " + b["id"].get<std::string>() + " was not measured";
      return f;
    }
    if (b["metric"] != c["metric"]) {
      f.note = "test case " + b["id"].get<std::string>() + " measured another metric";
      return f;
    }
    ratios.push_back(*case_speedup(b, c));  // measured, positive and of one metric: checked above
    if (b["time_us"].is_number() && c["time_us"].is_number()) {
      eager += b["time_us"].get<double>();
      time += c["time_us"].get<double>();
    } else {
      have_times = false;
    }
    if (c["roofline_us"].is_number()) roof += c["roofline_us"].get<double>();
    else have_roof = false;
  }
  f.speedup = geomean(ratios);
  if (have_times) {
    f.eager_us = eager;
    f.time_us = time;
    if (have_roof && time > 0) f.roofline_pct = 100.0 * roof / time;
  }
  return f;
}

double geomean(const std::vector<double>& xs) {
  if (xs.empty()) return 1.0;
  double s = 0;
  for (double x : xs) s += std::log(x);
  return std::exp(s / static_cast<double>(xs.size()));
}

double board_score(const std::vector<std::string>& kernels, const std::map<std::string, double>& speedups) {
  std::vector<double> xs;
  for (const auto& k : kernels) {
    auto it = speedups.find(k);
    xs.push_back(it == speedups.end() ? 1.0 : it->second);
  }
  return geomean(xs);
}

}  // namespace kzoo::board
