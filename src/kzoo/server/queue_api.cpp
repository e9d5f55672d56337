// The queue, visible (issue 24 item 5): GET /api/submissions and GET /api/jobs,
// paged lists of what is waiting, running and finished. Reads like every
// other read (public unless require_token_for_reads): they show what
// GET /api/submissions/{id} already shows of each one, never the upload's
// path or a token.
//
// A query is checked whole before anything is read: an unknown parameter, a
// repeated one, a limit outside 1-1000 or a cursor that is not a job or
// submission id is a 400 naming the parameter and what it takes, so that a
// typo (`?sate=queued`) never quietly lists everything.
#include <charconv>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kzoo/server/api.hpp"
#include "kzoo/server/client.hpp"

namespace kzoo::server {
namespace {

constexpr int kDefaultLimit = 50;

nlohmann::json opt_time(const std::optional<store::UnixMs>& t) {
  return t ? nlohmann::json(iso8601(*t)) : nlohmann::json();
}

std::optional<std::int64_t> whole_number(const std::string& s) {
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// The paging and filters a listing was asked for, checked.
struct ListQuery {
  std::map<std::string, std::string> given;  // every parameter, once each
  int limit = kDefaultLimit;
  std::int64_t before = INT64_MAX;
  std::optional<std::int64_t> after;
};

// Fills `q` from the request; false (with a 400 in `res`) when the query is
// not one this listing takes.
bool read_query(const httplib::Request& req, httplib::Response& res, const std::vector<std::string>& filters,
                ListQuery& q) {
  std::vector<std::string> allowed = filters;
  allowed.insert(allowed.end(), {"limit", "before", "after"});
  auto names = [&] {
    std::string s;
    for (const auto& a : allowed) s += (s.empty() ? "" : ", ") + a;
    return s;
  };
  for (const auto& [k, v] : req.params) {
    if (std::find(allowed.begin(), allowed.end(), k) == allowed.end()) {
      send_error(res, 400, "invalid_query",
                 fmt::format("unknown query parameter \"{}\": {} takes {}", k.substr(0, 64), req.path, names()), k.substr(0, 64));
      return false;
    }
    if (!q.given.emplace(k, v).second) {
      send_error(res, 400, "invalid_query", fmt::format("query parameter \"{}\" is given twice: give it once", k), k);
      return false;
    }
    if (v.size() > 256) {
      send_error(res, 400, "invalid_query", fmt::format("query parameter \"{}\" is over 256 bytes", k), k);
      return false;
    }
  }
  if (auto it = q.given.find("limit"); it != q.given.end()) {
    auto n = whole_number(it->second);
    if (!n || *n < 1 || *n > 1000) {
      send_error(res, 400, "invalid_query",
                 fmt::format("limit \"{}\" is not a whole number from 1 to 1000 (the default is {})", it->second,
                             kDefaultLimit),
                 "limit");
      return false;
    }
    q.limit = static_cast<int>(*n);
  }
  const bool has_before = q.given.count("before"), has_after = q.given.count("after");
  if (has_before && has_after) {
    send_error(res, 400, "invalid_query",
               "give before (newest first, below an id) or after (oldest first, above an id), not both", "after");
    return false;
  }
  if (has_before) {
    auto n = whole_number(q.given["before"]);
    if (!n || *n < 1) {
      send_error(res, 400, "invalid_query",
                 fmt::format("before \"{}\" is not an id (a whole number of 1 or more; a page's \"next\" link gives it)",
                             q.given["before"]),
                 "before");
      return false;
    }
    q.before = *n;
  }
  if (has_after) {
    auto n = whole_number(q.given["after"]);
    if (!n || *n < 0) {
      send_error(res, 400, "invalid_query",
                 fmt::format("after \"{}\" is not an id (a whole number of 0 or more; after=0 starts at the oldest)",
                             q.given["after"]),
                 "after");
      return false;
    }
    q.after = *n;
  }
  return true;
}

// The link to the page after one that came back full: the same filters, the
// cursor moved past its last row.
std::string next_link(const std::string& path, const ListQuery& q, std::int64_t last_id) {
  std::string link = path + "?";
  for (const auto& [k, v] : q.given)
    if (k != "before" && k != "after" && k != "limit") link += k + "=" + query_escape(v) + "&";
  return link + fmt::format("{}={}&limit={}", q.after ? "after" : "before", last_id, q.limit);
}

// What GET /api/jobs?state= names, as states and a hold.
struct JobStateFilter {
  std::vector<store::State> states;
  std::optional<bool> held;
};

std::optional<JobStateFilter> job_state_filter(const std::string& s) {
  using store::State;
  if (s == "queued") return JobStateFilter{{State::queued}, false};
  if (s == "held") return JobStateFilter{{State::queued}, true};
  if (s == "running") return JobStateFilter{{State::running}, std::nullopt};
  if (s == "active") return JobStateFilter{{State::queued, State::running}, std::nullopt};
  if (s == "finished")
    return JobStateFilter{{State::accepted, State::rejected, State::failed, State::cancelled}, std::nullopt};
  auto st = store::parse_state(s);
  if (st && store::is_final(*st)) return JobStateFilter{{*st}, std::nullopt};
  return std::nullopt;
}

}  // namespace

namespace {

// Why a queued job still waits after GPU runners tried it, and what would
// take it. The store records the last runner that left it with only what it
// lacked, "<worker> (compute capability 8.0, 1 GPU) at <time>"; a worker id
// has no spaces, so what it lacked is read back without ambiguity.
std::string passed_over_text(const store::Job& j) {
  const bool lacked_cc = j.passed_over.find(" (compute capability ") != std::string::npos;
  const bool lacked_gpus = j.passed_over.find(" GPU) at ") != std::string::npos ||
                           j.passed_over.find(" GPUs) at ") != std::string::npos;
  const std::string cc = fmt::format("compute capability {}.{}", j.requires_cc / 10, j.requires_cc % 10);
  const std::string gpus = fmt::format("{} GPU{} of one node", j.requires_gpus, j.requires_gpus == 1 ? "" : "s");
  std::vector<std::string> lacks, fixes;
  if (lacked_cc) {
    lacks.push_back(cc);
    fixes.push_back(fmt::format("a GPU of compute capability {}.{} or more", j.requires_cc / 10, j.requires_cc % 10));
  }
  if (lacked_gpus) {
    lacks.push_back(gpus);
    fixes.push_back(fmt::format("--gpus naming {} or more GPUs of one node (kzoo worker --device cuda --gpus 0,1,...)",
                                j.requires_gpus));
  }
  if (lacks.empty()) return fmt::format("no runner that tried could take job {}: {}", j.id, j.passed_over);
  return fmt::format("no runner that tried could take job {}: {} lacks {}; a runner with {} takes it", j.id,
                     j.passed_over, fmt::join(lacks, " and "), fmt::join(fixes, " and "));
}

}  // namespace

// A job as the queue's lists and a submission's document show it: queued and
// `held` (waiting for a person, `hold_reason` says who), queued with a
// `position` (waiting for a worker; 1 is next), running (on `worker`, since
// `started_at`, its lease good until `lease_expires_at` unless it heartbeats),
// or how it ended.
nlohmann::json job_json(const store::Job& j, std::optional<std::int64_t> position) {
  const bool held = j.held && j.state == store::State::queued;
  const bool running = j.state == store::State::running;
  return {{"id", j.id},
          {"submission_id", j.submission_id},
          {"state", store::to_string(j.state)},
          {"held", held},
          {"hold_reason", held ? nlohmann::json(j.hold_reason) : nlohmann::json()},
          {"released_by", j.released_by.empty() ? nlohmann::json() : nlohmann::json(j.released_by)},
          {"position", position ? nlohmann::json(*position) : nlohmann::json()},
          {"worker", running ? nlohmann::json(j.lease_owner) : nlohmann::json()},
          {"attempts", j.attempts},
          {"max_attempts", j.max_attempts},
          {"created_at", iso8601(j.created_at)},
          {"started_at", opt_time(j.started_at)},
          {"heartbeat_at", running ? opt_time(j.heartbeat_at) : nlohmann::json()},
          {"lease_expires_at", running ? opt_time(j.lease_expires_at) : nlohmann::json()},
          {"finished_at", opt_time(j.finished_at)},
          // What a GPU runner needs to take it, and -- while it waits -- the last
          // runner that left it for lacking that: a job no runner can take says so.
          {"requires_compute_capability",
           j.requires_cc > 0 ? nlohmann::json(fmt::format("{}.{}", j.requires_cc / 10, j.requires_cc % 10)) : nlohmann::json()},
          {"requires_gpus", j.requires_gpus},
          {"passed_over", j.state == store::State::queued && !j.passed_over.empty() ? nlohmann::json(passed_over_text(j))
                                                                                   : nlohmann::json()},
          {"links",
           {{"submission", fmt::format("/api/submissions/{}", j.submission_id)},
            {"log", fmt::format("/api/jobs/{}/log", j.id)}}}};
}

void Api::get_submissions(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  ListQuery q;
  if (!read_query(req, res, {"state", "kernel", "submitter", "route", "kind"}, q)) return;
  if (q.after) {
    // Submissions are listed newest first only (their store pages by `before`).
    return send_error(res, 400, "invalid_query",
                      "submissions are listed newest first: page with before (a page's \"next\" link), not after",
                      "after");
  }
  store::SubmissionFilter f;
  f.limit = q.limit;
  f.before_id = q.before;
  if (auto it = q.given.find("state"); it != q.given.end()) {
    f.state = store::parse_state(it->second);
    if (!f.state)
      return send_error(res, 400, "invalid_query",
                        fmt::format("state \"{}\" is not one of received, queued, running, accepted, rejected, failed, "
                                    "cancelled (held jobs: GET /api/jobs?state=held)",
                                    it->second),
                        "state");
  }
  if (auto it = q.given.find("kind"); it != q.given.end()) {
    if (it->second != "submission" && it->second != "baseline")
      return send_error(res, 400, "invalid_query",
                        fmt::format("kind \"{}\" is not submission or baseline", it->second), "kind");
    f.kind = it->second;
  }
  if (auto it = q.given.find("kernel"); it != q.given.end()) f.kernel_id = it->second;
  if (auto it = q.given.find("submitter"); it != q.given.end()) f.submitter_id = it->second;
  if (auto it = q.given.find("route"); it != q.given.end()) f.route = it->second;
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto subs = (*lease)->list_submissions(f);
  if (!subs) return send_error(res, http_status(subs.error()), "database", subs.error().message);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : *subs)
    list.push_back({{"id", s.id},
                    {"kernel_id", s.kernel_id},
                    {"submitter_id", s.submitter_id},
                    {"route", s.route.empty() ? nlohmann::json() : nlohmann::json(s.route)},
                    {"kind", s.kind},
                    {"optimization_summary", s.summary},
                    {"state", store::to_string(s.state)},
                    {"final", store::is_final(s.state)},
                    {"accepted_commit", s.accepted_commit.empty() ? nlohmann::json() : nlohmann::json(s.accepted_commit)},
                    {"created_at", iso8601(s.created_at)},
                    {"updated_at", iso8601(s.updated_at)},
                    {"links", {{"self", fmt::format("/api/submissions/{}", s.id)}}}});
  nlohmann::json body = {{"submissions", list}, {"next", nullptr}};
  if (static_cast<int>(subs->size()) == q.limit) body["next"] = next_link("/api/submissions", q, subs->back().id);
  send_json(res, 200, body);
}

void Api::get_jobs(const httplib::Request& req, httplib::Response& res) {
  if (!require(req, res, access::Action::read)) return;
  ListQuery q;
  if (!read_query(req, res, {"state", "kernel", "submitter"}, q)) return;
  store::JobFilter f;
  f.limit = q.limit;
  f.before_id = q.before;
  f.after_id = q.after;
  if (auto it = q.given.find("state"); it != q.given.end()) {
    auto sf = job_state_filter(it->second);
    if (!sf)
      return send_error(res, 400, "invalid_query",
                        fmt::format("state \"{}\" is not one of queued, held, running, active (queued, held or running), "
                                    "finished, accepted, rejected, failed, cancelled",
                                    it->second),
                        "state");
    f.states = sf->states;
    f.held = sf->held;
  }
  if (auto it = q.given.find("kernel"); it != q.given.end()) f.kernel_id = it->second;
  if (auto it = q.given.find("submitter"); it != q.given.end()) f.submitter_id = it->second;
  auto lease = db.get();
  if (!lease) return send_error(res, http_status(lease.error()), "database", lease.error().message);
  auto jobs = (*lease)->list_jobs(f);
  if (!jobs) return send_error(res, http_status(jobs.error()), "database", jobs.error().message);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& l : *jobs) {
    nlohmann::json j = job_json(l.job, l.position);
    j["kernel_id"] = l.kernel_id;
    j["submitter_id"] = l.submitter_id;
    j["route"] = l.route.empty() ? nlohmann::json() : nlohmann::json(l.route);
    j["kind"] = l.kind;
    list.push_back(std::move(j));
  }
  // The whole queue at a glance, whatever the page: what workers may claim,
  // what waits for a person, what runs.
  auto claimable = (*lease)->count_claimable();
  auto queued = (*lease)->count_jobs(store::State::queued);
  auto running = (*lease)->count_jobs(store::State::running);
  if (!claimable || !queued || !running) {
    const auto& e = !claimable ? claimable.error() : !queued ? queued.error() : running.error();
    return send_error(res, http_status(e), "database", e.message);
  }
  nlohmann::json body = {{"jobs", list},
                         {"counts", {{"queued", *claimable}, {"held", *queued - *claimable}, {"running", *running}}},
                         {"next", nullptr}};
  if (static_cast<int>(jobs->size()) == q.limit) body["next"] = next_link("/api/jobs", q, jobs->back().job.id);
  send_json(res, 200, body);
}

}  // namespace kzoo::server
