// Authentication, authorization and per-token limits of the API, and the
// maintainers' routes (held jobs, release, the audit trail). The rules are
// access::authorize's (access/policy.hpp); this file only finds who is asking.
#include <charconv>

#include <fmt/format.h>

#include "kzoo/access/token.hpp"
#include "kzoo/server/api.hpp"

namespace kzoo::server {
namespace {

std::int64_t parse_int_or(const std::string& s, std::int64_t fallback) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size() ? v : fallback;
}

void unauthenticated(httplib::Response& res, const std::string& why, bool bad_token) {
  res.set_header("WWW-Authenticate", bad_token ? "Bearer realm=\"kzoo\", error=\"invalid_token\"" : "Bearer realm=\"kzoo\"");
  send_error(res, 401, "unauthenticated", why);
}

}  // namespace

std::optional<Caller> Api::require(const httplib::Request& req, httplib::Response& res, access::Action action,
                                   const access::Context& ctx_in) {
  access::Context ctx = ctx_in;
  ctx.reads_need_token = cfg.require_token_for_reads;
  Caller c;
  c.address = req.remote_addr;
  if (req.has_header("Authorization")) {
    // Bearer for the API; Basic (the token as the password) for git and its credential helpers.
    auto text = access::bearer(req.get_header_value("Authorization"));
    if (!text) text = access::basic_password(req.get_header_value("Authorization"));
    auto parsed = text ? access::parse_token(*text) : std::nullopt;
    if (!parsed) {
      unauthenticated(res, "the Authorization header is not \"Bearer kzoo_<id>_<secret>\" (or Basic with the token as the password)", true);
      return std::nullopt;
    }
    auto lease = db.get();
    if (!lease) {
      send_error(res, http_status(lease.error()), "database", lease.error().message);
      return std::nullopt;
    }
    auto t = (*lease)->get_token(parsed->id);
    if (!t && t.error().kind != store::StateError::not_found) {
      send_error(res, http_status(t.error()), "database", t.error().message);
      return std::nullopt;
    }
    // Unknown id and wrong secret read the same, and cost the same hash and
    // comparison, so ids cannot be probed.
    static const std::string kNoHash(32, '\0');
    if (!access::token_matches(*parsed, t ? t->hash : kNoHash) || !t) {
      unauthenticated(res, fmt::format("token {} is not valid: ask for a new one", parsed->id), true);
      return std::nullopt;
    }
    if (t->revoked_at) {
      unauthenticated(res, fmt::format("token {} was revoked at {}: ask for a new one", t->id, iso8601(*t->revoked_at)),
                      true);
      return std::nullopt;
    }
    if (t->expires_at && *t->expires_at <= (*lease)->now()) {
      unauthenticated(res, fmt::format("token {} expired at {}: ask for a new one", t->id, iso8601(*t->expires_at)),
                      true);
      return std::nullopt;
    }
    (void)(*lease)->touch_token(t->id);
    c.who = access::Principal{t->user, t->role, t->kind, t->id, t->label};
  }
  c.decision = access::authorize(c.who, action, ctx);
  if (!c.decision.allowed()) {
    if (c.decision.status == 401) unauthenticated(res, c.decision.reason, false);
    else send_error(res, c.decision.status, c.decision.code, c.decision.reason);
    return std::nullopt;
  }
  return c;
}

store::Admission Api::admission_of(const store::Token& t) const {
  return {t.limits.submissions_per_hour.value_or(cfg.limit_submissions_per_hour),
          t.limits.concurrent_jobs.value_or(cfg.limit_concurrent_jobs),
          t.limits.upload_bytes_per_day.value_or(cfg.limit_upload_bytes_per_day)};
}

bool Api::within_limits(const Caller& c, std::uint64_t incoming_bytes, httplib::Response& res) {
  if (!c.who) return true;
  auto lease = db.get();
  if (!lease) {
    send_error(res, http_status(lease.error()), "database", lease.error().message);
    return false;
  }
  auto t = (*lease)->get_token(c.who->token_id);
  if (!t) {
    send_error(res, http_status(t.error()), "database", t.error().message);
    return false;
  }
  const store::UnixMs now = (*lease)->now(), hour = 3'600'000, day = 24 * hour;
  auto u = (*lease)->token_usage(t->id, now - day);
  auto uh = (*lease)->token_usage(t->id, now - hour);
  if (!u || !uh) {
    const auto& e = u ? uh.error() : u.error();
    send_error(res, http_status(e), "database", e.message);
    return false;
  }
  auto over = [&](const char* what, std::int64_t limit, std::int64_t used, std::optional<store::UnixMs> frees_at,
                  const std::string& unit) {
    std::int64_t wait_s = frees_at ? std::max<std::int64_t>(1, (*frees_at - now + 999) / 1000) : 60;
    res.set_header("Retry-After", std::to_string(wait_s));
    send_error(res, 429, "rate_limited",
               fmt::format("token {} is over its limit of {} {}{} ({} used): retry in {} s", t->id, limit, unit, what,
                           used, wait_s),
               "", {{"limit", what}, {"retry_after_s", wait_s}});
    return false;
  };
  const store::Admission caps = admission_of(*t);
  std::int64_t per_hour = caps.per_hour;
  if (uh->submissions + 1 > per_hour)
    return over(" per hour", per_hour, uh->submissions,
                uh->oldest_submission ? std::optional(*uh->oldest_submission + hour) : std::nullopt, "submissions");
  std::int64_t concurrent = caps.concurrent_jobs;
  // A job ends when a worker finishes it: no time can be promised; a minute is a fair poll.
  if (u->active_jobs + 1 > concurrent) return over(" at a time", concurrent, u->active_jobs, std::nullopt, "jobs");
  std::int64_t bytes = caps.bytes_per_day;
  if (u->upload_bytes + static_cast<std::int64_t>(incoming_bytes) > bytes)
    return over(" per day", bytes, u->upload_bytes, u->oldest_upload ? std::optional(*u->oldest_upload + day) : std::nullopt,
                "upload bytes");
  return true;
}

void Api::get_whoami(const httplib::Request& req, httplib::Response& res) {
  auto c = require(req, res, access::Action::read);
  if (!c) return;
  if (!c->who) return send_json(res, 200, {{"user", nullptr}, {"anonymous", true}, {"address", c->address}});
  send_json(res, 200,
            {{"anonymous", false},
             {"address", c->address},
             {"user", c->who->user},
             {"role", store::to_string(c->who->role)},
             {"token", {{"id", c->who->token_id}, {"kind", store::to_string(c->who->kind)},
                        {"name", c->who->label.empty() ? nlohmann::json() : nlohmann::json(c->who->label)}}}});
}

void Api::get_held_jobs(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto held = (*lease)->held_jobs(1000);
  if (!held) return send_error(res, http_status(held.error()), "database", held.error().message);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& h : *held)
    list.push_back({{"job_id", h.job_id},
                    {"submission_id", h.submission_id},
                    {"kernel_id", h.kernel_id},
                    {"submitter_id", h.submitter_id},
                    {"optimization_summary", h.summary},
                    {"sha256", h.sha256},
                    {"reason", h.reason},
                    {"route", h.route},
                    {"created_at", iso8601(h.created_at)},
                    {"links", h.reason == store::kHeldPullRequest
                                  ? nlohmann::json{{"submission", fmt::format("/api/submissions/{}", h.submission_id)},
                                                   {"pull", fmt::format("/api/pulls/{}", h.submission_id)},
                                                   {"merge", fmt::format("/api/pulls/{}/merge", h.submission_id)}}
                                  : nlohmann::json{{"submission", fmt::format("/api/submissions/{}", h.submission_id)},
                                                   {"release", fmt::format("/api/jobs/{}/release", h.job_id)}}}});
  send_json(res, 200, {{"held", list}});
}

void Api::post_release(const httplib::Request& req, httplib::Response& res) {
  auto c = require(req, res, access::Action::release_job);
  if (!c) return;
  auto id = parse_int_or(req.matches[1], 0);
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  (*lease)->set_actor(c->actor());
  auto j = (*lease)->release_job(id);
  if (!j) {
    const char* code = j.error().kind == store::StateError::not_found ? "unknown_job"
                       : j.error().kind == store::StateError::wrong_state ? "not_held"
                                                                          : "database";
    return send_error(res, http_status(j.error()), code, j.error().message, "id");
  }
  send_json(res, 200,
            {{"job_id", j->id},
             {"submission_id", j->submission_id},
             {"state", store::to_string(j->state)},
             {"held", j->held},
             {"released_by", j->released_by},
             {"links", {{"submission", fmt::format("/api/submissions/{}", j->submission_id)}}}});
}

void Api::get_audit(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read_audit)) return;
  store::AuditFilter f;
  if (req.has_param("before")) {
    f.before_id = parse_int_or(req.get_param_value("before"), 0);
    if (f.before_id < 1)
      return send_error(res, 400, "invalid_query",
                        "before must be an entry id, a whole number of 1 or more (the \"next\" link of a page gives it)",
                        "before");
  }
  if (req.has_param("limit")) {
    const std::int64_t n = parse_int_or(req.get_param_value("limit"), 0);
    if (n < 1 || n > 1000)
      return send_error(res, 400, "invalid_query", "limit must be a whole number from 1 to 1000", "limit");
    f.limit = static_cast<int>(n);
  }
  if (req.has_param("who")) f.who = req.get_param_value("who");
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto log = (*lease)->audit_log(f);
  if (!log) return send_error(res, http_status(log.error()), "database", log.error().message);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : *log)
    list.push_back({{"id", e.id},
                    {"at", iso8601(e.at)},
                    {"who", e.who},
                    {"token_id", e.token_id.empty() ? nlohmann::json() : nlohmann::json(e.token_id)},
                    {"action", e.action},
                    {"target", e.target},
                    {"detail", e.detail},
                    {"address", e.address.empty() ? nlohmann::json() : nlohmann::json(e.address)}});
  nlohmann::json body = {{"entries", list}};
  if (!log->empty() && static_cast<int>(log->size()) == f.limit)
    body["next"] = fmt::format("/api/audit?before={}&limit={}", log->back().id, f.limit);
  send_json(res, 200, body);
}

}  // namespace kzoo::server
