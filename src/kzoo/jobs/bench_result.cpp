#include "kzoo/jobs/bench_result.hpp"

#include <chrono>
#include <cmath>

#include "kzoo/format/json_schema.hpp"
#include "kzoo/format/yaml_json.hpp"
#include "kzoo/util/iso_time.hpp"

namespace kzoo::jobs {
namespace {

using nlohmann::json;

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

std::string direction_of(const Directions& d, const std::string& case_id, const std::string& metric) {
  if (auto c = d.find(case_id); c != d.end())
    if (auto m = c->second.find(metric); m != c->second.end()) return m->second;
  for (const char* suf : {"_us", "_ms", "_ns", "_s", "time"})
    if (ends_with(metric, suf)) return "lower";
  return "higher";
}

}  // namespace

Directions directions_from_metas(const json& metas) {
  Directions d;
  if (!metas.is_array()) return d;
  for (const auto& m : metas) {
    if (!m.is_object() || !m.contains("test_case_id") || !m["test_case_id"].is_string()) continue;
    auto& slot = d[m["test_case_id"].get<std::string>()];
    if (m.contains("metrics") && m["metrics"].is_array())
      for (const auto& x : m["metrics"])
        if (x.is_object() && x.contains("name") && x["name"].is_string() && x.contains("direction") &&
            x["direction"].is_string())
          slot[x["name"].get<std::string>()] = x["direction"].get<std::string>();
  }
  return d;
}

std::string document_device_class(const json& document) {
  if (!document.is_object() || !document.contains("device_class") || !document["device_class"].is_string()) return "";
  return document["device_class"].get<std::string>();
}

std::string foreign_device_reason(const json& document, const std::string& kernel_id) {
  const std::string arch = kernel_id.substr(0, kernel_id.find('/'));
  const std::string produced = document_device_class(document);
  if (!produced.empty() && produced == arch) return "";
  return (produced.empty() ? std::string("the result does not say which device class produced it")
                           : "the result was produced on device class " + produced) +
         ", not on " + kernel_id + "'s device class " + arch +
         ": kept in the job's evidence, labelled, and not entered into bench_result.yaml";
}

Result<std::string> next_bench_result(const std::string& current_yaml, const std::string& kernel_id,
                                      const json& document, const Directions& directions,
                                      const std::string& evidence_commit, const std::string& now_iso) {
  const bool foreign = !foreign_device_reason(document, kernel_id).empty();
  if (foreign && current_yaml.find_first_not_of(" \t\r\n") != std::string::npos) return current_yaml;
  json br;
  if (current_yaml.find_first_not_of(" \t\r\n") == std::string::npos) {
    br = json{{"schema_version", "1"}, {"kernel_id", kernel_id}, {"cases", json::array()}};
  } else {
    auto parsed = format::parse_yaml(current_yaml, kernel_id + "/.kernel_package/bench_result.yaml");
    if (!parsed) return fail("the repository's bench_result.yaml cannot be read: " + to_string(parsed.error()));
    br = std::move(*parsed);
    if (!br.is_object()) return fail("the repository's bench_result.yaml of " + kernel_id + " is not a mapping");
    if (!br.contains("cases") || !br["cases"].is_array()) br["cases"] = json::array();
    br["kernel_id"] = kernel_id;
    if (!br.contains("schema_version")) br["schema_version"] = "1";
  }
  if (!document.is_object() || !document.contains("cases") || !document["cases"].is_array())
    return fail("the benchmark document has no cases to record");
  for (const auto& c : document["cases"]) {
    if (foreign) break;  // an empty file becomes an empty, valid one; nothing of another device enters
    if (!c.is_object() || !c.contains("test_case_id") || !c["test_case_id"].is_string()) continue;
    if (!c.contains("metrics") || !c["metrics"].is_object()) continue;
    const std::string id = c["test_case_id"];
    json current = json::object();
    for (const auto& [name, v] : c["metrics"].items())
      if (v.is_number() && std::isfinite(v.get<double>())) current[name] = v;
    if (current.empty()) continue;
    json* entry = nullptr;
    for (auto& e : br["cases"])
      if (e.is_object() && e.value("test_case_id", "") == id) entry = &e;
    if (!entry) {
      br["cases"].push_back(json{{"test_case_id", id}, {"metrics_best", json::object()}, {"metrics_current", json::object()}});
      entry = &br["cases"].back();
    }
    json& best = (*entry)["metrics_best"];
    if (!best.is_object()) best = json::object();
    bool improved = false;
    for (const auto& [name, v] : current.items()) {
      double now = v.get<double>();
      bool better = !best.contains(name) || !best[name].is_number();
      if (!better) {
        double old = best[name].get<double>();
        better = direction_of(directions, id, name) == "lower" ? now < old : now > old;
      }
      if (better) {
        best[name] = v;
        improved = true;
      }
    }
    (*entry)["metrics_current"] = current;
    if (improved && !evidence_commit.empty()) (*entry)["best_commit"] = evidence_commit;
    (*entry)["updated_at"] = now_iso;
  }
  auto violations = format::SchemaSet::bundled().validate(br, "bench_result", kernel_id + "/.kernel_package/bench_result.yaml");
  if (!violations.empty())
    return fail("the new bench_result.yaml would break its schema: " + to_string(violations.front()));
  return format::to_yaml(br);
}

std::string utc_now_iso() {
  return iso8601_utc(std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count());
}

}  // namespace kzoo::jobs
