// Issues (store/issues.hpp): GET /api/issues, POST /api/issues, GET
// /api/issues/{id}, POST .../comments and .../close. Anyone signed in opens
// and comments; the author (with their agents) or a maintainer closes
// (access::authorize). Everything a token writes counts against its hourly
// limit_comments_per_hour, with the pull requests' comments.
#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

#include "kzoo/format/json_text.hpp"
#include "kzoo/server/api.hpp"
#include "kzoo/server/pages.hpp"
#include "kzoo/server/text_field.hpp"

namespace kzoo::server {
namespace {

using nlohmann::json;

json issue_json(const store::Issue& i) {
  return {{"id", i.id},
          {"title", i.title},
          {"body", i.body},
          {"author", i.author},
          {"state", store::to_string(i.state)},
          {"created_at", iso8601(i.created_at)},
          {"updated_at", iso8601(i.updated_at)},
          {"comments", i.comments},
          {"closed_by", i.closed_by.empty() ? json() : json(i.closed_by)},
          {"closed_at", i.closed_at ? json(iso8601(*i.closed_at)) : json()},
          {"close_reason", i.close_reason.empty() ? json() : json(i.close_reason)},
          {"links", {{"self", fmt::format("/api/issues/{}", i.id)}, {"page", fmt::format("/issues/{}", i.id)}}}};
}

json comment_json(const store::IssueComment& c) {
  return {{"id", c.id}, {"who", c.who}, {"body", c.body}, {"at", iso8601(c.at)}};
}

void issue_state_error(httplib::Response& res, const store::StateError& e) { send_state_error(res, e, "unknown_issue", "closed"); }

// The request's body as a JSON object of at most 64 KiB, or nullopt with `res` filled.
std::optional<json> shaped_object_body(const httplib::Request& req, httplib::Response& res, const char* shape) {
  auto body = format::parse_json(req.body.empty() ? std::string("{}") : req.body, "request body",
                                 {.max_bytes = 64u << 10, .max_depth = 8});
  if (!body || !body->is_object()) {
    send_error(res, 400, "invalid_body",
               body ? fmt::format("the body must be a JSON object {}", shape) : to_string(body.error()));
    return std::nullopt;
  }
  return std::move(*body);
}

// One text field of `body` (absent: `fallback`), or nullopt with a 400 naming the field, its bounds and the rule.
std::optional<std::string> text_field(const json& body, const char* name, std::size_t min, std::size_t max,
                                      const char* what, httplib::Response& res, const json& fallback = json()) {
  const json& v = body.contains(name) ? body[name] : fallback;
  if (auto problem = text_problem(v, min, max); !problem.empty()) {
    send_error(res, 400, "invalid_field",
               fmt::format("{} {}: {} is {}-{} bytes of {}", name, v.is_null() ? "is missing" : problem, what, min,
                           max, kTextRule),
               name);
    return std::nullopt;
  }
  return v.get<std::string>();
}

}  // namespace

// The token's hourly writing limit (limit_comments_per_hour) before one more
// text; false when over it (429 with Retry-After, `res` filled).
bool Api::within_writing_limit(const Caller& c, httplib::Response& res) {
  auto lease = db.get();
  if (!lease) {
    send_error(res, http_status(lease.error()), "database", lease.error().message);
    return false;
  }
  const store::UnixMs now = (*lease)->now(), hour = 3'600'000;
  auto used = (*lease)->token_usage(c.who->token_id, now - hour);
  if (!used) {
    send_error(res, http_status(used.error()), "database", used.error().message);
    return false;
  }
  if (used->comments + 1 <= cfg.limit_comments_per_hour) return true;
  const std::int64_t wait_s =
      used->oldest_comment ? std::max<std::int64_t>(1, (*used->oldest_comment + hour - now + 999) / 1000) : 60;
  res.set_header("Retry-After", std::to_string(wait_s));
  send_error(res, 429, "rate_limited",
             fmt::format("token {} is over its limit of {} texts per hour (comments, reviews, issues; {} written): "
                         "retry in {} s",
                         c.who->token_id, cfg.limit_comments_per_hour, used->comments, wait_s),
             "", {{"limit", " per hour"}, {"retry_after_s", wait_s}});
  return false;
}

void Api::get_issues(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  store::IssueFilter f;
  f.state = store::IssueState::open;
  if (req.has_param("state")) {
    const std::string s = req.get_param_value("state");
    if (s == "all") f.state.reset();
    else if (auto st = store::parse_issue_state(s)) f.state = *st;
    else return send_error(res, 400, "invalid_query", "state must be open, closed or all", "state");
  }
  if (req.has_param("author")) {
    f.author = req.get_param_value("author");
    if (f.author->empty() || f.author->size() > 64)
      return send_error(res, 400, "invalid_query", "author is a user name of 1-64 bytes", "author");
  }
  auto number = [&](const char* name, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
    const std::string v = req.get_param_value(name);
    std::size_t used = 0;
    try {
      out = std::stoll(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != v.size() || out < lo || out > hi) {
      send_error(res, 400, "invalid_query", fmt::format("{} must be a whole number from {} to {}", name, lo, hi), name);
      return false;
    }
    return true;
  };
  std::int64_t limit = 50, before = 0;
  if (req.has_param("limit") && !number("limit", 1, 1000, limit)) return;
  if (req.has_param("before")) {
    if (!number("before", 1, INT64_MAX, before)) return;
    f.before = before;
  }
  f.limit = static_cast<int>(limit);
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto is = (*lease)->list_issues(f);
  if (!is) return issue_state_error(res, is.error());
  json list = json::array();
  for (const auto& i : *is) list.push_back(issue_json(i));
  json doc{{"issues", list}};
  // A full page may have more below it: the next page starts before its last id.
  if (static_cast<std::int64_t>(is->size()) == limit && !is->empty()) {
    std::string next = fmt::format("/api/issues?state={}&limit={}&before={}", f.state ? to_string(*f.state) : "all",
                                   limit, is->back().id);
    if (f.author) next += "&author=" + *f.author;
    doc["next"] = next;
  }
  send_json(res, 200, doc);
}

void Api::get_issue(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto i = (*lease)->get_issue(path_id(req));
  if (!i) return issue_state_error(res, i.error());
  auto cs = (*lease)->issue_comments(i->id);
  if (!cs) return issue_state_error(res, cs.error());
  json doc = issue_json(*i);
  doc["thread"] = json::array();
  for (const auto& c : *cs) doc["thread"].push_back(comment_json(c));
  send_json(res, 200, doc);
}

void Api::post_issue(const httplib::Request& req, httplib::Response& res) {
  auto c = require(req, res, access::Action::open_issue);
  if (!c) return;
  auto body = shaped_object_body(req, res, "{\"title\", \"body\"}");
  if (!body) return;
  auto title = text_field(*body, "title", 1, store::kIssueTitleMax, "a title", res);
  if (!title) return;
  if (title->find('\n') != std::string::npos)
    return send_error(res, 400, "invalid_field", "title holds a line break: a title is one line; put the rest in body",
                      "title");
  auto text = text_field(*body, "body", 0, store::kIssueBodyMax, "a body", res, json(""));
  if (!text) return;
  if (!within_writing_limit(*c, res)) return;
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  (*lease)->set_actor(c->actor());
  auto i = (*lease)->open_issue(*title, *text);
  if (!i) return issue_state_error(res, i.error());
  res.set_header("Location", fmt::format("/api/issues/{}", i->id));
  send_json(res, 201, issue_json(*i));
}

void Api::post_issue_comment(const httplib::Request& req, httplib::Response& res) {
  auto c = require(req, res, access::Action::comment);
  if (!c) return;
  auto body = shaped_object_body(req, res, "{\"body\"}");
  if (!body) return;
  auto text = text_field(*body, "body", 1, store::kIssueCommentMax, "a comment", res);
  if (!text) return;
  if (!within_writing_limit(*c, res)) return;
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  (*lease)->set_actor(c->actor());
  auto added = (*lease)->comment_issue(path_id(req), *text);
  if (!added) return issue_state_error(res, added.error());
  res.set_header("Location", fmt::format("/api/issues/{}", added->issue_id));
  send_json(res, 201, comment_json(*added));
}

void Api::post_issue_close(const httplib::Request& req, httplib::Response& res) {
  // Signed in first (401 before anything is looked up), then the author or a maintainer.
  auto c = require(req, res, access::Action::comment);
  if (!c) return;
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto i = (*lease)->get_issue(path_id(req));
  if (!i) return issue_state_error(res, i.error());
  access::Context ctx;
  ctx.issue_author = i->author;
  auto d = access::authorize(c->who, access::Action::close_issue, ctx);
  if (!d.allowed()) return send_error(res, d.status, d.code, fmt::format("{} (issue {})", d.reason, i->id));
  auto body = shaped_object_body(req, res, "{\"why\"}");
  if (!body) return;
  auto why = text_field(*body, "why", 0, store::kIssueCloseReasonMax, "a close reason", res, json(""));
  if (!why) return;
  (*lease)->set_actor(c->actor());
  auto done = (*lease)->close_issue(i->id, *why);
  if (!done) return issue_state_error(res, done.error());
  send_json(res, 200, issue_json(*done));
}

// The pages show what the JSON answers, with its refusals as pages of the same status.
namespace {

bool as_page(const httplib::Response& json_res, httplib::Response& res, nlohmann::json& doc) {
  doc = json::parse(json_res.body, nullptr, false);
  if (json_res.status == 200 && doc.is_object()) return true;
  std::string why = doc.is_object() && doc.contains("error") ? doc["error"].value("message", "") : "";
  send_html(res, json_res.status, render_message_page(json_res.status == 404 ? "No such issue" : "Not shown", why));
  return false;
}

}  // namespace

void Api::page_issues(const httplib::Request& req, httplib::Response& res) {
  httplib::Response answer;
  get_issues(req, answer);
  json doc;
  if (!as_page(answer, res, doc)) return;
  if (doc.contains("next")) {
    std::string next = doc["next"];
    doc["next"] = next.substr(std::string_view("/api").size());  // the same list, as a page
  }
  send_html(res, 200, render_issues_page(doc, req.has_param("state") ? req.get_param_value("state") : "open"));
}

void Api::page_issue(const httplib::Request& req, httplib::Response& res) {
  httplib::Response answer;
  get_issue(req, answer);
  json doc;
  if (!as_page(answer, res, doc)) return;
  send_html(res, 200, render_issue_page(doc));
}

}  // namespace kzoo::server
