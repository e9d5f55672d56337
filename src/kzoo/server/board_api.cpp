// The board's routes (board/ computes, this file serves): GET /api/board,
// /api/boards/{version}, /api/routes, and POST /api/board/baselines, which
// queues a measurement of each board kernel's eager baseline.
#include <charconv>
#include <climits>
#include <fstream>
#include <regex>

#include <fmt/format.h>

#include "kzoo/board/board.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/server/api.hpp"
#include "kzoo/server/pages.hpp"
#include "kzoo/server/upload_file.hpp"
#include "kzoo/store/open_state.hpp"

namespace kzoo::server {

void Api::get_board(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
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
  if (!require(req, res, access::Action::read)) return;
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

void Api::get_routes(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto r = board::routes_json(repo, *(*lease).operator->(), store::system_now_ms());
  if (!r) return send_error(res, 500, "board", r.error().message);
  send_json(res, 200, *r);
}

void Api::post_baselines(const httplib::Request& req, httplib::Response& res) {
  auto caller = require(req, res, access::Action::measure_baselines);
  if (!caller) return;
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
  // The maintainer who asks is the submitter of record.
  const std::string submitter = caller->who->user;
  if (req.has_param("submitter") && req.get_param_value("submitter") != submitter)
    return send_error(res, 403, "submitter_mismatch",
                      fmt::format("submitter \"{}\" is not the owner of this token ({}): leave it out",
                                  package::detail::printable(req.get_param_value("submitter")),
                                  access::describe(*caller->who)),
                      "submitter");
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  (*lease)->set_actor(caller->actor());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& k : kernels) {
    auto commit = board::baseline_commit(repo, k);
    if (!commit) return send_error(res, 422, "no_baseline", commit.error().message, "kernel");
    auto tree = repo.read_package(k, *commit);
    if (!tree) return send_error(res, 500, "repository", tree.error().message);
    // The worker measures the source from the repository at that commit, not this file.
    auto kept = keep_tree(k, *tree);
    if (!kept) return send_error(res, 500, "storage", kept.error().message);
    store::NewSubmission ns;
    ns.kernel_id = k;
    ns.submitter_id = submitter;
    ns.summary = fmt::format("eager baseline of {} (source at {}) for board v{} on {}", k, commit->substr(0, 12),
                             (*rules)->version, (*rules)->device_class);
    ns.package_path = kept->path;
    ns.sha256 = kept->sha256;
    ns.kind = "baseline";
    ns.received_by = cfg.server_id;
    ns.token_id = caller->who->token_id;  // package_bytes stays 0: the server made these bytes
    auto s = (*lease)->create_submission(ns);
    if (!s) return send_error(res, http_status(s.error()), "database", s.error().message);
    if (auto c = kept->file.commit(kept->name); !c) return send_error(res, 500, "storage", c.error().message);
    auto job = (*lease)->enqueue(s->id, cfg.max_attempts, false, needs_of(k));
    if (!job) return send_error(res, http_status(job.error()), "database", job.error().message);
    out.push_back({{"id", s->id}, {"kernel_id", k}, {"job_id", job->id}, {"baseline_commit", *commit},
                   {"links", {{"self", fmt::format("/api/submissions/{}", s->id)}}}});
  }
  send_json(res, 202, {{"version", (*rules)->version}, {"device_class", (*rules)->device_class}, {"submissions", out}});
}

namespace {

// The JSON object a maintainer's board request carries; nullopt (res filled) when it is not one.
std::optional<nlohmann::json> object_body(const httplib::Request& req, httplib::Response& res) {
  auto doc = format::parse_json(req.body.empty() ? std::string("{}") : req.body, "request body",
                                {.max_bytes = 64u << 10, .max_depth = 8});
  if (!doc || !doc->is_object()) {
    send_error(res, 400, "invalid_body", doc ? "the body must be a JSON object" : to_string(doc.error()));
    return std::nullopt;
  }
  return *doc;
}

}  // namespace

void Api::post_board_status(const httplib::Request& req, httplib::Response& res) {
  auto caller = require(req, res, access::Action::set_board_status);
  if (!caller) return;
  auto body = object_body(req, res);
  if (!body) return;
  const auto& st = body->value("status", nlohmann::json());
  if (!st.is_string())
    return send_error(res, 400, "invalid_field", "status must be active, saturated, superseded or flawed", "status");
  auto in_force = board::rules_in_force(repo);
  if (!in_force) return send_error(res, 500, "board", in_force.error().message);
  int version = 0;
  if (const auto& v = body->value("version", nlohmann::json()); v.is_number_integer()) {
    // Range first: get<int> would cut 4294967297 down to 1 and set another board's status.
    const bool in_range = v.is_number_unsigned()
                              ? v.get<std::uint64_t>() >= 1 && v.get<std::uint64_t>() <= INT_MAX
                              : v.get<std::int64_t>() >= 1 && v.get<std::int64_t>() <= INT_MAX;
    if (!in_range)
      return send_error(res, 400, "invalid_field",
                        fmt::format("version {} is no board version: versions are whole numbers from 1 to 2147483647 "
                                    "(leave it out for the board in force)",
                                    v.dump()),
                        "version");
    version = v.get<int>();
    auto known = board::rules_of_version(repo, version);
    if (!known || !*known)
      return send_error(res, 404, "unknown_board", fmt::format("there is no board of version {}", version), "version");
  } else if (!v.is_null()) {
    return send_error(res, 400, "invalid_field", "version must be an integer (default: the board in force)", "version");
  } else if (*in_force) {
    version = (*in_force)->version;
  } else {
    return send_error(res, 409, "no_board", "there is no board: tag a commit holding scienceslack.json `checks` first");
  }
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  (*lease)->set_actor(caller->actor());
  auto set = (*lease)->set_board_status(version, st.get<std::string>());
  if (!set)
    return send_error(res, http_status(set.error()),
                      set.error().kind == store::StateError::invalid ? "invalid_field" : "database", set.error().message,
                      "status");
  send_json(res, 200,
            {{"version", set->version}, {"status", set->status}, {"set_by", set->set_by}, {"set_at", iso8601(set->set_at)}});
}

void Api::post_board_checks(const httplib::Request& req, httplib::Response& res) {
  auto caller = require(req, res, access::Action::move_checks_tag);
  if (!caller) return;
  auto body = object_body(req, res);
  if (!body) return;
  const auto& c = body->value("commit", nlohmann::json());
  static const std::regex kCommit("^[0-9a-f]{40}$");
  if (!c.is_string() || !std::regex_match(c.get<std::string>(), kCommit))
    return send_error(res, 400, "invalid_field", "commit must be a full commit id (40 hex digits) of kernel_data",
                      "commit");
  // The audit trail must be reachable before the tag moves: a move it cannot record is refused.
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  (*lease)->set_actor(caller->actor());
  auto before = board::rules_in_force(repo);
  auto approved = board::approve_rules(repo, c.get<std::string>());
  if (!approved) return send_error(res, 422, "invalid_rules", approved.error().message, "commit");
  auto audited = (*lease)->append_audit("board.checks", "refs/tags/checks",
                                        {{"from", before && *before ? nlohmann::json((*before)->commit) : nlohmann::json()},
                                         {"to", approved->commit},
                                         {"version", approved->version}});
  if (!audited) {
    // Put the tag back where it was, so no approval stands unrecorded.
    std::string undo = "there was no earlier approval to restore: remove refs/tags/checks by hand";
    if (before && *before)
      undo = repo.set_ref("refs/tags/checks", (*before)->commit) ? "the checks tag is back at " + (*before)->commit
                                                                 : "the checks tag could not be restored";
    return send_error(res, 500, "audit", "the approval could not be written to the audit trail (" +
                                             audited.error().message + "); " + undo + ". Try again.");
  }
  send_json(res, 200, {{"commit", approved->commit}, {"version", approved->version}, {"status", approved->status},
                       {"kernels", approved->kernels}});
}

void send_html(httplib::Response& res, int status, const std::string& html) {
  res.status = status;
  res.set_header("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:");
  res.set_content(html, "text/html; charset=utf-8");
}

// Pages are read like the JSON they show (require_token_for_reads); a refusal
// is a page too, with the same status.
bool Api::page_readable(const httplib::Request& req, httplib::Response& res) {
  if (require(req, res, access::Action::read)) return true;
  auto doc = nlohmann::json::parse(res.body, nullptr, false);
  std::string why = doc.is_object() && doc.contains("error") ? doc["error"].value("message", "") : "";
  send_html(res, res.status, render_message_page("Not allowed", why));
  return false;
}

void Api::page_board(const httplib::Request& req, httplib::Response& res) {
  if (!page_readable(req, res)) return;
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
  if (!page_readable(req, res)) return;
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
  if (!page_readable(req, res)) return;
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
  if (!page_readable(req, res)) return;
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
    for (const auto& j : *jobs)
      js.push_back({{"id", j.id},
                    {"state", store::to_string(j.state)},
                    {"hold_reason", j.held && j.state == store::State::queued ? nlohmann::json(j.hold_reason) : nlohmann::json(false)}});
  nlohmann::json pull = false;
  if (auto p = (*lease)->get_pull(id); p) {
    nlohmann::json cs = nlohmann::json::array();
    if (auto c = (*lease)->comments(id); c)
      for (const auto& x : *c)
        cs.push_back({{"who", x.who}, {"kind", store::to_string(x.kind)}, {"at", iso8601(x.at)}, {"body", x.body}});
    std::string owner = p->route.empty() ? "maintainers" : "";
    if (auto rs = (*lease)->list_routes(); rs)
      for (const auto& r : *rs)
        if (!p->route.empty() && r.name == p->route) owner = r.owner;
    pull = {{"route", p->route},
            {"into", p->route.empty() ? std::string("main") : "routes/" + p->route},
            {"route_owner", owner},
            {"state", store::to_string(p->state)},
            {"decided_by", p->decided_by.empty() ? nlohmann::json(false) : nlohmann::json(p->decided_by)},
            {"comments", cs}};
  }
  send_html(res, 200,
            render_submission_page({{"id", sub->id}, {"kernel_id", sub->kernel_id}, {"submitter_id", sub->submitter_id},
                                    {"summary", sub->summary}, {"state", store::to_string(sub->state)},
                                    {"verdict", sub->verdict}, {"reasons", sub->reasons},
                                    {"accepted_commit", sub->accepted_commit}, {"created_at", iso8601(sub->created_at)},
                                    {"route", sub->route}, {"kind", sub->kind}, {"jobs", js}, {"pull", pull}}));
}

}  // namespace kzoo::server
