// Submissions and routes (submission_store.hpp) on the SQL state.
#include <fmt/format.h>

#include "kzoo/store/sql_state.hpp"

namespace kzoo::store::sql {

namespace {

// The token's caps (Admission), checked with its row locked: servers
// admitting its submissions at once take turns here, and each sees the
// others' committed submissions.
void admit(Core& c, const NewSubmission& n, UnixMs now) {
  c.db().query(fmt::format("SELECT id FROM tokens WHERE id=$1{}", c.db().lock_rows()), {n.token_id});
  const Admission& a = *n.admission;
  constexpr UnixMs kHour = 3'600'000, kDay = 24 * kHour;
  const TokenUsage hour = c.usage(n.token_id, now - kHour);
  if (hour.submissions + 1 > a.per_hour)
    refuse(StateError::limited, fmt::format("token {} is over its limit of {} submissions per hour ({} used): retry "
                                            "later",
                                            n.token_id, a.per_hour, hour.submissions));
  const TokenUsage day = c.usage(n.token_id, now - kDay);
  if (day.active_jobs + 1 > a.concurrent_jobs)
    refuse(StateError::limited, fmt::format("token {} is over its limit of {} jobs at a time ({} queued or running): "
                                            "retry when one ends",
                                            n.token_id, a.concurrent_jobs, day.active_jobs));
  if (day.upload_bytes + n.package_bytes > a.bytes_per_day)
    refuse(StateError::limited, fmt::format("token {} is over its limit of {} upload bytes per day ({} used): retry "
                                            "later",
                                            n.token_id, a.bytes_per_day, day.upload_bytes));
}

}  // namespace

StateResult<Submission> SqlSubmissions::create_submission(const NewSubmission& n) {
  return c_.guarded([&] {
    if (n.kernel_id.empty() || n.kernel_id.size() > 200)
      refuse(StateError::invalid, fmt::format("kernel id \"{}\" must be 1-200 bytes", n.kernel_id));
    if (n.submitter_id.empty() || n.submitter_id.size() > 128 ||
        n.submitter_id.find_first_of(" \t\r\n") != std::string::npos)
      refuse(StateError::invalid, fmt::format("submitter id \"{}\" must be 1-128 bytes without whitespace", n.submitter_id));
    if (n.package_path.empty()) refuse(StateError::invalid, "package path is empty; store the upload first");
    if (!is_hex(n.sha256, 64))
      refuse(StateError::invalid,
             fmt::format("sha256 \"{}\" must be 64 lowercase hex digits (the tarball's digest)", n.sha256));
    if (n.route.size() > 64) refuse(StateError::invalid, fmt::format("route \"{}\" is over 64 bytes", n.route));
    if (n.kind != "submission" && n.kind != "baseline")
      refuse(StateError::invalid, fmt::format("submission kind \"{}\" is not submission or baseline", n.kind));
    if (n.package_bytes < 0) refuse(StateError::invalid, "package_bytes is negative");
    if (n.received_by.size() > 128) refuse(StateError::invalid, "received_by (a server id) is over 128 bytes");
    return c_.write([&] {
      UnixMs now = c_.db().now();
      if (n.admission) admit(c_, n, now);
      auto rows = c_.db().query(
          fmt::format("INSERT INTO submissions(kernel_id, submitter_id, summary, package_path, sha256, created_at, "
                      "updated_at, state, token_id, package_bytes, route, kind, received_by) "
                      "VALUES ($1,$2,$3,$4,$5,$6,$7,'received',$8,$9,$10,$11,$12) RETURNING {}",
                      Core::kSubCols),
          {n.kernel_id, n.submitter_id, n.summary, n.package_path, n.sha256, now, now, n.token_id,
           std::int64_t{n.package_bytes}, n.route, n.kind, n.received_by});
      Submission s = Core::submission_of(rows.at(0));
      c_.audit(now, "submission.create", fmt::format("submission/{}", s.id),
               {{"kernel_id", s.kernel_id}, {"submitter", s.submitter_id}, {"sha256", s.sha256},
                {"bytes", s.package_bytes}});
      return s;
    });
  });
}

StateResult<Job> SqlSubmissions::enqueue(std::int64_t submission_id, int max_attempts, bool held, JobNeeds needs) {
  return c_.guarded([&] {
    return c_.write([&] {
      UnixMs now = c_.db().now();
      c_.expect_submission(submission_id, {State::received}, "enqueue");
      Job j = c_.queue_job(submission_id, max_attempts, held ? kHeldAdmin : "", now, needs);
      c_.audit(now, held ? "job.hold" : "job.enqueue", fmt::format("job/{}", j.id), {{"submission", submission_id}});
      return j;
    });
  });
}

StateResult<Submission> SqlSubmissions::reject(std::int64_t submission_id, const std::vector<std::string>& reasons,
                                               const nlohmann::json& verdict) {
  return c_.guarded([&] {
    if (reasons.empty()) refuse(StateError::invalid, "a rejection needs at least one reason for the submitter");
    return c_.write([&] {
      UnixMs now = c_.db().now();
      c_.expect_submission(submission_id, {State::received}, "reject");
      c_.finish_submission(submission_id, State::rejected, verdict, reasons, "", now);
      Submission s = c_.load_submission(submission_id);
      c_.audit(now, "submission.reject", fmt::format("submission/{}", submission_id), {{"reason", reasons.front()}});
      return s;
    });
  });
}

StateResult<Submission> SqlSubmissions::cancel(std::int64_t submission_id, const std::string& reason) {
  return c_.guarded([&] {
    return c_.write([&] {
      UnixMs now = c_.db().now();
      c_.expect_submission(submission_id, {State::received, State::queued, State::running}, "cancel");
      c_.cancel_active_job(submission_id, now);
      c_.finish_submission(submission_id, State::cancelled, nullptr, {reason.empty() ? "cancelled" : reason}, "", now);
      Submission s = c_.load_submission(submission_id);
      c_.audit(now, "submission.cancel", fmt::format("submission/{}", submission_id), {{"reason", s.reasons.front()}});
      return s;
    });
  });
}

StateResult<Submission> SqlSubmissions::get_submission(std::int64_t id) {
  return c_.guarded([&] { return c_.load_submission(id); });
}

StateResult<std::vector<Submission>> SqlSubmissions::list_submissions(const SubmissionFilter& f) {
  return c_.guarded([&] {
    if (f.limit < 1 || f.limit > 1000) refuse(StateError::invalid, "limit must be 1 to 1000");
    auto opt = [](const std::optional<std::string>& v) { return v ? Value(*v) : Value(nullptr); };
    auto rows = c_.db().query(
        fmt::format("SELECT {} FROM submissions WHERE id < $1 AND (CAST($2 AS TEXT) IS NULL OR kernel_id = $2) "
                    "AND (CAST($3 AS TEXT) IS NULL OR submitter_id = $3) AND (CAST($4 AS TEXT) IS NULL OR state = $4) AND (CAST($6 AS TEXT) IS NULL OR route = $6) "
                    "AND (CAST($7 AS TEXT) IS NULL OR kind = $7) AND (CAST($8 AS TEXT) IS NULL OR received_by = $8) "
                    "ORDER BY id DESC LIMIT $5",
                    Core::kSubCols),
        {std::int64_t{f.before_id}, opt(f.kernel_id), opt(f.submitter_id),
         f.state ? Value(std::string(to_string(*f.state))) : Value(nullptr), std::int64_t{f.limit}, opt(f.route),
         opt(f.kind), opt(f.received_by)});
    std::vector<Submission> out;
    for (const auto& r : rows) out.push_back(Core::submission_of(r));
    return out;
  });
}

StateResult<Route> SqlSubmissions::ensure_route(const std::string& name, const std::string& owner) {
  return c_.guarded([&] {
    if (name.empty() || name.size() > 64) refuse(StateError::invalid, fmt::format("route name \"{}\" must be 1-64 bytes", name));
    if (owner.empty() || owner.size() > 128) refuse(StateError::invalid, "a route's owner must be 1-128 bytes");
    return c_.write([&] {
      UnixMs now = c_.db().now();
      if (c_.db().exec("INSERT INTO routes(name, owner, created_at) VALUES ($1,$2,$3) ON CONFLICT(name) DO NOTHING",
                       {name, owner, now}) == 1)
        c_.audit(now, "route.create", "route/" + name, {{"owner", owner}});
      auto rows = c_.db().query("SELECT name, owner, created_at FROM routes WHERE name=$1", {name});
      return Route{rows.at(0).text(0), rows.at(0).text(1), rows.at(0).i64(2)};
    });
  });
}

StateResult<std::vector<Route>> SqlSubmissions::list_routes() {
  return c_.guarded([&] {
    std::vector<Route> out;
    for (const auto& r : c_.db().query("SELECT name, owner, created_at FROM routes ORDER BY name"))
      out.push_back({r.text(0), r.text(1), r.i64(2)});
    return out;
  });
}

}  // namespace kzoo::store::sql
