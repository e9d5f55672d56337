// The read side of the API: submissions, kernels, job logs, metrics.
#include <charconv>

#include <fmt/format.h>

#include "kzoo/format/yaml_json.hpp"
#include "kzoo/server/api.hpp"

namespace kzoo::server {
namespace {

std::int64_t parse_id(const std::string& s) {
  std::int64_t v = 0;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

// A YAML file of a package at `rev`, as JSON; null when absent or unreadable
// (the listing must not fail because one package's metadata is damaged).
nlohmann::json read_yaml(const store::KernelRepo& repo, const std::string& path, const std::string& rev) {
  auto text = repo.read_file(path, rev);
  if (!text) return nullptr;
  auto doc = format::parse_yaml(*text, path);
  if (!doc) return nullptr;
  return *doc;
}

// bench_result.yaml's cases as {test_case_id: {metrics_best, metrics_current}}.
nlohmann::json bench_metrics(const nlohmann::json& bench) {
  nlohmann::json out = nlohmann::json::object();
  if (!bench.is_object() || !bench.contains("cases") || !bench["cases"].is_array()) return out;
  for (const auto& c : bench["cases"]) {
    if (!c.is_object() || !c.contains("test_case_id") || !c["test_case_id"].is_string()) continue;
    out[c["test_case_id"].get<std::string>()] = {{"metrics_best", c.value("metrics_best", nlohmann::json::object())},
                                                 {"metrics_current", c.value("metrics_current", nlohmann::json::object())}};
  }
  return out;
}

// Per case, what a contributor acts on, as the worker's verdict carries it
// (verdict::CaseFigures::feedback, with the board's figures added by
// jobs::grade_job): the metric and its % of the device's roofline, the
// speed-ups over the incumbent and over eager, the top kernels, and on a
// failure the errors with the worst element. Nothing is recomputed here.
nlohmann::json verdict_cases(const nlohmann::json& verdict) {
  nlohmann::json out = nlohmann::json::array();
  if (!verdict.is_object() || !verdict.contains("cases") || !verdict["cases"].is_array()) return out;
  for (const auto& c : verdict["cases"]) {
    if (!c.is_object()) continue;
    nlohmann::json x = nlohmann::json::object();
    for (const char* k : {"test_case_id", "status", "correct", "metrics", "error_rel", "error_abs_max", "message"})
      if (c.contains(k)) x[k] = c[k];
    x["speedup_over_incumbent"] = c.contains("speedup") ? c["speedup"] : nlohmann::json();
    const nlohmann::json f = c.contains("feedback") && c["feedback"].is_object() ? c["feedback"] : nlohmann::json::object();
    for (const char* k : {"shape", "metric", "direction", "value", "time_us", "roofline_us", "roofline_pct",
                          "speedup_over_eager", "eager_time_us", "error_rel", "error_abs_max", "bound_ratio_max",
                          "worst", "top_kernels", "gates", "message"})
      if (f.contains(k)) x[k] = f[k];
      else if (!x.contains(k)) x[k] = nullptr;
    out.push_back(x);
  }
  return out;
}

}  // namespace

Result<std::shared_ptr<const KernelIndex>> Api::kernels() {
  auto head = repo.head();
  if (!head) return tl::unexpected(head.error());
  {
    std::lock_guard lock(index_mu);
    if (index && index->head == *head) return index;
  }
  auto ids = repo.list_packages(*head);
  if (!ids) return tl::unexpected(ids.error());
  auto built = std::make_shared<KernelIndex>();
  built->head = *head;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& id : *ids) {
    built->ids.insert(id);
    auto desc = read_yaml(repo, id + "/.kernel_package/desc.yaml", *head);
    auto bench = read_yaml(repo, id + "/.kernel_package/bench_result.yaml", *head);
    nlohmann::json k = {{"kernel_id", id}, {"links", {{"self", "/api/kernels/" + id}}}};
    for (const char* f : {"name", "summary", "status", "category"})
      k[f] = desc.is_object() && desc.contains(f) ? desc[f] : nlohmann::json();
    if (k["status"].is_string()) built->status[id] = k["status"].get<std::string>();
    k["metrics"] = bench_metrics(bench);
    list.push_back(std::move(k));
  }
  built->body = nlohmann::json{{"head", *head}, {"kernels", list}}.dump(-1, ' ', false,
                                                                       nlohmann::json::error_handler_t::replace);
  std::lock_guard lock(index_mu);
  index = built;
  return std::shared_ptr<const KernelIndex>(built);
}

void Api::get_kernels(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  auto idx = kernels();
  if (!idx) return send_error(res, 500, "repository", idx.error().message);
  res.status = 200;
  res.set_content((*idx)->body, "application/json");
}

void Api::get_kernel(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  const std::string id = req.matches[1];
  auto idx = kernels();
  if (!idx) return send_error(res, 500, "repository", idx.error().message);
  if (!(*idx)->ids.count(id))
    return send_error(res, 404, "unknown_kernel",
                      fmt::format("kernel \"{}\" does not exist at {}: GET /api/kernels lists them", id,
                                  (*idx)->head.substr(0, 12)),
                      "kernel_id");
  const std::string& head = (*idx)->head;
  auto desc = read_yaml(repo, id + "/.kernel_package/desc.yaml", head);
  auto bench = read_yaml(repo, id + "/.kernel_package/bench_result.yaml", head);
  auto hist = repo.history(id, 100, head);
  if (!hist) return send_error(res, 500, "repository", hist.error().message);
  nlohmann::json h = nlohmann::json::array();
  for (const auto& c : *hist) {
    auto nl = c.message.find('\n');
    h.push_back({{"commit", c.id},
                 {"time", iso8601(c.time * 1000)},
                 {"author", c.author.name},
                 {"subject", c.message.substr(0, nl)},
                 {"message", c.message}});
  }
  send_json(res, 200, {{"kernel_id", id}, {"head", head}, {"desc", desc}, {"bench_result", bench}, {"history", h}});
}

void Api::get_submission(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto id = parse_id(req.matches[1]);
  auto s = (*lease)->get_submission(id);
  if (!s) {
    if (s.error().kind == store::StateError::not_found)
      return send_error(res, 404, "unknown_submission", fmt::format("no submission {}", id), "id");
    return send_error(res, http_status(s.error()), "database", s.error().message);
  }
  auto jobs = (*lease)->jobs_of(id);
  if (!jobs) return send_error(res, http_status(jobs.error()), "database", jobs.error().message);
  nlohmann::json js = nlohmann::json::array();
  // Where its job stands in line while it waits for a worker (kzoo submit
  // prints it while it waits).
  nlohmann::json position = nullptr;
  for (const auto& j : *jobs) {
    std::optional<std::int64_t> pos;
    if (j.state == store::State::queued && !j.held) {
      auto p = (*lease)->queue_position(j.id);
      if (!p) return send_error(res, http_status(p.error()), "database", p.error().message);
      pos = *p;
      if (pos) position = *pos;
    }
    js.push_back(job_json(j, pos));
  }
  send_json(res, 200,
            {{"id", s->id},
             {"kernel_id", s->kernel_id},
             {"submitter_id", s->submitter_id},
             {"route", s->route.empty() ? nlohmann::json() : nlohmann::json(s->route)},
             {"kind", s->kind},
             {"optimization_summary", s->summary},
             {"sha256", s->sha256},
             {"state", store::to_string(s->state)},
             {"final", store::is_final(s->state)},
             {"verdict", s->verdict},
             // The device class that produced the figures (null before a verdict); its
             // provenance (GPU, driver, CUDA, torch, judge, task hash) is verdict.provenance.
             {"device_class", s->verdict.is_object() && s->verdict.contains("device_class") ? s->verdict["device_class"]
                                                                                            : nlohmann::json()},
             {"cases", verdict_cases(s->verdict)},
             {"reasons", s->reasons},
             {"accepted_commit", s->accepted_commit.empty() ? nlohmann::json() : nlohmann::json(s->accepted_commit)},
             {"created_at", iso8601(s->created_at)},
             {"updated_at", iso8601(s->updated_at)},
             {"jobs", js},
             {"queue_position", position},
             {"links", {{"self", fmt::format("/api/submissions/{}", s->id)}, {"page", fmt::format("/submissions/{}", s->id)}}}});
}

void Api::get_job_log(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  auto id = parse_id(req.matches[1]);
  {
    auto lease = db.get();
    if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
    auto j = (*lease)->get_job(id);
    if (!j) {
      if (j.error().kind == store::StateError::not_found)
        return send_error(res, 404, "unknown_job", fmt::format("no job {}", id), "id");
      return send_error(res, http_status(j.error()), "database", j.error().message);
    }
  }
  auto ev = repo.read_job_evidence(std::to_string(id));
  if (!ev)
    return send_error(res, 404, "no_log",
                      fmt::format("job {} has no evidence (refs/jobs/{}): it is recorded when the job ends, and that "
                                  "of a job that ended rejected, failed or cancelled goes after the site's retention "
                                  "(kzoo maintain --keep-days); its verdict stays at /api/submissions",
                                  id, id));
  auto it = ev->find("stderr.log");
  if (it == ev->end()) {
    std::string names;
    for (auto& [k, v] : *ev) names += (names.empty() ? "" : ", ") + k;
    return send_error(res, 404, "no_log", fmt::format("job {}'s evidence has no stderr.log (it has: {})", id, names));
  }
  res.status = 200;
  res.set_content(it->second, "text/plain; charset=utf-8");
}

void Api::get_metrics(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  Metrics::Gauges g;
  auto lease = db.get();
  if (lease) {
    for (auto s : {store::State::queued, store::State::running, store::State::accepted, store::State::rejected,
                   store::State::failed, store::State::cancelled}) {
      auto n = (*lease)->count_jobs(s);
      if (n) g.jobs_by_state[std::string(store::to_string(s))] = *n;
    }
    g.queue_depth = g.jobs_by_state["queued"];
  }
  res.status = 200;
  res.set_content(metrics.render(g), "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace kzoo::server
