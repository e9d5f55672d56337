// The board's routes (board/ computes, this file serves): GET /api/board,
// /api/boards/{version}, /api/routes, and POST /api/board/baselines, which
// queues a measurement of each board kernel's eager baseline.
#include <charconv>
#include <fstream>

#include <fmt/format.h>

#include "kzoo/board/board.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/server/api.hpp"
#include "kzoo/server/pages.hpp"
#include "kzoo/server/upload_file.hpp"
#include "kzoo/store/sqlite_state_db.hpp"

namespace kzoo::server {

void Api::get_board(const httplib::Request&, httplib::Response& res) {
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto b = board::board_json(repo, *(*lease).operator->(), std::nullopt, store::system_now_ms());
  if (!b) return send_error(res, 500, "board", b.error().message);
  if (!*b)
    return send_error(res, 404, "no_board",
                      "this project declares no checks yet: commit scienceslack.json at the root of kernel_data and "
                      "tag that commit `checks`");
  send_json(res, 200, **b);
}

void Api::get_board_version(const httplib::Request& req, httplib::Response& res) {
  int v = 0;
  const std::string s = req.matches[1];
  std::from_chars(s.data(), s.data() + s.size(), v);
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto b = board::board_json(repo, *(*lease).operator->(), v, store::system_now_ms());
  if (!b) return send_error(res, 500, "board", b.error().message);
  if (!*b) {
    auto vs = board::versions(repo);
    std::string known;
    if (vs)
      for (int x : *vs) known += (known.empty() ? "" : ", ") + std::to_string(x);
    return send_error(res, 404, "unknown_board",
                      fmt::format("there is no board of version {} (known: {})", v, known.empty() ? "none" : known),
                      "version");
  }
  send_json(res, 200, **b);
}

void Api::get_routes(const httplib::Request&, httplib::Response& res) {
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto r = board::routes_json(repo, *(*lease).operator->(), store::system_now_ms());
  if (!r) return send_error(res, 500, "board", r.error().message);
  send_json(res, 200, *r);
}

void Api::post_baselines(const httplib::Request& req, httplib::Response& res) {
  auto rules = board::rules_in_force(repo);
  if (!rules) return send_error(res, 500, "board", rules.error().message);
  if (!*rules)
    return send_error(res, 409, "no_board", "there is no board: tag a commit holding scienceslack.json `checks` first");
  std::vector<std::string> kernels;
  for (std::size_t i = 0; i < req.get_param_value_count("kernel"); ++i) {
    std::string k = req.get_param_value("kernel", i);
    if (std::find((*rules)->kernels.begin(), (*rules)->kernels.end(), k) == (*rules)->kernels.end())
      return send_error(res, 422, "unknown_kernel",
                        fmt::format("\"{}\" is not a kernel of the board in force (scienceslack.json at {})",
                                    package::detail::printable(k), (*rules)->commit.substr(0, 12)),
                        "kernel");
    kernels.push_back(k);
  }
  if (kernels.empty()) kernels = (*rules)->kernels;
  std::string submitter = req.has_param("submitter") ? req.get_param_value("submitter") : "kzoo-baseline";
  if (submitter.empty() || submitter.size() > 128 || submitter.find_first_of(" \t\r\n") != std::string::npos)
    return send_error(res, 400, "invalid_field", "submitter must be 1-128 bytes without whitespace", "submitter");
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : kernels) {
    auto commit = board::baseline_commit(repo, k);
    if (!commit) return send_error(res, 422, "no_baseline", commit.error().message, "kernel");
    auto tree = repo.read_package(k, *commit);
    if (!tree) return send_error(res, 500, "repository", tree.error().message);
    auto bytes = package::package_tarball_bytes(*tree, k);
    if (!bytes) return send_error(res, 500, "repository", bytes.error().message);
    // Kept like an upload, so the submission reads as every other one; the
    // worker measures the source from the repository at that commit, not this file.
    auto f = UploadFile::create(paths.uploads(), cfg.max_upload_bytes);
    if (!f) return send_error(res, 500, "storage", f.error().message);
    if (auto w = f->write(*bytes); !w) return send_error(res, 500, "storage", w.error().message);
    auto sha = f->finish();
    if (!sha) return send_error(res, 500, "storage", sha.error().message);
    std::string name = *sha + "-" + f->temp_path().substr(f->temp_path().size() - 6) + ".tar.gz";
    store::NewSubmission ns{k, submitter,
                            fmt::format("eager baseline of {} (source at {}) for board v{} on {}", k,
                                        commit->substr(0, 12), (*rules)->version, (*rules)->device_class),
                            paths.uploads() + "/" + name, *sha};
    ns.kind = "baseline";
    auto s = (*lease)->create_submission(ns);
    if (!s) return send_error(res, http_status(s.error()), "database", s.error().message);
    if (auto c = f->commit(name); !c) return send_error(res, 500, "storage", c.error().message);
    auto job = (*lease)->enqueue(s->id, cfg.max_attempts);
    if (!job) return send_error(res, http_status(job.error()), "database", job.error().message);
    out.push_back({{"id", s->id}, {"kernel_id", k}, {"job_id", job->id}, {"baseline_commit", *commit},
                   {"links", {{"self", fmt::format("/api/submissions/{}", s->id)}}}});
  }
  send_json(res, 202, {{"version", (*rules)->version}, {"device_class", (*rules)->device_class}, {"submissions", out}});
}

namespace {

void send_html(httplib::Response& res, int status, const std::string& html) {
  res.status = status;
  res.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:");
  res.set_content(html, "text/html; charset=utf-8");
}

}  // namespace

void Api::page_board(const httplib::Request&, httplib::Response& res) {
  auto lease = db.get();
  if (!lease) return send_html(res, 503, render_message_page("Board unavailable", lease.error().message));
  auto b = board::board_json(repo, *(*lease).operator->(), std::nullopt, store::system_now_ms());
  if (!b) return send_html(res, 500, render_message_page("Board unavailable", b.error().message));
  if (!*b)
    return send_html(res, 200,
                     render_message_page("No board yet",
                                         "This project declares no checks yet: commit scienceslack.json at the root "
                                         "of kernel_data and tag that commit `checks`."));
  send_html(res, 200, render_board_page(**b));
}

void Api::page_board_version(const httplib::Request& req, httplib::Response& res) {
  int v = 0;
  const std::string s = req.matches[1];
  std::from_chars(s.data(), s.data() + s.size(), v);
  auto lease = db.get();
  if (!lease) return send_html(res, 503, render_message_page("Board unavailable", lease.error().message));
  auto b = board::board_json(repo, *(*lease).operator->(), v, store::system_now_ms());
  if (!b) return send_html(res, 500, render_message_page("Board unavailable", b.error().message));
  if (!*b) return send_html(res, 404, render_message_page("No such board", fmt::format("There is no board of version {}.", v)));
  send_html(res, 200, render_board_page(**b));
}

void Api::page_kernel(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  auto idx = kernels();
  if (!idx) return send_html(res, 500, render_message_page("Repository unavailable", idx.error().message));
  if (!(*idx)->ids.count(id))
    return send_html(res, 404, render_message_page("No such kernel", fmt::format("There is no kernel {}.", id)));
  auto lease = db.get();
  if (!lease) return send_html(res, 503, render_message_page("Board unavailable", lease.error().message));
  auto k = board::kernel_json(repo, *(*lease).operator->(), id);
  if (!k) return send_html(res, 500, render_message_page("Kernel unavailable", k.error().message));
  send_html(res, 200, render_kernel_page(*k));
}

void Api::page_submission(const httplib::Request& req, httplib::Response& res) {
  std::int64_t id = 0;
  const std::string s = req.matches[1];
  std::from_chars(s.data(), s.data() + s.size(), id);
  auto lease = db.get();
  if (!lease) return send_html(res, 503, render_message_page("Unavailable", lease.error().message));
  auto sub = (*lease)->get_submission(id);
  if (!sub)
    return send_html(res, sub.error().kind == store::StateError::not_found ? 404 : 500,
                     render_message_page("No such submission", sub.error().message));
  auto jobs = (*lease)->jobs_of(id);
  nlohmann::json js = nlohmann::json::array();
  if (jobs)
    for (const auto& j : *jobs) js.push_back({{"id", j.id}, {"state", store::to_string(j.state)}});
  send_html(res, 200,
            render_submission_page({{"id", sub->id}, {"kernel_id", sub->kernel_id}, {"submitter_id", sub->submitter_id},
                                    {"summary", sub->summary}, {"state", store::to_string(sub->state)},
                                    {"verdict", sub->verdict}, {"reasons", sub->reasons},
                                    {"accepted_commit", sub->accepted_commit}, {"created_at", iso8601(sub->created_at)},
                                    {"route", sub->route}, {"kind", sub->kind}, {"jobs", js}}));
}

}  // namespace kzoo::server
