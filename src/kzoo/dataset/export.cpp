#include "kzoo/dataset/export.hpp"

#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "kzoo/format/yaml_json.hpp"
#include "kzoo/util/iso_time.hpp"

namespace kzoo::dataset {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json get_or_null(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) ? obj[key] : json();
}

json text_or_null(const std::string& s) { return s.empty() ? json() : json(s); }

// The number at obj[key], or null: a figure the run did not produce.
json number_or_null(const json& obj, const char* key) {
  json v = get_or_null(obj, key);
  return v.is_number() ? v : json();
}

// `path`.tmp written whole, then renamed onto `path`.
Result<void> write_lines(const fs::path& path, const std::vector<std::string>& lines) {
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return fail(fmt::format("cannot write {}: check that the directory is writable", tmp.string()));
    for (const auto& l : lines) out << l << '\n';
    out.flush();
    if (!out) return fail(fmt::format("cannot write {} (disk full?)", tmp.string()));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return fail(fmt::format("cannot move {} into place: {}", tmp.string(), ec.message()));
  return ok();
}

std::string line_of(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

std::vector<json> result_records(const store::Submission& sub, const store::Job& job, const std::string& task) {
  std::vector<json> out;
  const json doc = get_or_null(job.result, "benchmark_output");
  const json cases = get_or_null(doc, "cases");
  if (!cases.is_array()) return out;
  // The verdict's cases carry the feedback the submitter was shown (the
  // shape, the roofline, the speed-ups); the judge's cases the rest.
  std::map<std::string, json> judged;
  const json vcases = get_or_null(sub.verdict, "cases");
  if (vcases.is_array())
    for (const auto& c : vcases)
      if (c.is_object() && c.contains("test_case_id") && c["test_case_id"].is_string()) judged[c["test_case_id"]] = c;
  const json check = get_or_null(job.result, "check");
  const json provenance = get_or_null(sub.verdict, "provenance").is_object() ? sub.verdict["provenance"]
                                                                             : get_or_null(doc, "provenance");
  json device_class = get_or_null(check, "device_class");
  if (!device_class.is_string()) device_class = get_or_null(sub.verdict, "device_class");
  if (!device_class.is_string()) device_class = get_or_null(doc, "device_class");
  for (const auto& c : cases) {
    if (!c.is_object() || !c.contains("test_case_id") || !c["test_case_id"].is_string()) continue;
    const std::string id = c["test_case_id"];
    const json v = judged.count(id) ? judged[id] : json::object();
    const json f = get_or_null(v, "feedback").is_object() ? v["feedback"] : json::object();
    json metric = get_or_null(f, "metric");
    json value = number_or_null(f, "value");
    if (!metric.is_string()) {
      // No board figures (an older verdict): the first metric the judge reported.
      const json m = get_or_null(c, "metrics");
      if (m.is_object() && !m.empty()) {
        metric = m.begin().key();
        value = m.begin().value().is_number() ? m.begin().value() : json();
      } else {
        metric = nullptr;
      }
    }
    json roof = get_or_null(get_or_null(c, "gates"), "roofline");
    json time_us = f.contains("time_us") ? f["time_us"] : number_or_null(roof, "value");
    json roofline_us = f.contains("roofline_us") ? f["roofline_us"] : number_or_null(roof, "limit");
    json record = {
        {"schema_version", kResultSchemaVersion},
        {"kernel_id", sub.kernel_id},
        {"task", text_or_null(task)},
        {"test_case_id", id},
        {"params", get_or_null(f, "params").is_object() ? f["params"] : json()},
        {"shape", get_or_null(f, "shape").is_string() ? f["shape"] : json()},
        {"device_class", device_class.is_string() ? device_class : json()},
        {"metric", metric},
        {"direction", get_or_null(f, "direction").is_string() ? f["direction"] : json()},
        {"value", value},
        {"time_us", time_us.is_number() ? time_us : json()},
        {"roofline_us", roofline_us.is_number() ? roofline_us : json()},
        {"roofline_pct", number_or_null(f, "roofline_pct")},
        {"speedup_over_incumbent", number_or_null(v, "speedup")},
        {"speedup_over_eager", number_or_null(f, "speedup_over_eager")},
        {"status", get_or_null(c, "status").is_string() ? c["status"] : json()},
        {"correct", get_or_null(c, "correct").is_boolean() ? c["correct"] : json()},
        {"error_rel", number_or_null(c, "error_rel")},
        {"error_abs_max", number_or_null(c, "error_abs_max")},
        {"verdict", std::string(store::to_string(sub.state))},
        {"commit", text_or_null(sub.accepted_commit)},
        {"evidence_commit", get_or_null(job.result, "evidence_commit").is_string() ? job.result["evidence_commit"] : json()},
        {"rules_version", get_or_null(check, "version").is_number_integer() ? check["version"] : json()},
        {"rules_commit", get_or_null(check, "rules_commit").is_string() ? check["rules_commit"] : json()},
        {"software", provenance.is_object() ? provenance : json()},
        {"submission_id", sub.id},
        {"job_id", job.id},
        {"submitter_id", sub.submitter_id},
        {"route", text_or_null(sub.route)},
        {"kind", sub.kind},
        {"graded_at", job.finished_at ? json(iso8601_utc(*job.finished_at)) : json()},
    };
    out.push_back(std::move(record));
  }
  return out;
}

std::string task_of(const store::KernelRepo& repo, const std::string& kernel_id) {
  const std::string path = kernel_id + "/.kernel_package/desc.yaml";
  auto text = repo.read_file(path);
  if (!text) return "";
  auto desc = format::parse_yaml(*text, path);
  if (!desc || !desc->is_object()) return "";
  const json refs = get_or_null(*desc, "reference_sources");
  if (!refs.is_array()) return "";
  for (const auto& r : refs)
    if (r.is_object() && r.value("kind", json()) == json("task") && r.contains("ref") && r["ref"].is_string())
      return r["ref"];
  return "";
}

Result<ExportCounts> export_dataset(store::StateDb& db, const store::KernelRepo& repo,
                                    const std::string& catalog_tasks_dir, const std::string& out_dir) {
  ExportCounts n;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return fail(fmt::format("cannot create {}: {}", out_dir, ec.message()));

  // Tasks, by name, each as the catalog holds it.
  std::vector<std::string> task_lines;
  if (!catalog_tasks_dir.empty() && fs::is_directory(catalog_tasks_dir)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(catalog_tasks_dir, ec))
      if (fs::is_regular_file(e.path() / "task.json")) files.push_back(e.path() / "task.json");
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      json t = json::parse(in, nullptr, false);
      if (t.is_discarded() || !t.is_object())
        return fail(fmt::format("{} is not a JSON object: fix it (kzoo task lint {}) before exporting", f.string(),
                                f.string()));
      task_lines.push_back(line_of(t));
    }
  }
  n.tasks = static_cast<int>(task_lines.size());

  // Graded jobs, oldest first, a page at a time.
  std::vector<std::string> result_lines;
  std::map<std::string, std::string> tasks_by_kernel;
  store::JobFilter f;
  f.states = {store::State::accepted, store::State::rejected};
  f.after_id = 0;
  f.limit = 500;
  for (;;) {
    auto page = db.list_jobs(f);
    if (!page) return fail("cannot list the graded jobs: " + page.error().message);
    for (const auto& l : *page) {
      auto sub = db.get_submission(l.job.submission_id);
      if (!sub) return fail("cannot read submission " + std::to_string(l.job.submission_id) + ": " + sub.error().message);
      auto it = tasks_by_kernel.find(sub->kernel_id);
      if (it == tasks_by_kernel.end()) it = tasks_by_kernel.emplace(sub->kernel_id, task_of(repo, sub->kernel_id)).first;
      auto records = result_records(*sub, l.job, it->second);
      if (!records.empty()) ++n.jobs;
      for (const auto& r : records) result_lines.push_back(line_of(r));
    }
    if (static_cast<int>(page->size()) < f.limit) break;
    f.after_id = page->back().job.id;
  }
  n.results = static_cast<int>(result_lines.size());

  if (auto w = write_lines(fs::path(out_dir) / "tasks.jsonl", task_lines); !w) return tl::unexpected(w.error());
  if (auto w = write_lines(fs::path(out_dir) / "results.jsonl", result_lines); !w) return tl::unexpected(w.error());
  return n;
}

}  // namespace kzoo::dataset
