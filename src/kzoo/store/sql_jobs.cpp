// Jobs, leases and holds (job_queue.hpp) on the SQL state.
#include <fmt/format.h>

#include "kzoo/store/sql_state.hpp"
#include "kzoo/util/iso_time.hpp"

namespace kzoo::store::sql {

namespace {

void check_worker(const std::string& w) {
  bool ok = !w.empty() && w.size() <= 128;
  for (unsigned char c : w) ok = ok && c > 0x20 && c < 0x7f;
  if (!ok)
    refuse(StateError::invalid, fmt::format("worker id \"{}\" is invalid: use 1-128 printable ASCII characters "
                                            "without spaces, unique per worker process",
                                            w));
}

void check_lease(int seconds) {
  if (seconds < 1 || seconds > 86400)
    refuse(StateError::invalid, fmt::format("lease of {} s is out of range: give 1 to 86400 seconds", seconds));
}

Value json_or_null(const nlohmann::json& j) { return j.is_null() ? Value(nullptr) : Value(json_text(j)); }

}  // namespace

StateResult<std::optional<Job>> SqlJobQueue::claim_job(const std::string& worker_id, int lease_seconds,
                                                       const RunnerHas& has) {
  return c_.guarded([&] {
    check_worker(worker_id);
    check_lease(lease_seconds);
    const auto& cc = has.compute_capability;
    const auto& gpus = has.gpus;
    if (cc && (*cc < 1 || *cc > 1000))
      refuse(StateError::invalid, fmt::format("compute capability {} is out of range: give tenths from 1 to 1000 "
                                              "(90 is 9.0)",
                                              *cc));
    if (gpus && (*gpus < 1 || *gpus > kMaxNodeGpus))
      refuse(StateError::invalid, fmt::format("{} GPUs is out of range: give the GPUs of the runner's node a job may "
                                              "take, 1 to {} (a CPU runner gives none)",
                                              *gpus, kMaxNodeGpus));
    return c_.write([&]() -> std::optional<Job> {
      UnixMs now = c_.db().now();
      // A GPU runner takes only what its node can run (what it has are
      // numbers, written into the statement); the jobs it leaves say what it
      // lacked, so that one no runner can take says why it waits.
      const std::string short_cc = cc ? fmt::format("requires_cc > {}", *cc) : "1=0";
      const std::string short_gpus = gpus ? fmt::format("requires_gpus > {}", *gpus) : "1=0";
      if (cc || gpus) {
        const std::string at = iso8601_utc(now);
        const std::string has_cc = cc ? fmt::format("compute capability {}.{}", *cc / 10, *cc % 10) : "";
        const std::string has_gpus = gpus ? fmt::format("{} GPU{}", *gpus, *gpus == 1 ? "" : "s") : "";
        c_.db().exec(fmt::format("UPDATE jobs SET passed_over = CASE WHEN {0} AND {1} THEN CAST($1 AS TEXT) WHEN {0} "
                                 "THEN CAST($2 AS TEXT) ELSE CAST($3 AS TEXT) END "
                                 "WHERE state='queued' AND held=0 AND ({0} OR {1})",
                                 short_cc, short_gpus),
                     {fmt::format("{} ({}, {}) at {}", worker_id, has_cc, has_gpus, at),
                      fmt::format("{} ({}) at {}", worker_id, has_cc, at),
                      fmt::format("{} ({}) at {}", worker_id, has_gpus, at)});
      }
      const std::string fits = (cc ? fmt::format(" AND requires_cc <= {}", *cc) : std::string()) +
                               (gpus ? fmt::format(" AND requires_gpus <= {}", *gpus) : std::string());
      // The subquery picks one row; on PostgreSQL it skips rows another
      // claimer has locked, so concurrent claimers never wait on each other.
      auto rows = c_.db().query(
          fmt::format("UPDATE jobs SET state='running', attempts=attempts+1, lease_owner=$1, lease_expires_at=$2, "
                      "heartbeat_at=$3, started_at=$3 "
                      "WHERE id = (SELECT id FROM jobs WHERE state='queued' AND held=0{} ORDER BY id LIMIT 1{}) "
                      "RETURNING {}",
                      fits, c_.db().skip_locked(), Core::kJobCols),
          {worker_id, now + static_cast<UnixMs>(lease_seconds) * 1000, now});
      if (rows.empty()) return std::nullopt;
      Job j = Core::job_of(rows.front());
      if (!j.is_batch()) c_.move_submission(j.submission_id, State::queued, State::running, now);
      c_.audit(now, "job.claim", fmt::format("job/{}", j.id), {{"worker", worker_id}, {"attempt", j.attempts}});
      return j;
    });
  });
}

StateResult<Job> SqlJobQueue::heartbeat(std::int64_t job_id, const std::string& worker_id, int lease_seconds) {
  return c_.guarded([&] {
    check_worker(worker_id);
    check_lease(lease_seconds);
    return c_.write([&] {
      UnixMs now = c_.db().now();
      c_.expect_holder(job_id, worker_id, "heartbeat");
      auto rows = c_.db().query(
          fmt::format("UPDATE jobs SET lease_expires_at=$1, heartbeat_at=$2 WHERE id=$3 RETURNING {}", Core::kJobCols),
          {now + static_cast<UnixMs>(lease_seconds) * 1000, now, job_id});
      return Core::job_of(rows.at(0));
    });
  });
}

StateResult<Job> SqlJobQueue::complete(std::int64_t job_id, const std::string& worker_id, const Completion& c) {
  return c_.guarded([&] {
    check_worker(worker_id);
    bool accepted = c.outcome == Outcome::accepted;
    if (accepted != is_hex(c.accepted_commit, 40))
      refuse(StateError::invalid,
             accepted ? fmt::format("accepting job {} needs the kernel_data commit id (40 lowercase hex digits); "
                                    "got \"{}\"",
                                    job_id, c.accepted_commit)
                      : fmt::format("job {} is not accepted, so it cannot name an accepted commit (\"{}\")", job_id,
                                    c.accepted_commit));
    return c_.write([&] {
      UnixMs now = c_.db().now();
      Job before = c_.expect_holder(job_id, worker_id, "complete");
      if (before.is_batch())
        refuse(StateError::invalid, fmt::format("job {} is a batch job: it ends with finish_batch (how its script "
                                                "ended), not with a grading outcome",
                                                job_id));
      State to = to_state(c.outcome);
      auto rows = c_.db().query(fmt::format("UPDATE jobs SET state=$1, result=$2, finished_at=$3, lease_expires_at=NULL "
                                            "WHERE id=$4 RETURNING {}",
                                            Core::kJobCols),
                                {std::string(to_string(to)), json_or_null(c.result), now, job_id});
      Job j = Core::job_of(rows.at(0));
      c_.expect_submission(before.submission_id, {State::running}, "complete its job");
      c_.finish_submission(before.submission_id, to, c.verdict, c.reasons, c.accepted_commit, now);
      nlohmann::json d = {{"worker", worker_id}, {"outcome", to_string(to)}};
      if (accepted) d["commit"] = c.accepted_commit;
      c_.audit(now, "job.complete", fmt::format("job/{}", job_id), d);
      return j;
    });
  });
}

StateResult<Job> SqlJobQueue::retry(std::int64_t job_id, const std::string& worker_id,
                                    const std::vector<std::string>& reasons, const nlohmann::json& result) {
  return c_.guarded([&] {
    check_worker(worker_id);
    return c_.write([&] {
      UnixMs now = c_.db().now();
      Job before = c_.expect_holder(job_id, worker_id, "retry");
      bool last = before.attempts >= before.max_attempts;
      auto rows = last ? c_.db().query(fmt::format("UPDATE jobs SET state='failed', result=$1, finished_at=$2, "
                                                   "lease_expires_at=NULL WHERE id=$3 RETURNING {}",
                                                   Core::kJobCols),
                                       {json_or_null(result), now, job_id})
                       : c_.db().query(fmt::format("UPDATE jobs SET state='queued', result=$1, lease_owner=NULL, "
                                                   "lease_expires_at=NULL, heartbeat_at=NULL WHERE id=$2 RETURNING {}",
                                                   Core::kJobCols),
                                       {json_or_null(result), job_id});
      Job j = Core::job_of(rows.at(0));
      if (before.is_batch()) {
        // No submission follows a batch job; one that runs out of attempts ended on the runners' side.
        if (last) c_.db().exec("UPDATE batch_jobs SET end_state='NODE_FAIL' WHERE job_id=$1", {job_id});
      } else {
        c_.expect_submission(before.submission_id, {State::running}, "retry its job");
        if (last) {
          std::vector<std::string> why = reasons;
          why.push_back(fmt::format("gave up after {} attempts (max_attempts={})", before.attempts, before.max_attempts));
          c_.finish_submission(before.submission_id, State::failed, nullptr, why, "", now);
        } else {
          c_.move_submission(before.submission_id, State::running, State::queued, now);
        }
      }
      c_.audit(now, "job.retry", fmt::format("job/{}", job_id),
               {{"worker", worker_id}, {"now", to_string(j.state)}, {"reason", reasons.empty() ? "" : reasons.front()}});
      return j;
    });
  });
}

StateResult<std::vector<Requeued>> SqlJobQueue::requeue_expired(UnixMs now) {
  return c_.guarded([&] {
    return c_.write([&] {
      // Skipping locked rows: a job whose holder is heartbeating right now is
      // not expired, and another server taking the same jobs back is fine.
      std::vector<Job> expired;
      for (const auto& r : c_.db().query(fmt::format("SELECT {} FROM jobs WHERE state='running' AND lease_expires_at <= $1 "
                                                     "ORDER BY id{}",
                                                     Core::kJobCols, c_.db().skip_locked()),
                                         {now}))
        expired.push_back(Core::job_of(r));
      std::vector<Requeued> out;
      for (const Job& j : expired) {
        if (j.attempts >= j.max_attempts) {
          std::string reason = fmt::format(
              "job {} lost its lease {} times (last holder \"{}\", lease expired at {} ms); gave up after "
              "max_attempts={}",
              j.id, j.attempts, j.lease_owner, *j.lease_expires_at, j.max_attempts);
          c_.db().exec("UPDATE jobs SET state='failed', finished_at=$1, lease_expires_at=NULL, result=$2 WHERE id=$3",
                       {now, json_text({{"error", reason}}), j.id});
          if (j.is_batch()) {
            c_.db().exec("UPDATE batch_jobs SET end_state='NODE_FAIL' WHERE job_id=$1", {j.id});
          } else {
            c_.expect_submission(j.submission_id, {State::running}, "fail its expired job");
            c_.finish_submission(j.submission_id, State::failed, nullptr, {reason}, "", now);
          }
          c_.audit(now, "job.lease-expired", fmt::format("job/{}", j.id), {{"worker", j.lease_owner}, {"now", "failed"}});
          out.push_back({j.id, j.lease_owner, State::failed});
        } else {
          c_.db().exec("UPDATE jobs SET state='queued', lease_owner=NULL, lease_expires_at=NULL, heartbeat_at=NULL "
                       "WHERE id=$1",
                       {j.id});
          if (!j.is_batch()) c_.move_submission(j.submission_id, State::running, State::queued, now);
          c_.audit(now, "job.lease-expired", fmt::format("job/{}", j.id), {{"worker", j.lease_owner}, {"now", "queued"}});
          out.push_back({j.id, j.lease_owner, State::queued});
        }
      }
      return out;
    });
  });
}

StateResult<Job> SqlJobQueue::get_job(std::int64_t id) {
  return c_.guarded([&] {
    auto j = c_.find_job(id);
    if (!j) refuse(StateError::not_found, fmt::format("job {} does not exist", id));
    return *j;
  });
}

StateResult<std::vector<Job>> SqlJobQueue::jobs_of(std::int64_t submission_id) {
  return c_.guarded([&] {
    c_.load_submission(submission_id);
    std::vector<Job> out;
    for (const auto& r : c_.db().query(fmt::format("SELECT {} FROM jobs WHERE submission_id=$1 ORDER BY id", Core::kJobCols),
                                       {submission_id}))
      out.push_back(Core::job_of(r));
    return out;
  });
}

StateResult<std::int64_t> SqlJobQueue::count_jobs(State s) {
  return c_.guarded([&] {
    return c_.db().query("SELECT count(*) FROM jobs WHERE state=$1", {std::string(to_string(s))}).at(0).i64(0);
  });
}

StateResult<std::int64_t> SqlJobQueue::count_claimable() {
  return c_.guarded([&] { return c_.db().query("SELECT count(*) FROM jobs WHERE state='queued' AND held=0").at(0).i64(0); });
}

StateResult<std::map<int, std::int64_t>> SqlJobQueue::claimable_by_gpus() {
  return c_.guarded([&] {
    std::map<int, std::int64_t> out;
    for (const auto& r : c_.db().query("SELECT requires_gpus, count(*) FROM jobs WHERE state='queued' AND held=0 "
                                       "GROUP BY requires_gpus"))
      out[static_cast<int>(r.i64(0))] = r.i64(1);
    return out;
  });
}

StateResult<Job> SqlJobQueue::release_job(std::int64_t job_id) {
  return c_.guarded([&] {
    return c_.write([&] {
      UnixMs now = c_.db().now();
      auto j = c_.find_job(job_id, true);
      if (!j) refuse(StateError::not_found, fmt::format("job {} does not exist", job_id));
      if (j->state != State::queued || !j->held)
        refuse(StateError::wrong_state,
               fmt::format("cannot release job {}: it is {}{}, and only a held queued job can be released", job_id,
                           to_string(j->state), j->state == State::queued ? " and not held" : ""));
      if (j->hold_reason == kHeldPullRequest)
        refuse(StateError::wrong_state,
               fmt::format("job {} is a pull request's (submission {}): it waits for its route's owner to merge it "
                           "(`kzoo merge {}`) or close it",
                           job_id, j->submission_id, j->submission_id));
      auto rows = c_.db().query(
          fmt::format("UPDATE jobs SET held=0, released_by=$1, released_at=$2 WHERE id=$3 RETURNING {}", Core::kJobCols),
          {c_.actor.who, now, job_id});
      Job out = Core::job_of(rows.at(0));
      c_.audit(now, "job.release", fmt::format("job/{}", job_id), {{"submission", out.submission_id}});
      return out;
    });
  });
}

StateResult<std::vector<HeldJob>> SqlJobQueue::held_jobs(int limit) {
  return c_.guarded([&] {
    if (limit < 1 || limit > 1000) refuse(StateError::invalid, "limit must be 1 to 1000");
    std::vector<HeldJob> out;
    for (const auto& r : c_.db().query(
             // A held batch job shows its script where a submission shows its kernel.
             "SELECT j.id, s.id, COALESCE(s.kernel_id, 'batch:' || b.script), COALESCE(s.submitter_id, b.owner), "
             "COALESCE(s.summary, b.name), COALESCE(s.sha256, b.sha256), j.created_at, j.hold_reason, "
             "COALESCE(s.route, b.route) FROM jobs j LEFT JOIN submissions s ON s.id = j.submission_id "
             "LEFT JOIN batch_jobs b ON b.job_id = j.id WHERE j.state='queued' AND j.held=1 ORDER BY j.id LIMIT $1",
             {std::int64_t{limit}}))
      out.push_back({r.i64(0), r.opt(1).value_or(0), r.text(2), r.text(3), r.text(4), r.text(5), r.i64(6), r.text(7),
                     r.text(8)});
    return out;
  });
}

namespace {

// A claimable job's place in line: the claimable jobs before it, plus one
// (claim_job takes the lowest id among queued jobs that are not held).
constexpr const char* kPositionExpr =
    "CASE WHEN j.state='queued' AND j.held=0 THEN (SELECT count(*) FROM jobs q WHERE q.state='queued' AND "
    "q.held=0 AND q.id < j.id) + 1 ELSE NULL END";

}  // namespace

StateResult<std::vector<JobListing>> SqlJobQueue::list_jobs(const JobFilter& f) {
  return c_.guarded([&] {
    if (f.limit < 1 || f.limit > 1000)
      refuse(StateError::invalid, fmt::format("limit {} is out of range: give 1 to 1000 jobs per page", f.limit));
    if (f.before_id < 1)
      refuse(StateError::invalid, fmt::format("before_id {} is not a job id: give 1 or more", f.before_id));
    if (f.after_id && *f.after_id < 0)
      refuse(StateError::invalid, fmt::format("after_id {} is negative: give 0 (the head of the queue) or a job id",
                                              *f.after_id));
    // States and the hold come from enums, never from the caller's text, so
    // they are written into the statement; names and cursors are parameters.
    std::string where;
    if (!f.states.empty()) {
      where += " AND j.state IN (";
      for (std::size_t i = 0; i < f.states.size(); ++i)
        where += fmt::format("{}'{}'", i ? "," : "", to_string(f.states[i]));
      where += ")";
    }
    if (f.held) where += *f.held ? " AND j.state='queued' AND j.held=1" : " AND NOT (j.state='queued' AND j.held=1)";
    const bool ascending = f.after_id.has_value();
    auto opt = [](const std::optional<std::string>& v) { return v ? Value(*v) : Value(nullptr); };
    auto rows = c_.db().query(
        fmt::format("SELECT {}, s.kernel_id, s.submitter_id, s.route, s.kind, {} FROM jobs j JOIN submissions s ON "
                    "s.id = j.submission_id WHERE j.id {} $1 AND (CAST($2 AS TEXT) IS NULL OR s.kernel_id = $2) AND "
                    "(CAST($3 AS TEXT) IS NULL OR s.submitter_id = $3){} ORDER BY j.id {} LIMIT $4",
                    Core::qualified_job_cols(), kPositionExpr, ascending ? ">" : "<", where, ascending ? "ASC" : "DESC"),
        {ascending ? *f.after_id : f.before_id, opt(f.kernel_id), opt(f.submitter_id), std::int64_t{f.limit}});
    std::vector<JobListing> out;
    for (const auto& r : rows) {
      JobListing l;
      l.job = Core::job_of(r);
      const std::size_t n = Core::kJobColCount;
      l.kernel_id = r.text(n);
      l.submitter_id = r.text(n + 1);
      l.route = r.text(n + 2);
      l.kind = r.text(n + 3);
      l.position = r.opt(n + 4);
      out.push_back(std::move(l));
    }
    return out;
  });
}

StateResult<std::optional<std::int64_t>> SqlJobQueue::queue_position(std::int64_t job_id) {
  return c_.guarded([&] {
    auto rows = c_.db().query(fmt::format("SELECT {} FROM jobs j WHERE j.id=$1", kPositionExpr), {job_id});
    if (rows.empty()) refuse(StateError::not_found, fmt::format("job {} does not exist", job_id));
    return rows.front().opt(0);
  });
}

UnixMs SqlJobQueue::now() {
  // Unreachable, the database's clock is estimated; whatever the caller then
  // asks of the database fails and says why.
  auto t = c_.guarded([&] { return c_.db().now(); });
  return t ? *t : c_.db().estimated_now();
}

}  // namespace kzoo::store::sql
