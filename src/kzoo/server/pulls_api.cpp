// Pull requests (store/pulls.hpp): GET /api/pulls, GET /api/pulls/{id}, and
// POST .../merge, .../close, .../comments. Who may do what is
// access::authorize's: merging is merge_into_route for the route's owner (with
// their agents) and the maintainers; the author may also close (withdraw)
// their own; anyone signed in comments and reviews.
#include <fmt/format.h>

#include "kzoo/format/json_text.hpp"
#include "kzoo/server/api.hpp"
#include "kzoo/server/text_field.hpp"

namespace kzoo::server {
namespace {

using nlohmann::json;

// "main", or "routes/<name>": where the pull request is aimed.
std::string into_of(const store::Pull& p) { return p.route.empty() ? std::string("main") : "routes/" + p.route; }

json pull_json(const store::Pull& p, const std::optional<std::string>& owner) {
  return {{"id", p.submission_id},
          {"route", p.route},
          {"into", into_of(p)},
          {"route_owner", owner ? json(*owner) : json()},
          {"author", p.author},
          {"state", store::to_string(p.state)},
          {"created_at", iso8601(p.created_at)},
          {"decided_by", p.decided_by.empty() ? json() : json(p.decided_by)},
          {"decided_at", p.decided_at ? json(iso8601(*p.decided_at)) : json()},
          {"links",
           {{"self", fmt::format("/api/pulls/{}", p.submission_id)},
            {"submission", fmt::format("/api/submissions/{}", p.submission_id)},
            {"page", fmt::format("/submissions/{}", p.submission_id)}}}};
}

json pull_comment_json(const store::Comment& c) {
  return {{"id", c.id}, {"who", c.who}, {"kind", store::to_string(c.kind)}, {"body", c.body}, {"at", iso8601(c.at)}};
}

std::optional<std::string> owner_of(store::StateDb& db, const std::string& route) {
  if (route.empty()) return std::string("maintainers");
  auto rs = db.list_routes();
  if (rs)
    for (const auto& r : *rs)
      if (r.name == route) return r.owner;
  return std::nullopt;
}


void pull_state_error(httplib::Response& res, const store::StateError& e) { send_state_error(res, e, "unknown_pull", "decided"); }

}  // namespace

void Api::get_pulls(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  std::optional<std::string> route;
  std::optional<store::PullState> state = store::PullState::open;
  if (req.has_param("route")) route = req.get_param_value("route");
  if (req.has_param("state")) {
    const std::string s = req.get_param_value("state");
    if (s == "all") state.reset();
    else if (auto p = store::parse_pull_state(s)) state = *p;
    else return send_error(res, 400, "invalid_query", "state must be open, merged, closed or all", "state");
  }
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto ps = (*lease)->list_pulls(route, state, 1000);
  if (!ps) return pull_state_error(res, ps.error());
  json list = json::array();
  for (const auto& p : *ps) list.push_back(pull_json(p, owner_of(**lease, p.route)));
  send_json(res, 200, {{"pulls", list}});
}

void Api::get_pull(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto p = (*lease)->get_pull(path_id(req));
  if (!p) return pull_state_error(res, p.error());
  auto cs = (*lease)->comments(p->submission_id);
  if (!cs) return pull_state_error(res, cs.error());
  json doc = pull_json(*p, owner_of(**lease, p->route));
  doc["comments"] = json::array();
  for (const auto& c : *cs) doc["comments"].push_back(pull_comment_json(c));
  if (auto s = (*lease)->get_submission(p->submission_id); s) {
    doc["kernel_id"] = s->kernel_id;
    doc["optimization_summary"] = s->summary;
    doc["submission_state"] = store::to_string(s->state);
  }
  send_json(res, 200, doc);
}

void Api::post_pull_decision(const httplib::Request& req, httplib::Response& res, bool merge) {
  // Signed in first (401 before anything is looked up), then the route's owner decides.
  auto c = require(req, res, access::Action::comment);
  if (!c) return;
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto p = (*lease)->get_pull(path_id(req));
  if (!p) return pull_state_error(res, p.error());
  // Into a route: its owner (and their agents) or a maintainer; into main: a maintainer.
  access::Context ctx;
  if (!p->route.empty()) ctx.route_owner = owner_of(**lease, p->route);
  auto d = access::authorize(c->who, p->route.empty() ? access::Action::push_main : access::Action::merge_into_route, ctx);
  const bool withdrawing = !merge && c->who && c->who->user == p->author;
  if (!d.allowed() && !withdrawing)
    return send_error(res, d.status, d.code,
                      fmt::format("{}; pull request {} is aimed at {}{}", d.reason, p->submission_id, into_of(*p),
                                  merge ? "" : " (its author may close it too)"));
  std::string why;
  if (!merge) {
    auto body = format::parse_json(req.body.empty() ? std::string("{}") : req.body, "request body",
                                   {.max_bytes = 64u << 10, .max_depth = 8});
    if (!body || !body->is_object())
      return send_error(res, 400, "invalid_body", body ? "the body must be a JSON object" : to_string(body.error()));
    const json& w = body->value("why", json(""));
    if (auto problem = text_problem(w, 0, 1000); !problem.empty())
      return send_error(res, 400, "invalid_field",
                        fmt::format("why {}: a close reason is at most 1000 bytes of {}", problem, kTextRule), "why");
    why = w.get<std::string>();
    if (why.empty()) why = fmt::format("pull request closed by {}", c->who->user);
  }
  // An outsider's pull request merged by its route's owner still waits for a
  // maintainer (JobHeldAdmin): the owner may take it onto the route, but only
  // whoever may release held jobs (a maintainer's own token, never an agent's)
  // lets code from outside the project run on its runners.
  bool then_admin = false;
  if (merge && !access::authorize(c->who, access::Action::release_job).allowed()) {
    auto author = (*lease)->get_user(p->author);
    then_admin = !author || author->role == store::Role::outsider;
  }
  (*lease)->set_actor(c->actor());
  auto done = (*lease)->decide_pull(p->submission_id, merge, then_admin, why);
  if (!done) return pull_state_error(res, done.error());
  json doc = pull_json(*done, ctx.route_owner);
  if (merge) {
    auto jobs = (*lease)->jobs_of(done->submission_id);
    if (jobs && !jobs->empty()) {
      const auto& j = jobs->back();
      doc["job"] = {{"id", j.id}, {"state", store::to_string(j.state)}, {"held", j.held},
                    {"hold_reason", j.held ? json(j.hold_reason) : json()}};
    }
  }
  send_json(res, 200, doc);
}

void Api::post_pull_merge(const httplib::Request& req, httplib::Response& res) { post_pull_decision(req, res, true); }
void Api::post_pull_close(const httplib::Request& req, httplib::Response& res) { post_pull_decision(req, res, false); }

void Api::post_pull_comment(const httplib::Request& req, httplib::Response& res) {
  auto c = require(req, res, access::Action::comment);
  if (!c) return;
  auto body = format::parse_json(req.body, "request body", {.max_bytes = 64u << 10, .max_depth = 8});
  if (!body || !body->is_object())
    return send_error(res, 400, "invalid_body",
                      body ? "the body must be a JSON object {\"body\", \"kind\"}" : to_string(body.error()));
  const json& text = body->value("body", json());
  if (auto problem = text_problem(text, 1, 10000); !problem.empty())
    return send_error(res, 400, "invalid_field", fmt::format("body {}: a comment is 1-10000 bytes of {}", problem, kTextRule),
                      "body");
  const json& kind = body->value("kind", json("comment"));
  auto k = kind.is_string() ? store::parse_review_kind(kind.get<std::string>()) : std::nullopt;
  if (!k) return send_error(res, 400, "invalid_field", "kind must be comment, approve or request_changes", "kind");
  // Texts per token and hour (limit_comments_per_hour): a thread is not a place to flood.
  if (!within_writing_limit(*c, res)) return;
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  (*lease)->set_actor(c->actor());
  auto added = (*lease)->add_comment(path_id(req), *k, text.get<std::string>());
  if (!added) return pull_state_error(res, added.error());
  res.set_header("Location", fmt::format("/api/pulls/{}", added->submission_id));
  send_json(res, 201, pull_comment_json(*added));
}

}  // namespace kzoo::server
