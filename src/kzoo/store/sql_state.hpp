// The state's logic, written once over an engine (sql_conn.hpp): every
// transition of every concern, its checks, its refusals and its audit row.
// SQLite and PostgreSQL differ only below Conn, so the two cannot drift in
// what they allow.
//
// Core holds what the concerns share (the connection, the actor, reading and
// moving submissions and jobs); each concern's class implements its interface
// on a Core (sql_submissions.cpp, sql_jobs.cpp, sql_accounts.cpp,
// sql_pulls.cpp, sql_issues.cpp, sql_board_audit.cpp); open_sql_state assembles a StateDb.
//
// Concurrency: every transition runs in Conn::write. Under SQLite that is the
// database's one writer; under PostgreSQL each row a transition checks is read
// with lock_rows(), so no other connection changes it between the check and
// the update, and a transaction that loses a race (deadlock) is run again.
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kzoo/store/sql_conn.hpp"
#include "kzoo/store/state_db.hpp"

namespace kzoo::store::sql {

// Thrown inside a transaction to roll it back; a value at the interface.
struct Refusal {
  StateError error;
};
[[noreturn]] void refuse(StateError::Kind k, std::string msg);

struct Migration {
  int version;                   // 1, 2, 3... strictly increasing, the same number on every engine
  std::string_view description;  // one line, stored in schema_version
  std::string_view sql;          // one or more statements
};

class Core {
 public:
  explicit Core(std::unique_ptr<Conn> conn) : conn_(std::move(conn)) {}

  Conn& db() { return *conn_; }
  Actor actor;
  int version = 0;

  // Runs `f`, turning refusals and database failures into values.
  template <class F>
  auto guarded(F&& f) -> StateResult<decltype(f())> {
    try {
      return f();
    } catch (const Refusal& r) {
      return tl::unexpected(r.error);
    } catch (const EngineFailure& e) {
      return tl::unexpected(failure(e));
    } catch (const nlohmann::json::exception& e) {
      return tl::unexpected(malformed_json(e.what()));
    }
  }

  // `f` inside one write transaction; its value is that of the run that committed.
  template <class F>
  auto write(F&& f) -> decltype(f()) {
    std::optional<decltype(f())> out;
    conn_->write([&] { out.emplace(f()); });
    return std::move(*out);
  }

  StateError failure(const EngineFailure& e) const;
  StateError malformed_json(const std::string& what) const;

  // One audit row in the caller's transaction, as done by the current actor.
  void audit(UnixMs now, std::string_view action, const std::string& target, const nlohmann::json& detail);

  Submission load_submission(std::int64_t id, bool lock = false);
  // Refuses unless the submission's current state is one of `from`; locks its row.
  Submission expect_submission(std::int64_t id, std::initializer_list<State> from, std::string_view action);
  std::optional<Job> find_job(std::int64_t id, bool lock = false);
  // The job must be running under `worker_id`; locks its row.
  Job expect_holder(std::int64_t job_id, const std::string& worker_id, std::string_view action);
  // The received submission's job, queued (held for `hold_reason` unless
  // empty), the submission moved along.
  // `needs`: what a GPU runner must have to claim it (JobQueue::claim_job).
  Job queue_job(std::int64_t submission_id, int max_attempts, std::string_view hold_reason, UnixMs now,
                const JobNeeds& needs = {});
  // A job's move drags its submission along; anything else means the two
  // tables disagree, which rolls the whole transaction back.
  void move_submission(std::int64_t id, State from, State to, UnixMs now);
  void finish_submission(std::int64_t id, State to, const nlohmann::json& verdict,
                         const std::vector<std::string>& reasons, const std::string& commit, UnixMs now);
  // Cancels the submission's queued or running job.
  void cancel_active_job(std::int64_t submission_id, UnixMs now);
  Pull load_pull(std::int64_t submission_id, bool lock = false);
  User load_user(const std::string& name);
  Token load_token(const std::string& id, bool lock = false);
  // What token `id` used since `since` (AccountStore::token_usage), in the caller's transaction.
  TokenUsage usage(const std::string& id, UnixMs since);

  static const char* const kSubCols;
  static const char* const kJobCols;
  static constexpr std::size_t kJobColCount = 20;  // the columns of kJobCols, for statements that select more
  // kJobCols with each column prefixed by `j.`, for statements that join.
  static std::string qualified_job_cols();
  static const char* const kTokenCols;  // tokens t JOIN users u
  static const char* const kPullCols;
  static Submission submission_of(const Row& r);
  static Job job_of(const Row& r);
  static Token token_of(const Row& r);
  static Pull pull_of(const Row& r);
  static User user_of(const Row& r);

 private:
  std::unique_ptr<Conn> conn_;
};

std::string json_text(const nlohmann::json& j);  // invalid UTF-8 replaced: captured text may hold it
bool is_hex(std::string_view s, std::size_t n);
// 1-64 of [A-Za-z0-9._-], starting with a letter or digit (users, agents, runners).
bool valid_name(std::string_view n);

class SqlSubmissions : public virtual SubmissionStore {
 public:
  explicit SqlSubmissions(Core& c) : c_(c) {}
  StateResult<Submission> create_submission(const NewSubmission& s) override;
  StateResult<Job> enqueue(std::int64_t submission_id, int max_attempts, bool held, JobNeeds needs) override;
  StateResult<Submission> reject(std::int64_t submission_id, const std::vector<std::string>& reasons,
                                 const nlohmann::json& verdict) override;
  StateResult<Submission> cancel(std::int64_t submission_id, const std::string& reason) override;
  StateResult<Submission> get_submission(std::int64_t id) override;
  StateResult<std::vector<Submission>> list_submissions(const SubmissionFilter& f) override;
  StateResult<Route> ensure_route(const std::string& name, const std::string& owner) override;
  StateResult<std::vector<Route>> list_routes() override;

 private:
  Core& c_;
};

class SqlJobQueue : public virtual JobQueue {
 public:
  explicit SqlJobQueue(Core& c) : c_(c) {}
  StateResult<std::optional<Job>> claim_job(const std::string& worker_id, int lease_seconds,
                                            const RunnerHas& has) override;
  StateResult<Job> heartbeat(std::int64_t job_id, const std::string& worker_id, int lease_seconds) override;
  StateResult<Job> complete(std::int64_t job_id, const std::string& worker_id, const Completion& c) override;
  StateResult<Job> retry(std::int64_t job_id, const std::string& worker_id, const std::vector<std::string>& reasons,
                         const nlohmann::json& result) override;
  StateResult<std::vector<Requeued>> requeue_expired(UnixMs now) override;
  StateResult<Job> get_job(std::int64_t id) override;
  StateResult<std::vector<Job>> jobs_of(std::int64_t submission_id) override;
  StateResult<std::int64_t> count_jobs(State s) override;
  StateResult<std::int64_t> count_claimable() override;
  StateResult<std::map<int, std::int64_t>> claimable_by_gpus() override;
  StateResult<Job> release_job(std::int64_t job_id) override;
  StateResult<std::vector<HeldJob>> held_jobs(int limit) override;
  StateResult<std::vector<JobListing>> list_jobs(const JobFilter& f) override;
  StateResult<std::optional<std::int64_t>> queue_position(std::int64_t job_id) override;
  UnixMs now() override;

 private:
  Core& c_;
};

class SqlBatches : public virtual BatchStore {
 public:
  explicit SqlBatches(Core& c) : c_(c) {}
  StateResult<BatchJob> create_batch(const NewBatch& b) override;
  StateResult<BatchJob> get_batch(std::int64_t job_id) override;
  StateResult<std::vector<BatchJob>> list_batch(const BatchFilter& f) override;
  StateResult<BatchJob> finish_batch(std::int64_t job_id, const std::string& worker_id, const BatchEnd& e) override;
  StateResult<BatchJob> cancel_batch(std::int64_t job_id, const std::string& reason) override;
  StateResult<std::vector<BatchJob>> unjudged_batches(int limit) override;
  StateResult<BatchJob> begin_judgement(std::int64_t job_id) override;
  StateResult<BatchJob> record_judgement(std::int64_t job_id, const nlohmann::json& review) override;

 private:
  BatchJob load(std::int64_t job_id, bool lock);
  void load_token_locked(const std::string& id);
  Core& c_;
};

class SqlAccounts : public virtual AccountStore {
 public:
  explicit SqlAccounts(Core& c) : c_(c) {}
  StateResult<User> add_user(const std::string& name, Role role) override;
  StateResult<User> get_user(const std::string& name) override;
  StateResult<std::vector<User>> list_users() override;
  StateResult<Token> add_token(const Token& t) override;
  StateResult<Token> get_token(const std::string& id) override;
  StateResult<std::vector<Token>> list_tokens(const std::optional<std::string>& user) override;
  StateResult<Token> revoke_token(const std::string& id) override;
  StateResult<bool> touch_token(const std::string& id) override;
  StateResult<TokenUsage> token_usage(const std::string& id, UnixMs since) override;

 private:
  Core& c_;
};

class SqlPulls : public virtual PullStore {
 public:
  explicit SqlPulls(Core& c) : c_(c) {}
  StateResult<Job> open_pull(std::int64_t submission_id, int max_attempts, JobNeeds needs) override;
  StateResult<Pull> decide_pull(std::int64_t submission_id, bool merge, bool then_admin,
                                const std::string& why) override;
  StateResult<Pull> get_pull(std::int64_t submission_id) override;
  StateResult<std::vector<Pull>> list_pulls(const std::optional<std::string>& route,
                                            const std::optional<PullState>& state, int limit) override;
  StateResult<Comment> add_comment(std::int64_t submission_id, ReviewKind kind, const std::string& body) override;
  StateResult<std::vector<Comment>> comments(std::int64_t submission_id) override;

 private:
  Core& c_;
};

class SqlIssues : public virtual IssueStore {
 public:
  explicit SqlIssues(Core& c) : c_(c) {}
  StateResult<Issue> open_issue(const std::string& title, const std::string& body) override;
  StateResult<Issue> get_issue(std::int64_t id) override;
  StateResult<std::vector<Issue>> list_issues(const IssueFilter& f) override;
  StateResult<IssueComment> comment_issue(std::int64_t id, const std::string& body) override;
  StateResult<std::vector<IssueComment>> issue_comments(std::int64_t id) override;
  StateResult<Issue> close_issue(std::int64_t id, const std::string& why) override;

 private:
  Core& c_;
};

class SqlBoardAudit : public virtual BoardAudit {
 public:
  explicit SqlBoardAudit(Core& c) : c_(c) {}
  void set_actor(const Actor& actor) override;
  StateResult<bool> append_audit(const std::string& action, const std::string& target,
                                 const nlohmann::json& detail) override;
  StateResult<std::vector<AuditEntry>> audit_log(const AuditFilter& f) override;
  StateResult<BoardStatus> set_board_status(int version, const std::string& status) override;
  StateResult<std::optional<BoardStatus>> board_status(int version) override;

 private:
  Core& c_;
};

// Applies `migrations` over `conn` and returns the resulting schema version.
// Each migration above the recorded one runs in its own write transaction
// that re-reads the version first (under lock_migrations), so processes
// opening a fresh database at once apply each exactly once; a failing one
// rolls back entirely; a database newer than the list is refused.
StateResult<int> migrate(Conn& conn, std::span<const Migration> migrations);

// A StateDb over `conn`, migrated to the newest of `migrations`.
StateResult<std::unique_ptr<StateDb>> open_sql_state(std::unique_ptr<Conn> conn,
                                                     std::span<const Migration> migrations);

}  // namespace kzoo::store::sql
