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
    "accepted_commit, route, kind";
constexpr const char* kJobCols =
    "id, submission_id, state, attempts, max_attempts, lease_owner, lease_expires_at, heartbeat_at, result, "
    "created_at, started_at, finished_at";

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
  s.route = q.getColumn(12).getString();
  s.kind = q.getColumn(13).getString();
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
      auto& q = stmt(fmt::format("INSERT INTO submissions(kernel_id, submitter_id, summary, package_path, sha256, "
                                 "created_at, updated_at, state, route, kind) VALUES (?,?,?,?,?,?,?,'received',?,?) "
                                 "RETURNING {}",
                                 kSubCols));
      q.bind(1, n.kernel_id);
      q.bind(2, n.submitter_id);
      q.bind(3, n.summary);
      q.bind(4, n.package_path);
      q.bind(5, n.sha256);
      q.bind(6, now);
      q.bind(7, now);
      q.bind(8, n.route);
      q.bind(9, n.kind);
      q.executeStep();
      Submission s = read_submission(q);
      q.reset();
      tx.commit();
      return s;
    });
  }

  StateResult<Job> enqueue(std::int64_t submission_id, int max_attempts) override {
    return guarded([&] {
      if (max_attempts < 1 || max_attempts > 100)
        refuse(StateError::invalid, fmt::format("max_attempts {} is out of range: give 1 to 100", max_attempts));
      SQLite::Transaction tx(db_, SQLite::TransactionBehavior::IMMEDIATE);
      UnixMs now = clock_();
      expect_submission(submission_id, {State::received}, "enqueue");
      set_submission_state(submission_id, State::queued, now);
      auto& q = stmt(fmt::format("INSERT INTO jobs(submission_id, state, max_attempts, created_at) "
                                 "VALUES (?, 'queued', ?, ?) RETURNING {}",
                                 kJobCols));
      q.bind(1, submission_id);
      q.bind(2, max_attempts);
      q.bind(3, now);
      q.executeStep();
      Job j = read_job(q);
      q.reset();
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
          "UPDATE jobs SET state='cancelled', finished_at=?, lease_expires_at=NULL "
          "WHERE submission_id=? AND state IN ('queued','running')");
      j.bind(1, now);
      j.bind(2, submission_id);
      j.exec();
      finish_submission(submission_id, State::cancelled, nullptr, {reason.empty() ? "cancelled" : reason}, "", now);
      Submission s = load_submission(submission_id);
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
          "WHERE id = (SELECT id FROM jobs WHERE state='queued' ORDER BY id LIMIT 1) RETURNING {}",
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
          out.push_back({j.id, j.lease_owner, State::failed});
        } else {
          auto& u = stmt(
              "UPDATE jobs SET state='queued', lease_owner=NULL, lease_expires_at=NULL, heartbeat_at=NULL "
              "WHERE id=?");
          u.bind(1, j.id);
          u.exec();
          move_submission(j.submission_id, State::running, State::queued, now);
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
      auto& ins = stmt("INSERT INTO routes(name, owner, created_at) VALUES (?,?,?) ON CONFLICT(name) DO NOTHING");
      ins.bind(1, name);
      ins.bind(2, owner);
      ins.bind(3, clock_());
      ins.exec();
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

 private:
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
    auto& q = stmt(fmt::format("SELECT {} FROM submissions WHERE id=?", kSubCols));
    q.bind(1, id);
    if (!q.executeStep()) {
      q.reset();
      refuse(StateError::not_found, fmt::format("submission {} does not exist", id));
    }
    Submission s = read_submission(q);
    q.reset();
    return s;
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
