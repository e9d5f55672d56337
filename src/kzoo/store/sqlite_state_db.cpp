#include "kzoo/store/sqlite_state_db.hpp"

#include <chrono>
#include <thread>
#include <unordered_map>

#include <SQLiteCpp/Database.h>
#include <SQLiteCpp/Statement.h>
#include <sqlite3.h>
#include <SQLiteCpp/Transaction.h>
#include <fmt/format.h>

#include "kzoo/store/sqlite_migrations.hpp"

namespace kzoo::store {

UnixMs system_now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

namespace {

// Thrown inside a transaction to roll it back; turned into a value at the API.
struct Refusal {
  StateError error;
};
[[noreturn]] void refuse(StateError::Kind k, std::string msg) { throw Refusal{StateError{k, std::move(msg)}}; }

constexpr const char* kSubCols =
    "id, kernel_id, submitter_id, summary, package_path, sha256, created_at, updated_at, state, verdict, reasons, "
    "accepted_commit, token_id, package_bytes, route, kind";
constexpr const char* kJobCols =
    "id, submission_id, state, attempts, max_attempts, lease_owner, lease_expires_at, heartbeat_at, result, "
    "created_at, started_at, finished_at, held, released_by, released_at, hold_reason";

std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // captured text may be bad UTF-8
}

std::optional<UnixMs> opt_ms(const SQLite::Column& c) {
  if (c.isNull()) return std::nullopt;
  return c.getInt64();
}

State state_col(const SQLite::Column& c) {
  auto s = parse_state(c.getString());
  if (!s) refuse(StateError::io, fmt::format("state database holds unknown state \"{}\"", c.getString()));
  return *s;
}

Submission read_submission(SQLite::Statement& q) {
  Submission s;
  s.id = q.getColumn(0).getInt64();
  s.kernel_id = q.getColumn(1).getString();
  s.submitter_id = q.getColumn(2).getString();
  s.summary = q.getColumn(3).getString();
  s.package_path = q.getColumn(4).getString();
  s.sha256 = q.getColumn(5).getString();
  s.created_at = q.getColumn(6).getInt64();
  s.updated_at = q.getColumn(7).getInt64();
  s.state = state_col(q.getColumn(8));
  if (!q.getColumn(9).isNull()) s.verdict = nlohmann::json::parse(q.getColumn(9).getString());
  s.reasons = nlohmann::json::parse(q.getColumn(10).getString()).get<std::vector<std::string>>();
  s.accepted_commit = q.getColumn(11).getString();
  s.token_id = q.getColumn(12).getString();
  s.package_bytes = q.getColumn(13).getInt64();
  s.route = q.getColumn(14).getString();
  s.kind = q.getColumn(15).getString();
  return s;
}

Job read_job(SQLite::Statement& q) {
  Job j;
  j.id = q.getColumn(0).getInt64();
  j.submission_id = q.getColumn(1).getInt64();
  j.state = state_col(q.getColumn(2));
  j.attempts = q.getColumn(3).getInt();
  j.max_attempts = q.getColumn(4).getInt();
  j.lease_owner = q.getColumn(5).isNull() ? "" : q.getColumn(5).getString();
  j.lease_expires_at = opt_ms(q.getColumn(6));
  j.heartbeat_at = opt_ms(q.getColumn(7));
  if (!q.getColumn(8).isNull()) j.result = nlohmann::json::parse(q.getColumn(8).getString());
  j.created_at = q.getColumn(9).getInt64();
  j.started_at = opt_ms(q.getColumn(10));
  j.finished_at = opt_ms(q.getColumn(11));
  j.held = q.getColumn(12).getInt() != 0;
  j.released_by = q.getColumn(13).getString();
  j.released_at = opt_ms(q.getColumn(14));
  j.hold_reason = q.getColumn(15).getString();
  return j;
}

bool is_hex(std::string_view s, size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

void check_worker(const std::string& w) {
  bool ok = !w.empty() && w.size() <= 128;
  for (unsigned char c : w) ok = ok && c > 0x20 && c < 0x7f;
  if (!ok)
    refuse(StateError::invalid, fmt::format("worker id \"{}\" is invalid: use 1-128 printable ASCII characters "
                                            "without spaces, unique per worker process",
                                            w));
}

constexpr const char* kTokenCols =
    "t.id, t.user_name, t.kind, t.label, t.hash, t.created_at, t.created_by, t.expires_at, t.revoked_at, "
    "t.last_used_at, t.limit_submissions_per_hour, t.limit_concurrent_jobs, t.limit_upload_bytes_per_day, u.role";

std::optional<std::int64_t> opt_int(const SQLite::Column& c) {
  if (c.isNull()) return std::nullopt;
  return c.getInt64();
}

Token read_token(SQLite::Statement& q) {
  Token t;
  t.id = q.getColumn(0).getString();
  t.user = q.getColumn(1).getString();
  auto k = parse_token_kind(q.getColumn(2).getString());
  if (!k) refuse(StateError::io, fmt::format("state database holds unknown token kind \"{}\"", q.getColumn(2).getString()));
  t.kind = *k;
  t.label = q.getColumn(3).getString();
  const auto& h = q.getColumn(4);
  t.hash.assign(static_cast<const char*>(h.getBlob()), static_cast<std::size_t>(h.getBytes()));
  t.created_at = q.getColumn(5).getInt64();
  t.created_by = q.getColumn(6).getString();
  t.expires_at = opt_ms(q.getColumn(7));
  t.revoked_at = opt_ms(q.getColumn(8));
  t.last_used_at = opt_ms(q.getColumn(9));
  t.limits.submissions_per_hour = opt_int(q.getColumn(10));
  t.limits.concurrent_jobs = opt_int(q.getColumn(11));
  t.limits.upload_bytes_per_day = opt_int(q.getColumn(12));
  auto r = parse_role(q.getColumn(13).getString());
  if (!r) refuse(StateError::io, fmt::format("state database holds unknown role \"{}\"", q.getColumn(13).getString()));
  t.role = *r;
  return t;
}

bool valid_name(std::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (!alnum(n[0])) return false;
  for (char c : n)
    if (!alnum(c) && c != '.' && c != '_' && c != '-') return false;
  return true;
}

void check_lease(int seconds) {
  if (seconds < 1 || seconds > 86400)
    refuse(StateError::invalid, fmt::format("lease of {} s is out of range: give 1 to 86400 seconds", seconds));
}

class SqliteStateDb final : public StateDb {
 public:
  SqliteStateDb(const std::string& path, SqliteOptions o)
      : db_(path, SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE | SQLite::OPEN_NOMUTEX, o.busy_timeout_ms),
        clock_(o.clock ? std::move(o.clock) : std::function<UnixMs()>(system_now_ms)) {
    // journal_mode is persistent in the file; "memory" for in-memory databases.
    std::string mode = journal_mode_wal(o.busy_timeout_ms);
    if (mode != "wal" && mode != "memory")
      refuse(StateError::io, fmt::format("state database {} refused WAL mode (got \"{}\"); put it on a local "
                                         "filesystem",
                                         path, mode));
    db_.exec(o.synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
    db_.exec("PRAGMA foreign_keys=ON");
  }

  // Switching a new file to WAL needs it alone: a second process opening the
  // same new file at that moment gets SQLITE_BUSY at once, without the busy
  // handler (seen: 1 in 5 of four concurrent first opens). Retried within
  // the busy timeout.
  std::string journal_mode_wal(int busy_timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
    for (auto pause = std::chrono::milliseconds(1);; pause = std::min(pause * 2, std::chrono::milliseconds(50))) {
      try {
        SQLite::Statement wal(db_, "PRAGMA journal_mode=WAL");
        wal.executeStep();
        return wal.getColumn(0).getString();
      } catch (const SQLite::Exception& e) {
        if ((e.getErrorCode() & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= deadline) throw;
      }
      std::this_thread::sleep_for(pause);
    }
  }

  StateResult<int> migrate_now() {
    auto v = migrate(db_, sqlite_migrations(), clock_());
    if (v) version_ = *v;
    return v;
  }

  int schema_version() override { return version_; }

  StateResult<Submission> create_submission(const NewSubmission& n) override {
    return guarded([&] {
      if (n.kernel_id.empty() || n.kernel_id.size() > 200)
        refuse(StateError::invalid, fmt::format("kernel id \"{}\" must be 1-200 bytes", n.kernel_id));
      if (n.submitter_id.empty() || n.submitter_id.size() > 128 ||
          n.submitter_id.find_first_of(" \t\r\n") != std::string::npos)
        refuse(StateError::invalid,
               fmt::format("submitter id \"{}\" must be 1-128 bytes without whitespace", n.submitter_id));
      if (n.package_path.empty()) refuse(StateError::invalid, "package path is empty; store the upload first");
      if (!is_hex(n.sha256, 64))
        refuse(StateError::invalid,
               fmt::format("sha256 \"{}\" must be 64 lowercase hex digits (the tarball's digest)", n.sha256));
      if (n.route.size() > 64) refuse(StateError::invalid, fmt::format("route \"{}\" is over 64 bytes", n.route));
      if (n.kind != "submission" && n.kind != "baseline")
        refuse(StateError::invalid, fmt::format("submission kind \"{}\" is not submission or baseline", n.kind));
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      if (n.package_bytes < 0) refuse(StateError::invalid, "package_bytes is negative");
      auto& q = stmt(fmt::format("INSERT INTO submissions(kernel_id, submitter_id, summary, package_path, sha256, "
                                 "created_at, updated_at, state, token_id, package_bytes, route, kind) "
                                 "VALUES (?,?,?,?,?,?,?,'received',?,?,?,?) RETURNING {}",
                                 kSubCols));
      q.bind(1, n.kernel_id);
      q.bind(2, n.submitter_id);
      q.bind(3, n.summary);
      q.bind(4, n.package_path);
      q.bind(5, n.sha256);
      q.bind(6, now);
      q.bind(7, now);
      q.bind(8, n.token_id);
      q.bind(9, static_cast<int64_t>(n.package_bytes));
      q.bind(10, n.route);
      q.bind(11, n.kind);
      q.executeStep();
      Submission s = read_submission(q);
      q.reset();
      audit(now, "submission.create", fmt::format("submission/{}", s.id),
            {{"kernel_id", s.kernel_id}, {"submitter", s.submitter_id}, {"sha256", s.sha256},
             {"bytes", s.package_bytes}});
      tx.commit();
      return s;
    });
  }

  StateResult<Job> enqueue(std::int64_t submission_id, int max_attempts, bool held) override {
    return guarded([&] {
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      expect_submission(submission_id, {State::received}, "enqueue");
      Job j = queue_job(submission_id, max_attempts, held ? kHeldAdmin : "", now);
      audit(now, held ? "job.hold" : "job.enqueue", fmt::format("job/{}", j.id), {{"submission", submission_id}});
      tx.commit();
      return j;
    });
  }

  StateResult<Submission> reject(std::int64_t submission_id, const std::vector<std::string>& reasons,
                                 const nlohmann::json& verdict) override {
    return guarded([&] {
      if (reasons.empty()) refuse(StateError::invalid, "a rejection needs at least one reason for the submitter");
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      expect_submission(submission_id, {State::received}, "reject");
      finish_submission(submission_id, State::rejected, verdict, reasons, "", now);
      Submission s = load_submission(submission_id);
      audit(now, "submission.reject", fmt::format("submission/{}", submission_id), {{"reason", reasons.front()}});
      tx.commit();
      return s;
    });
  }

  StateResult<Submission> cancel(std::int64_t submission_id, const std::string& reason) override {
    return guarded([&] {
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      expect_submission(submission_id, {State::received, State::queued, State::running}, "cancel");
      auto& j = stmt(
          "UPDATE jobs SET state='cancelled', finished_at=?, lease_expires_at=NULL, held=0 "
          "WHERE submission_id=? AND state IN ('queued','running')");
      j.bind(1, now);
      j.bind(2, submission_id);
      j.exec();
      finish_submission(submission_id, State::cancelled, nullptr, {reason.empty() ? "cancelled" : reason}, "", now);
      Submission s = load_submission(submission_id);
      audit(now, "submission.cancel", fmt::format("submission/{}", submission_id), {{"reason", s.reasons.front()}});
      tx.commit();
      return s;
    });
  }

  StateResult<std::optional<Job>> claim_job(const std::string& worker_id, int lease_seconds) override {
    return guarded([&]() -> std::optional<Job> {
      check_worker(worker_id);
      check_lease(lease_seconds);
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      auto& q = stmt(fmt::format(
          "UPDATE jobs SET state='running', attempts=attempts+1, lease_owner=?, lease_expires_at=?, "
          "heartbeat_at=?, started_at=? "
          "WHERE id = (SELECT id FROM jobs WHERE state='queued' AND held=0 ORDER BY id LIMIT 1) RETURNING {}",
          kJobCols));
      q.bind(1, worker_id);
      q.bind(2, now + static_cast<UnixMs>(lease_seconds) * 1000);
      q.bind(3, now);
      q.bind(4, now);
      if (!q.executeStep()) {
        q.reset();
        tx.commit();
        return std::nullopt;
      }
      Job j = read_job(q);
      q.reset();
      move_submission(j.submission_id, State::queued, State::running, now);
      audit(now, "job.claim", fmt::format("job/{}", j.id), {{"worker", worker_id}, {"attempt", j.attempts}});
      tx.commit();
      return j;
    });
  }

  StateResult<Job> heartbeat(std::int64_t job_id, const std::string& worker_id, int lease_seconds) override {
    return guarded([&] {
      check_worker(worker_id);
      check_lease(lease_seconds);
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      expect_holder(job_id, worker_id, "heartbeat");
      auto& q = stmt(fmt::format("UPDATE jobs SET lease_expires_at=?, heartbeat_at=? WHERE id=? RETURNING {}",
                                 kJobCols));
      q.bind(1, now + static_cast<UnixMs>(lease_seconds) * 1000);
      q.bind(2, now);
      q.bind(3, job_id);
      q.executeStep();
      Job j = read_job(q);
      q.reset();
      tx.commit();
      return j;
    });
  }

  StateResult<Job> complete(std::int64_t job_id, const std::string& worker_id, const Completion& c) override {
    return guarded([&] {
      check_worker(worker_id);
      bool accepted = c.outcome == Outcome::accepted;
      if (accepted != is_hex(c.accepted_commit, 40))
        refuse(StateError::invalid,
               accepted ? fmt::format("accepting job {} needs the kernel_data commit id (40 lowercase hex digits); "
                                      "got \"{}\"",
                                      job_id, c.accepted_commit)
                        : fmt::format("job {} is not accepted, so it cannot name an accepted commit (\"{}\")", job_id,
                                      c.accepted_commit));
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      Job before = expect_holder(job_id, worker_id, "complete");
      State to = to_state(c.outcome);
      auto& q = stmt(fmt::format("UPDATE jobs SET state=?, result=?, finished_at=?, lease_expires_at=NULL "
                                 "WHERE id=? RETURNING {}",
                                 kJobCols));
      q.bind(1, std::string(to_string(to)));
      if (c.result.is_null()) q.bind(2);
      else q.bind(2, json_text(c.result));
      q.bind(3, now);
      q.bind(4, job_id);
      q.executeStep();
      Job j = read_job(q);
      q.reset();
      expect_submission(before.submission_id, {State::running}, "complete its job");
      finish_submission(before.submission_id, to, c.verdict, c.reasons, c.accepted_commit, now);
      nlohmann::json d = {{"worker", worker_id}, {"outcome", to_string(to)}};
      if (accepted) d["commit"] = c.accepted_commit;
      audit(now, "job.complete", fmt::format("job/{}", job_id), d);
      tx.commit();
      return j;
    });
  }

  StateResult<Job> retry(std::int64_t job_id, const std::string& worker_id, const std::vector<std::string>& reasons,
                         const nlohmann::json& result) override {
    return guarded([&] {
      check_worker(worker_id);
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      Job before = expect_holder(job_id, worker_id, "retry");
      bool last = before.attempts >= before.max_attempts;
      auto& q = stmt(last ? fmt::format("UPDATE jobs SET state='failed', result=?1, finished_at=?2, lease_expires_at=NULL "
                                        "WHERE id=?3 RETURNING {}",
                                        kJobCols)
                          : fmt::format("UPDATE jobs SET state='queued', result=?1, lease_owner=NULL, "
                                        "lease_expires_at=NULL, heartbeat_at=NULL WHERE id=?3 RETURNING {}",
                                        kJobCols));
      if (result.is_null()) q.bind(1);
      else q.bind(1, json_text(result));
      if (last) q.bind(2, now);
      q.bind(3, job_id);
      q.executeStep();
      Job j = read_job(q);
      q.reset();
      expect_submission(before.submission_id, {State::running}, "retry its job");
      if (last) {
        std::vector<std::string> why = reasons;
        why.push_back(fmt::format("gave up after {} attempts (max_attempts={})", before.attempts, before.max_attempts));
        finish_submission(before.submission_id, State::failed, nullptr, why, "", now);
      } else {
        move_submission(before.submission_id, State::running, State::queued, now);
      }
      audit(now, "job.retry", fmt::format("job/{}", job_id),
            {{"worker", worker_id}, {"now", to_string(j.state)}, {"reason", reasons.empty() ? "" : reasons.front()}});
      tx.commit();
      return j;
    });
  }

  StateResult<std::vector<Requeued>> requeue_expired(UnixMs now) override {
    return guarded([&] {
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      std::vector<Job> expired;
      {
        auto& q = stmt(fmt::format(
            "SELECT {} FROM jobs WHERE state='running' AND lease_expires_at <= ? ORDER BY id", kJobCols));
        q.bind(1, now);
        while (q.executeStep()) expired.push_back(read_job(q));
        q.reset();
      }
      std::vector<Requeued> out;
      for (const Job& j : expired) {
        if (j.attempts >= j.max_attempts) {
          std::string reason = fmt::format(
              "job {} lost its lease {} times (last holder \"{}\", lease expired at {} ms); gave up after "
              "max_attempts={}",
              j.id, j.attempts, j.lease_owner, *j.lease_expires_at, j.max_attempts);
          auto& u = stmt("UPDATE jobs SET state='failed', finished_at=?, lease_expires_at=NULL, result=? WHERE id=?");
          u.bind(1, now);
          u.bind(2, json_text({{"error", reason}}));
          u.bind(3, j.id);
          u.exec();
          expect_submission(j.submission_id, {State::running}, "fail its expired job");
          finish_submission(j.submission_id, State::failed, nullptr, {reason}, "", now);
          audit(now, "job.lease-expired", fmt::format("job/{}", j.id), {{"worker", j.lease_owner}, {"now", "failed"}});
          out.push_back({j.id, j.lease_owner, State::failed});
        } else {
          auto& u = stmt(
              "UPDATE jobs SET state='queued', lease_owner=NULL, lease_expires_at=NULL, heartbeat_at=NULL "
              "WHERE id=?");
          u.bind(1, j.id);
          u.exec();
          move_submission(j.submission_id, State::running, State::queued, now);
          audit(now, "job.lease-expired", fmt::format("job/{}", j.id), {{"worker", j.lease_owner}, {"now", "queued"}});
          out.push_back({j.id, j.lease_owner, State::queued});
        }
      }
      tx.commit();
      return out;
    });
  }

  StateResult<Submission> get_submission(std::int64_t id) override {
    return guarded([&] { return load_submission(id); });
  }

  StateResult<Job> get_job(std::int64_t id) override {
    return guarded([&] {
      auto j = find_job(id);
      if (!j) refuse(StateError::not_found, fmt::format("job {} does not exist", id));
      return *j;
    });
  }

  StateResult<std::vector<Job>> jobs_of(std::int64_t submission_id) override {
    return guarded([&] {
      load_submission(submission_id);
      auto& q = stmt(fmt::format("SELECT {} FROM jobs WHERE submission_id=? ORDER BY id", kJobCols));
      q.bind(1, submission_id);
      std::vector<Job> out;
      while (q.executeStep()) out.push_back(read_job(q));
      q.reset();
      return out;
    });
  }

  StateResult<std::vector<Submission>> list_submissions(const SubmissionFilter& f) override {
    return guarded([&] {
      if (f.limit < 1 || f.limit > 1000) refuse(StateError::invalid, "limit must be 1 to 1000");
      auto& q = stmt(fmt::format(
          "SELECT {} FROM submissions WHERE id < ?1 AND (?2 IS NULL OR kernel_id = ?2) "
          "AND (?3 IS NULL OR submitter_id = ?3) AND (?4 IS NULL OR state = ?4) AND (?6 IS NULL OR route = ?6) "
          "AND (?7 IS NULL OR kind = ?7) ORDER BY id DESC LIMIT ?5",
          kSubCols));
      q.bind(1, static_cast<int64_t>(f.before_id));
      if (f.kernel_id) q.bind(2, *f.kernel_id);
      if (f.submitter_id) q.bind(3, *f.submitter_id);
      if (f.state) q.bind(4, std::string(to_string(*f.state)));
      q.bind(5, f.limit);
      if (f.route) q.bind(6, *f.route);
      if (f.kind) q.bind(7, *f.kind);
      std::vector<Submission> out;
      while (q.executeStep()) out.push_back(read_submission(q));
      q.reset();
      return out;
    });
  }

  StateResult<std::int64_t> count_jobs(State s) override {
    return guarded([&] {
      auto& q = stmt("SELECT count(*) FROM jobs WHERE state=?");
      q.bind(1, std::string(to_string(s)));
      q.executeStep();
      std::int64_t n = q.getColumn(0).getInt64();
      q.reset();
      return n;
    });
  }

  StateResult<Route> ensure_route(const std::string& name, const std::string& owner) override {
    return guarded([&] {
      if (name.empty() || name.size() > 64) refuse(StateError::invalid, fmt::format("route name \"{}\" must be 1-64 bytes", name));
      if (owner.empty() || owner.size() > 128) refuse(StateError::invalid, "a route's owner must be 1-128 bytes");
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      auto& ins = stmt("INSERT INTO routes(name, owner, created_at) VALUES (?,?,?) ON CONFLICT(name) DO NOTHING");
      ins.bind(1, name);
      ins.bind(2, owner);
      ins.bind(3, now);
      if (ins.exec() == 1) audit(now, "route.create", "route/" + name, {{"owner", owner}});
      auto& q = stmt("SELECT name, owner, created_at FROM routes WHERE name=?");
      q.bind(1, name);
      q.executeStep();
      Route r{q.getColumn(0).getString(), q.getColumn(1).getString(), q.getColumn(2).getInt64()};
      q.reset();
      tx.commit();
      return r;
    });
  }

  StateResult<std::vector<Route>> list_routes() override {
    return guarded([&] {
      auto& q = stmt("SELECT name, owner, created_at FROM routes ORDER BY name");
      std::vector<Route> out;
      while (q.executeStep()) out.push_back({q.getColumn(0).getString(), q.getColumn(1).getString(), q.getColumn(2).getInt64()});
      q.reset();
      return out;
    });
  }

  StateResult<Job> release_job(std::int64_t job_id) override {
    return guarded([&] {
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      auto j = find_job(job_id);
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
      auto& q = stmt(fmt::format("UPDATE jobs SET held=0, released_by=?, released_at=? WHERE id=? RETURNING {}",
                                 kJobCols));
      q.bind(1, actor_.who);
      q.bind(2, now);
      q.bind(3, job_id);
      q.executeStep();
      Job out = read_job(q);
      q.reset();
      audit(now, "job.release", fmt::format("job/{}", job_id), {{"submission", out.submission_id}});
      tx.commit();
      return out;
    });
  }

  StateResult<std::vector<HeldJob>> held_jobs(int limit) override {
    return guarded([&] {
      if (limit < 1 || limit > 1000) refuse(StateError::invalid, "limit must be 1 to 1000");
      auto& q = stmt(
          "SELECT j.id, s.id, s.kernel_id, s.submitter_id, s.summary, s.sha256, j.created_at, j.hold_reason, "
          "s.route FROM jobs j JOIN submissions s ON s.id = j.submission_id WHERE j.state='queued' AND j.held=1 "
          "ORDER BY j.id LIMIT ?");
      q.bind(1, limit);
      std::vector<HeldJob> out;
      while (q.executeStep())
        out.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getInt64(), q.getColumn(2).getString(),
                       q.getColumn(3).getString(), q.getColumn(4).getString(), q.getColumn(5).getString(),
                       q.getColumn(6).getInt64(), q.getColumn(7).getString(), q.getColumn(8).getString()});
      q.reset();
      return out;
    });
  }

  StateResult<Job> open_pull(std::int64_t submission_id, int max_attempts) override {
    return guarded([&] {
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      Submission sub = expect_submission(submission_id, {State::received}, "open a pull request for");
      Job j = queue_job(submission_id, max_attempts, kHeldPullRequest, now);
      auto& p = stmt("INSERT INTO pulls(submission_id, route, author, created_at) VALUES (?,?,?,?)");
      p.bind(1, submission_id);
      p.bind(2, sub.route);
      p.bind(3, sub.submitter_id);
      p.bind(4, now);
      p.exec();
      audit(now, "pull.open", fmt::format("submission/{}", submission_id), {{"route", sub.route}, {"job", j.id}});
      tx.commit();
      return j;
    });
  }

  StateResult<Pull> decide_pull(std::int64_t submission_id, bool merge, bool then_admin, const std::string& why) override {
    return guarded([&] {
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      Pull p = load_pull(submission_id);
      if (p.state != PullState::open)
        refuse(StateError::wrong_state, fmt::format("pull request {} is {} already (by {})", submission_id,
                                                    to_string(p.state), p.decided_by));
      auto& u = stmt("UPDATE pulls SET state=?, decided_by=?, decided_at=? WHERE submission_id=?");
      u.bind(1, std::string(to_string(merge ? PullState::merged : PullState::closed)));
      u.bind(2, actor_.who);
      u.bind(3, now);
      u.bind(4, submission_id);
      u.exec();
      if (merge) {
        // Its job: claimable now, or on to a maintainer when it comes from outside the project.
        auto& j = stmt(then_admin ? "UPDATE jobs SET hold_reason='JobHeldAdmin' WHERE submission_id=? AND state='queued' "
                                    "AND held=1 AND hold_reason='PullRequest'"
                                  : "UPDATE jobs SET held=0, released_by=?2, released_at=?3 WHERE submission_id=?1 "
                                    "AND state='queued' AND held=1 AND hold_reason='PullRequest'");
        j.bind(1, submission_id);
        if (!then_admin) {
          j.bind(2, actor_.who);
          j.bind(3, now);
        }
        if (j.exec() != 1)
          refuse(StateError::wrong_state, fmt::format("pull request {} has no job waiting for its merge", submission_id));
        audit(now, "pull.merge", fmt::format("submission/{}", submission_id),
              {{"route", p.route}, {"then", then_admin ? "held for a maintainer" : "queued"}});
      } else {
        expect_submission(submission_id, {State::received, State::queued, State::running}, "close");
        auto& j = stmt("UPDATE jobs SET state='cancelled', finished_at=?, lease_expires_at=NULL, held=0 "
                       "WHERE submission_id=? AND state IN ('queued','running')");
        j.bind(1, now);
        j.bind(2, submission_id);
        j.exec();
        finish_submission(submission_id, State::cancelled, nullptr,
                          {why.empty() ? "pull request closed by " + actor_.who : why}, "", now);
        audit(now, "pull.close", fmt::format("submission/{}", submission_id), {{"route", p.route}, {"why", why}});
      }
      Pull out = load_pull(submission_id);
      tx.commit();
      return out;
    });
  }

  StateResult<Pull> get_pull(std::int64_t submission_id) override {
    return guarded([&] { return load_pull(submission_id); });
  }

  StateResult<std::vector<Pull>> list_pulls(const std::optional<std::string>& route,
                                            const std::optional<PullState>& state, int limit) override {
    return guarded([&] {
      if (limit < 1 || limit > 1000) refuse(StateError::invalid, "limit must be 1 to 1000");
      auto& q = stmt(fmt::format("SELECT {} FROM pulls WHERE (?1 IS NULL OR route = ?1) AND (?2 IS NULL OR state = ?2) "
                                 "ORDER BY submission_id DESC LIMIT ?3",
                                 kPullCols));
      if (route) q.bind(1, *route);
      if (state) q.bind(2, std::string(to_string(*state)));
      q.bind(3, limit);
      std::vector<Pull> out;
      while (q.executeStep()) out.push_back(read_pull(q));
      q.reset();
      return out;
    });
  }

  StateResult<Comment> add_comment(std::int64_t submission_id, ReviewKind kind, const std::string& body) override {
    return guarded([&] {
      if (body.empty() || body.size() > 10000)
        refuse(StateError::invalid, fmt::format("a comment is 1-10000 bytes; this one is {}", body.size()));
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      (void)load_pull(submission_id);
      auto& q = stmt("INSERT INTO comments(submission_id, who, token_id, kind, body, at) VALUES (?,?,?,?,?,?) "
                     "RETURNING id");
      q.bind(1, submission_id);
      q.bind(2, actor_.who);
      q.bind(3, actor_.token_id);
      q.bind(4, std::string(to_string(kind)));
      q.bind(5, body);
      q.bind(6, now);
      q.executeStep();
      Comment c{q.getColumn(0).getInt64(), submission_id, actor_.who, actor_.token_id, kind, body, now};
      q.reset();
      audit(now, kind == ReviewKind::comment ? "pull.comment" : "pull.review", fmt::format("submission/{}", submission_id),
            {{"comment", c.id}, {"kind", to_string(kind)}});
      tx.commit();
      return c;
    });
  }

  StateResult<std::vector<Comment>> comments(std::int64_t submission_id) override {
    return guarded([&] {
      (void)load_pull(submission_id);
      auto& q = stmt("SELECT id, submission_id, who, token_id, kind, body, at FROM comments WHERE submission_id=? "
                     "ORDER BY id");
      q.bind(1, submission_id);
      std::vector<Comment> out;
      while (q.executeStep())
        out.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getInt64(), q.getColumn(2).getString(),
                       q.getColumn(3).getString(), parse_review_kind(q.getColumn(4).getString()).value_or(ReviewKind::comment),
                       q.getColumn(5).getString(), q.getColumn(6).getInt64()});
      q.reset();
      return out;
    });
  }

  StateResult<BoardStatus> set_board_status(int version, const std::string& status) override {
    return guarded([&] {
      if (version < 1) refuse(StateError::invalid, "a board version is 1 or more");
      if (status != "active" && status != "saturated" && status != "superseded" && status != "flawed")
        refuse(StateError::invalid, fmt::format("status \"{}\" is not active, saturated, superseded or flawed (quiet is "
                                                "computed, never set)",
                                                status));
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      auto& q = stmt("INSERT INTO board_status(version, status, set_by, set_at) VALUES (?,?,?,?) "
                     "ON CONFLICT(version) DO UPDATE SET status=excluded.status, set_by=excluded.set_by, "
                     "set_at=excluded.set_at");
      q.bind(1, version);
      q.bind(2, status);
      q.bind(3, actor_.who);
      q.bind(4, now);
      q.exec();
      audit(now, "board.status", fmt::format("board/v{}", version), {{"status", status}});
      tx.commit();
      return BoardStatus{version, status, actor_.who, now};
    });
  }

  StateResult<std::optional<BoardStatus>> board_status(int version) override {
    return guarded([&]() -> std::optional<BoardStatus> {
      auto& q = stmt("SELECT version, status, set_by, set_at FROM board_status WHERE version=?");
      q.bind(1, version);
      std::optional<BoardStatus> out;
      if (q.executeStep())
        out = BoardStatus{q.getColumn(0).getInt(), q.getColumn(1).getString(), q.getColumn(2).getString(),
                          q.getColumn(3).getInt64()};
      q.reset();
      return out;
    });
  }

  void set_actor(const Actor& a) override { actor_ = a; }

  StateResult<User> add_user(const std::string& name, Role role) override {
    return guarded([&] {
      if (!valid_name(name))
        refuse(StateError::invalid, fmt::format("user name \"{}\" is invalid: use 1-64 letters, digits, '.', '_' "
                                                "or '-', starting with a letter or digit",
                                                name));
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      {
        auto& e = stmt("SELECT role FROM users WHERE name=?");
        e.bind(1, name);
        if (e.executeStep()) {
          std::string role_now = e.getColumn(0).getString();
          e.reset();
          refuse(StateError::wrong_state, fmt::format("user \"{}\" exists already (role {})", name, role_now));
        }
        e.reset();
      }
      auto& q = stmt("INSERT INTO users(name, role, created_at) VALUES (?,?,?)");
      q.bind(1, name);
      q.bind(2, std::string(to_string(role)));
      q.bind(3, now);
      q.exec();
      audit(now, "user.add", "user/" + name, {{"role", to_string(role)}});
      tx.commit();
      return User{name, role, now};
    });
  }

  StateResult<User> get_user(const std::string& name) override {
    return guarded([&] { return load_user(name); });
  }

  StateResult<std::vector<User>> list_users() override {
    return guarded([&] {
      auto& q = stmt("SELECT name, role, created_at FROM users ORDER BY name");
      std::vector<User> out;
      while (q.executeStep()) out.push_back(user_row(q));
      q.reset();
      return out;
    });
  }

  StateResult<Token> add_token(const Token& t) override {
    return guarded([&] {
      if (!is_hex(t.id, 16)) refuse(StateError::invalid, fmt::format("token id \"{}\" must be 16 lowercase hex digits", t.id));
      if (t.hash.size() != 32) refuse(StateError::invalid, "a token hash is 32 bytes");
      if ((t.kind == TokenKind::person) != t.label.empty())
        refuse(StateError::invalid, t.kind == TokenKind::person ? "a person's token has no agent or runner name"
                                                                : "an agent's or runner's token needs its name");
      if (!t.label.empty() && !valid_name(t.label))
        refuse(StateError::invalid, fmt::format("name \"{}\" is invalid: use 1-64 letters, digits, '.', '_' or '-'",
                                                t.label));
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      User u = load_user(t.user);
      if (t.kind == TokenKind::runner && u.role != Role::maintainer)
        refuse(StateError::invalid, fmt::format("runner tokens are issued to maintainers only; \"{}\" is a {}",
                                                t.user, to_string(u.role)));
      auto& q = stmt(
          "INSERT INTO tokens(id, user_name, kind, label, hash, created_at, created_by, expires_at, "
          "limit_submissions_per_hour, limit_concurrent_jobs, limit_upload_bytes_per_day) "
          "VALUES (?,?,?,?,?,?,?,?,?,?,?)");
      q.bind(1, t.id);
      q.bind(2, t.user);
      q.bind(3, std::string(to_string(t.kind)));
      q.bind(4, t.label);
      q.bind(5, t.hash.data(), static_cast<int>(t.hash.size()));
      q.bind(6, now);
      q.bind(7, t.created_by.empty() ? actor_.who : t.created_by);
      bind_opt(q, 8, t.expires_at);
      bind_opt(q, 9, t.limits.submissions_per_hour);
      bind_opt(q, 10, t.limits.concurrent_jobs);
      bind_opt(q, 11, t.limits.upload_bytes_per_day);
      q.exec();
      nlohmann::json d = {{"user", t.user}, {"kind", to_string(t.kind)}};
      if (!t.label.empty()) d["name"] = t.label;
      if (t.expires_at) d["expires_at"] = *t.expires_at;
      audit(now, "token.issue", "token/" + t.id, d);
      Token out = load_token(t.id);
      tx.commit();
      return out;
    });
  }

  StateResult<Token> get_token(const std::string& id) override {
    return guarded([&] { return load_token(id); });
  }

  StateResult<std::vector<Token>> list_tokens(const std::optional<std::string>& user) override {
    return guarded([&] {
      auto& q = stmt(fmt::format("SELECT {} FROM tokens t JOIN users u ON u.name = t.user_name "
                                 "WHERE (?1 IS NULL OR t.user_name = ?1) ORDER BY t.created_at, t.id",
                                 kTokenCols));
      if (user) q.bind(1, *user);
      std::vector<Token> out;
      while (q.executeStep()) out.push_back(read_token(q));
      q.reset();
      return out;
    });
  }

  StateResult<Token> revoke_token(const std::string& id) override {
    return guarded([&] {
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      Token t = load_token(id);
      if (t.revoked_at) refuse(StateError::wrong_state, fmt::format("token {} is revoked already", id));
      auto& q = stmt("UPDATE tokens SET revoked_at=? WHERE id=?");
      q.bind(1, now);
      q.bind(2, id);
      q.exec();
      audit(now, "token.revoke", "token/" + id, {{"user", t.user}, {"kind", to_string(t.kind)}});
      Token out = load_token(id);
      tx.commit();
      return out;
    });
  }

  StateResult<bool> touch_token(const std::string& id) override {
    return guarded([&] {
      UnixMs now = clock_();
      auto& q = stmt("UPDATE tokens SET last_used_at=?1 WHERE id=?2 AND (last_used_at IS NULL OR last_used_at < ?1 - 60000)");
      q.bind(1, now);
      q.bind(2, id);
      return q.exec() == 1;
    });
  }

  StateResult<TokenUsage> token_usage(const std::string& id, UnixMs since) override {
    return guarded([&] {
      TokenUsage u;
      {
        auto& q = stmt("SELECT count(*), min(created_at), COALESCE(sum(package_bytes), 0), "
                       "min(CASE WHEN package_bytes > 0 THEN created_at END) "
                       "FROM submissions WHERE token_id=? AND created_at > ?");
        q.bind(1, id);
        q.bind(2, since);
        q.executeStep();
        u.submissions = q.getColumn(0).getInt64();
        u.oldest_submission = opt_ms(q.getColumn(1));
        u.upload_bytes = q.getColumn(2).getInt64();
        u.oldest_upload = opt_ms(q.getColumn(3));
        q.reset();
      }
      auto& a = stmt("SELECT count(*) FROM jobs j JOIN submissions s ON s.id = j.submission_id "
                     "WHERE s.token_id=? AND j.state IN ('queued','running')");
      a.bind(1, id);
      a.executeStep();
      u.active_jobs = a.getColumn(0).getInt64();
      a.reset();
      auto& c = stmt("SELECT count(*), min(at) FROM comments WHERE token_id=? AND at > ?");
      c.bind(1, id);
      c.bind(2, since);
      c.executeStep();
      u.comments = c.getColumn(0).getInt64();
      u.oldest_comment = opt_ms(c.getColumn(1));
      c.reset();
      return u;
    });
  }

  StateResult<bool> append_audit(const std::string& action, const std::string& target,
                                 const nlohmann::json& detail) override {
    return guarded([&] {
      if (action.empty() || action.size() > 64) refuse(StateError::invalid, "an audit action is 1-64 bytes");
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      audit(clock_(), action, target, detail);
      tx.commit();
      return true;
    });
  }

  StateResult<std::vector<AuditEntry>> audit_log(const AuditFilter& f) override {
    return guarded([&] {
      if (f.limit < 1 || f.limit > 1000) refuse(StateError::invalid, "limit must be 1 to 1000");
      auto& q = stmt("SELECT id, at, who, token_id, action, target, detail FROM audit WHERE id < ?1 "
                     "AND (?2 IS NULL OR who = ?2) ORDER BY id DESC LIMIT ?3");
      q.bind(1, static_cast<int64_t>(f.before_id));
      if (f.who) q.bind(2, *f.who);
      q.bind(3, f.limit);
      std::vector<AuditEntry> out;
      while (q.executeStep())
        out.push_back({q.getColumn(0).getInt64(), q.getColumn(1).getInt64(), q.getColumn(2).getString(),
                       q.getColumn(3).getString(), q.getColumn(4).getString(), q.getColumn(5).getString(),
                       nlohmann::json::parse(q.getColumn(6).getString())});
      q.reset();
      return out;
    });
  }

  UnixMs now() override { return clock_(); }

 private:
  // The received submission's job, queued (held for `hold_reason` unless it is
  // empty), the submission moved along; in the caller's transaction.
  Job queue_job(std::int64_t submission_id, int max_attempts, std::string_view hold_reason, UnixMs now) {
    if (max_attempts < 1 || max_attempts > 100)
      refuse(StateError::invalid, fmt::format("max_attempts {} is out of range: give 1 to 100", max_attempts));
    set_submission_state(submission_id, State::queued, now);
    auto& q = stmt(fmt::format("INSERT INTO jobs(submission_id, state, max_attempts, created_at, held, hold_reason) "
                               "VALUES (?, 'queued', ?, ?, ?, ?) RETURNING {}",
                               kJobCols));
    q.bind(1, submission_id);
    q.bind(2, max_attempts);
    q.bind(3, now);
    q.bind(4, hold_reason.empty() ? 0 : 1);
    q.bind(5, std::string(hold_reason));
    q.executeStep();
    Job j = read_job(q);
    q.reset();
    return j;
  }

  // One audit row in the caller's transaction, as done by the current actor.
  void audit(UnixMs now, std::string_view action, const std::string& target, const nlohmann::json& detail) {
    auto& q = stmt("INSERT INTO audit(at, who, token_id, action, target, detail) VALUES (?,?,?,?,?,?)");
    q.bind(1, now);
    q.bind(2, actor_.who);
    q.bind(3, actor_.token_id);
    q.bind(4, std::string(action));
    q.bind(5, target);
    q.bind(6, json_text(detail.is_object() ? detail : nlohmann::json::object()));
    q.exec();
  }

  template <class T>
  static void bind_opt(SQLite::Statement& q, int i, const std::optional<T>& v) {
    if (v) q.bind(i, static_cast<int64_t>(*v));
    else q.bind(i);
  }

  static User user_row(SQLite::Statement& q) {
    auto r = parse_role(q.getColumn(1).getString());
    if (!r) refuse(StateError::io, fmt::format("state database holds unknown role \"{}\"", q.getColumn(1).getString()));
    return User{q.getColumn(0).getString(), *r, q.getColumn(2).getInt64()};
  }

  static constexpr const char* kPullCols = "submission_id, route, author, state, created_at, decided_by, decided_at";

  static Pull read_pull(SQLite::Statement& q) {
    Pull p;
    p.submission_id = q.getColumn(0).getInt64();
    p.route = q.getColumn(1).getString();
    p.author = q.getColumn(2).getString();
    p.state = parse_pull_state(q.getColumn(3).getString()).value_or(PullState::open);
    p.created_at = q.getColumn(4).getInt64();
    p.decided_by = q.getColumn(5).getString();
    p.decided_at = opt_ms(q.getColumn(6));
    return p;
  }

  // The one row `sql` selects with `key` bound to its parameter, read by
  // `read`; not_found with the message `missing` makes when there is none.
  template <class K, class Read, class Missing>
  auto one_row(const std::string& sql, const K& key, Read read, Missing missing) {
    auto& q = stmt(sql);
    q.bind(1, key);
    if (!q.executeStep()) {
      q.reset();
      refuse(StateError::not_found, missing());
    }
    auto row = read(q);
    q.reset();
    return row;
  }

  Pull load_pull(std::int64_t submission_id) {
    return one_row(fmt::format("SELECT {} FROM pulls WHERE submission_id=?", kPullCols), submission_id, read_pull, [&] {
      return fmt::format("there is no pull request {} (a pull request is named by its submission: GET /api/pulls "
                         "lists them)",
                         submission_id);
    });
  }

  User load_user(const std::string& name) {
    return one_row("SELECT name, role, created_at FROM users WHERE name=?", name, user_row, [&] {
      return fmt::format("user \"{}\" does not exist: add it with `kzoo user add {} --role member`", name, name);
    });
  }

  Token load_token(const std::string& id) {
    return one_row(fmt::format("SELECT {} FROM tokens t JOIN users u ON u.name = t.user_name WHERE t.id=?", kTokenCols),
                   id, read_token, [&] { return fmt::format("token {} does not exist", id); });
  }

  // Runs `f`, turning refusals and database errors into values. A refusal or
  // error inside a transaction unwinds through its Transaction, rolling back.
  template <class F>
  auto guarded(F&& f) -> StateResult<decltype(f())> {
    try {
      return f();
    } catch (const Refusal& r) {
      return tl::unexpected(r.error);
    } catch (const SQLite::Exception& e) {
      reset_all();
      int code = e.getErrorCode() & 0xff;  // primary code of an extended one
      bool busy = code == SQLITE_BUSY || code == SQLITE_LOCKED;
      return tl::unexpected(StateError{busy ? StateError::busy : StateError::io,
                                       busy ? fmt::format("state database {} stayed locked for the busy timeout; "
                                                          "retry: {}",
                                                          db_.getFilename(), e.what())
                                            : fmt::format("state database {}: {}", db_.getFilename(), e.what())});
    } catch (const nlohmann::json::exception& e) {
      reset_all();
      return tl::unexpected(
          StateError{StateError::io, fmt::format("state database {} holds malformed JSON: {}", db_.getFilename(),
                                                 e.what())});
    }
  }

  // Prepared statements are kept per connection; each use starts clean.
  SQLite::Statement& stmt(const std::string& sql) {
    auto& p = cache_[sql];
    if (!p) {
      p = std::make_unique<SQLite::Statement>(db_, sql);
    } else {
      p->tryReset();
      p->clearBindings();
    }
    return *p;
  }
  void reset_all() {
    for (auto& [sql, s] : cache_) s->tryReset();
  }

  std::optional<Job> find_job(std::int64_t id) {
    auto& q = stmt(fmt::format("SELECT {} FROM jobs WHERE id=?", kJobCols));
    q.bind(1, id);
    std::optional<Job> j;
    if (q.executeStep()) j = read_job(q);
    q.reset();
    return j;
  }

  Submission load_submission(std::int64_t id) {
    return one_row(fmt::format("SELECT {} FROM submissions WHERE id=?", kSubCols), id, read_submission,
                   [&] { return fmt::format("submission {} does not exist", id); });
  }

  // Refuses unless the submission's current state is one of `from`.
  Submission expect_submission(std::int64_t id, std::initializer_list<State> from, std::string_view action) {
    Submission s = load_submission(id);
    for (State f : from)
      if (s.state == f) return s;
    std::string allowed;
    for (State f : from) allowed += (allowed.empty() ? "" : " or ") + std::string(to_string(f));
    refuse(StateError::wrong_state, fmt::format("cannot {} submission {}: it is {}, and {} starts only from {}",
                                                action, id, to_string(s.state), action, allowed));
  }

  // The job must be running under `worker_id`.
  Job expect_holder(std::int64_t job_id, const std::string& worker_id, std::string_view action) {
    auto j = find_job(job_id);
    if (!j) refuse(StateError::not_found, fmt::format("job {} does not exist", job_id));
    if (j->state != State::running)
      refuse(StateError::wrong_state,
             fmt::format("cannot {} job {}: it is {}, not running{}", action, job_id, to_string(j->state),
                         is_final(j->state) ? " (it is finished; stop working on it)"
                                            : " (its lease was taken back; stop working on it)"));
    if (j->lease_owner != worker_id)
      refuse(StateError::not_holder, fmt::format("cannot {} job {}: worker \"{}\" does not hold its lease (\"{}\" "
                                                 "does); the lease was lost, stop working on it",
                                                 action, job_id, worker_id, j->lease_owner));
    return *j;
  }

  void set_submission_state(std::int64_t id, State to, UnixMs now) {
    auto& u = stmt("UPDATE submissions SET state=?, updated_at=? WHERE id=?");
    u.bind(1, std::string(to_string(to)));
    u.bind(2, now);
    u.bind(3, id);
    u.exec();
  }

  // A job's move drags its submission along; anything else means the two
  // tables disagree, which rolls the whole transaction back.
  void move_submission(std::int64_t id, State from, State to, UnixMs now) {
    auto& u = stmt("UPDATE submissions SET state=?, updated_at=? WHERE id=? AND state=?");
    u.bind(1, std::string(to_string(to)));
    u.bind(2, now);
    u.bind(3, id);
    u.bind(4, std::string(to_string(from)));
    if (u.exec() != 1)
      refuse(StateError::io, fmt::format("submission {} is not {} although its job is moving {} -> {}: the state "
                                         "database is inconsistent; nothing was changed",
                                         id, to_string(from), to_string(from), to_string(to)));
  }

  void finish_submission(std::int64_t id, State to, const nlohmann::json& verdict,
                         const std::vector<std::string>& reasons, const std::string& commit, UnixMs now) {
    auto& u = stmt("UPDATE submissions SET state=?, verdict=?, reasons=?, accepted_commit=?, updated_at=? WHERE id=?");
    u.bind(1, std::string(to_string(to)));
    if (verdict.is_null()) u.bind(2);
    else u.bind(2, json_text(verdict));
    u.bind(3, json_text(reasons));
    u.bind(4, commit);
    u.bind(5, now);
    u.bind(6, id);
    u.exec();
  }

  SQLite::Database db_;
  std::function<UnixMs()> clock_;
  std::unordered_map<std::string, std::unique_ptr<SQLite::Statement>> cache_;
  int version_ = 0;
  Actor actor_;
};

}  // namespace

StateResult<std::unique_ptr<StateDb>> open_sqlite_state_db(const std::string& path, SqliteOptions options) {
  try {
    auto db = std::make_unique<SqliteStateDb>(path, std::move(options));
    auto v = db->migrate_now();
    if (!v) return tl::unexpected(v.error());
    return std::unique_ptr<StateDb>(std::move(db));
  } catch (const Refusal& r) {
    return tl::unexpected(r.error);
  } catch (const SQLite::Exception& e) {
    return tl::unexpected(StateError{(e.getErrorCode() & 0xff) == SQLITE_BUSY ? StateError::busy : StateError::io,
                                     fmt::format("cannot open state database {}: {}", path, e.what())});
  }
}

}  // namespace kzoo::store
