// The service's state: submissions, the jobs that grade them, and the workers'
// leases on those jobs (DESIGN §4). One interface; SQLite implements it today
// (sqlite_state_db.hpp), PostgreSQL can implement it later with the same
// contract (claim with FOR UPDATE SKIP LOCKED, LIBNOTES).
//
// State machine (one enum for both; a job is never `received`):
//
//   submission: received ─enqueue─► queued ─claim─► running ─complete─► accepted | rejected | failed
//               received ─reject──► rejected            running ─lease expiry─► queued (attempts left)
//               received | queued | running ─cancel─► cancelled          └────► failed (none left)
//   job:        created queued by enqueue, then follows its submission:
//               queued ─claim─► running ─complete─► accepted | rejected | failed
//               running ─lease expiry─► queued | failed;  queued | running ─cancel─► cancelled
//
// Every transition is one transaction that reads the current state and
// refuses (StateError::wrong_state, naming both states) when it is not one the
// transition starts from: nothing is ever a silent no-op. A submission has at
// most one job at a time. `attempts` counts claims: a job whose lease expires
// after its max_attempts-th claim fails instead of being queued again.
//
// Leases: claim_job hands the oldest queued job to one worker until
// lease_expires_at; heartbeat extends it; only the current holder may extend
// or complete it. requeue_expired takes jobs back from vanished workers, so a
// late completion from such a worker is refused (not_holder or wrong_state)
// and a job is never completed twice with two outcomes.
//
// Threads: an implementation object is one database connection and is NOT
// thread-safe; give each thread (each worker, each server request thread) its
// own object opened on the same database.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "kzoo/store/accounts.hpp"
#include "kzoo/store/pulls.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::store {


enum class State { received, queued, running, accepted, rejected, failed, cancelled };

std::string_view to_string(State s);
std::optional<State> parse_state(std::string_view s);
bool is_final(State s);  // accepted, rejected, failed, cancelled

// The three ways a worker may finish a job.
enum class Outcome { accepted, rejected, failed };
State to_state(Outcome o);

struct StateError {
  enum Kind {
    not_found,    // no submission / job with that id
    wrong_state,  // the transition does not start from the current state
    not_holder,   // the worker does not hold the job's lease
    invalid,      // a malformed argument (bad sha256, empty worker id...)
    busy,         // the database stayed locked past the busy timeout: retry
    io,           // the database failed (disk, corruption, schema)
  };
  Kind kind;
  std::string message;  // names the entity, the states or values, and what to do
};

template <class T>
using StateResult = tl::expected<T, StateError>;

std::string_view to_string(StateError::Kind k);

struct NewSubmission {
  std::string kernel_id;
  std::string submitter_id;
  std::string summary;       // optimization_summary; may be empty
  std::string package_path;  // where the server stored the uploaded tarball
  std::string sha256;        // of the tarball, 64 lowercase hex digits
  std::string token_id;      // the token it came with (per-token limits); empty: none
  std::int64_t package_bytes = 0;  // the upload's size (upload bytes per day)
  std::string route;         // the route it targets (board/: branch routes/<route>); empty: main
  std::string kind = "submission";  // "submission" | "baseline" (a board's eager baseline measurement)
};

struct Submission {
  std::int64_t id = 0;
  std::string kernel_id, submitter_id, summary, package_path, sha256;
  UnixMs created_at = 0;
  UnixMs updated_at = 0;
  State state = State::received;
  nlohmann::json verdict;            // null until decided
  std::vector<std::string> reasons;  // why rejected / failed / cancelled
  std::string accepted_commit;       // kernel_data commit of an accepted submission, else empty
                                     // (a baseline: the commit whose source it measured)
  std::string token_id;              // the token it came with; empty: none
  std::int64_t package_bytes = 0;
  std::string route;                 // empty: main
  std::string kind = "submission";   // "submission" | "baseline"
};

struct BoardStatus {
  int version = 0;
  std::string status;
  std::string set_by;
  UnixMs set_at = 0;
};

// A route: a named line of work, the branch routes/<name> in kernel_data,
// started (and owned) by one submitter.
struct Route {
  std::string name;
  std::string owner;  // the submitter id that started it
  UnixMs created_at = 0;
};

struct Job {
  std::int64_t id = 0;
  std::int64_t submission_id = 0;
  State state = State::queued;
  int attempts = 0;      // times claimed
  int max_attempts = 0;
  std::string lease_owner;  // current holder while running; last holder afterwards; empty if never claimed
  std::optional<UnixMs> lease_expires_at;  // set only while running
  std::optional<UnixMs> heartbeat_at;
  nlohmann::json result;  // the worker's result document; null until completed
  UnixMs created_at = 0;
  std::optional<UnixMs> started_at;  // last claim
  std::optional<UnixMs> finished_at;
  // A queued job that waits for a maintainer (Slurm's JobHeldAdmin): never
  // claimed until release_job. Only meaningful while queued.
  bool held = false;
  std::string released_by;  // who released it; empty if never held or not yet released
  std::optional<UnixMs> released_at;
  // Why it waits while held: kHeldAdmin (for a maintainer) or kHeldPullRequest
  // (for its route's owner to merge it); empty if never held.
  std::string hold_reason;
};

// What a worker hands back when it finishes a job.
struct Completion {
  Outcome outcome = Outcome::failed;
  nlohmann::json result;             // the job's result (benchmark output, evidence commit...)
  nlohmann::json verdict;            // the submission's verdict
  std::vector<std::string> reasons;  // human reasons, shown to the submitter
  std::string accepted_commit;       // required for Outcome::accepted, else empty
};

struct Requeued {
  std::int64_t job_id = 0;
  std::string lost_owner;  // the worker whose lease expired
  State now = State::queued;  // queued, or failed when attempts ran out
};

struct SubmissionFilter {
  std::optional<std::string> kernel_id;
  std::optional<std::string> submitter_id;
  std::optional<State> state;
  std::optional<std::string> route;
  std::optional<std::string> kind;
  std::int64_t before_id = INT64_MAX;  // paging: ids strictly below, newest first
  int limit = 100;
};

class StateDb {
 public:
  virtual ~StateDb() = default;

  virtual StateResult<Submission> create_submission(const NewSubmission& s) = 0;
  // received → queued, and creates its job (queued; `held` when it must wait
  // for a maintainer's release_job before any worker may claim it). Returns the job.
  virtual StateResult<Job> enqueue(std::int64_t submission_id, int max_attempts = 3, bool held = false) = 0;
  // received → rejected (validation failed before any job ran).
  virtual StateResult<Submission> reject(std::int64_t submission_id, const std::vector<std::string>& reasons,
                                         const nlohmann::json& verdict) = 0;
  // received | queued | running → cancelled, the active job with it.
  virtual StateResult<Submission> cancel(std::int64_t submission_id, const std::string& reason) = 0;

  // The oldest queued job that is not held, now running under `worker_id`
  // until now + lease. nullopt when nothing is queued.
  virtual StateResult<std::optional<Job>> claim_job(const std::string& worker_id, int lease_seconds) = 0;
  // Extends the lease to now + lease_seconds; only for the holder of a running job.
  virtual StateResult<Job> heartbeat(std::int64_t job_id, const std::string& worker_id, int lease_seconds) = 0;
  // running → outcome, for the job and its submission; only for the holder.
  virtual StateResult<Job> complete(std::int64_t job_id, const std::string& worker_id, const Completion& c) = 0;
  // The holder hands a running job back after an infrastructure failure (the
  // judge crashed, the device failed): running → queued while attempts remain,
  // so that any worker may claim it again, else → failed with `reasons`, the
  // submission with it. `result` (the failed attempt's evidence) is kept on the
  // job either way. Only for the holder.
  virtual StateResult<Job> retry(std::int64_t job_id, const std::string& worker_id,
                                 const std::vector<std::string>& reasons, const nlohmann::json& result) = 0;
  // Every running job whose lease expired at or before `now`.
  virtual StateResult<std::vector<Requeued>> requeue_expired(UnixMs now) = 0;

  virtual StateResult<Submission> get_submission(std::int64_t id) = 0;
  virtual StateResult<Job> get_job(std::int64_t id) = 0;
  virtual StateResult<std::vector<Job>> jobs_of(std::int64_t submission_id) = 0;
  virtual StateResult<std::vector<Submission>> list_submissions(const SubmissionFilter& f) = 0;
  virtual StateResult<std::int64_t> count_jobs(State s) = 0;

  // Routes. ensure_route creates `name` owned by `owner` unless it exists
  // (then it is returned as it is: the first submitter keeps it).
  virtual StateResult<Route> ensure_route(const std::string& name, const std::string& owner) = 0;
  virtual StateResult<std::vector<Route>> list_routes() = 0;

  // The schema version the database is at after open.
  virtual int schema_version() = 0;

  // --- Holds -------------------------------------------------------------
  // A held queued job becomes claimable; wrong_state unless queued and held.
  virtual StateResult<Job> release_job(std::int64_t job_id) = 0;
  // Held jobs, oldest first.
  virtual StateResult<std::vector<HeldJob>> held_jobs(int limit = 100) = 0;

  // --- Pull requests (pulls.hpp) -----------------------------------------
  // Queues received submission `submission_id` as a pull request to its route
  // (none: main): its job held (kHeldPullRequest) until decide_pull.
  virtual StateResult<Job> open_pull(std::int64_t submission_id, int max_attempts = 3) = 0;
  // merge: the job becomes claimable, or, when `then_admin` (an outsider's
  // pull request merged by someone who cannot release their jobs), waits on
  // for a maintainer as kHeldAdmin. close: the submission is cancelled with
  // `why`. Only an open pull request; wrong_state otherwise.
  virtual StateResult<Pull> decide_pull(std::int64_t submission_id, bool merge, bool then_admin,
                                        const std::string& why) = 0;
  virtual StateResult<Pull> get_pull(std::int64_t submission_id) = 0;
  // Newest first; route and state narrow it.
  virtual StateResult<std::vector<Pull>> list_pulls(const std::optional<std::string>& route,
                                                    const std::optional<PullState>& state, int limit = 100) = 0;
  // A comment or review by the current actor on an existing pull request, open or not.
  virtual StateResult<Comment> add_comment(std::int64_t submission_id, ReviewKind kind, const std::string& body) = 0;
  // Oldest first.
  virtual StateResult<std::vector<Comment>> comments(std::int64_t submission_id) = 0;

  // --- Boards --------------------------------------------------------------
  // A board's status as a maintainer set it (active, saturated, superseded,
  // flawed), over what its rules file says; by the current actor, audited.
  virtual StateResult<BoardStatus> set_board_status(int version, const std::string& status) = 0;
  // nullopt: never set (the rules file's stands).
  virtual StateResult<std::optional<BoardStatus>> board_status(int version) = 0;

  // --- Accounts (accounts.hpp) ------------------------------------------
  // Audit: every transition below and above on this connection is written to
  // the append-only audit table, in its own transaction, as done by `actor`
  // (default {"system", ""}) until the next set_actor. Server request threads
  // set it per request; a pooled connection is reset to the default.
  virtual void set_actor(const Actor& actor) = 0;
  virtual StateResult<User> add_user(const std::string& name, Role role) = 0;
  virtual StateResult<User> get_user(const std::string& name) = 0;
  virtual StateResult<std::vector<User>> list_users() = 0;
  // Stores a token whose hash the caller computed (access/token.hpp); the
  // user must exist; a runner token's user must be a maintainer.
  virtual StateResult<Token> add_token(const Token& t) = 0;
  // The token and its owner's role; not_found when unknown. Revoked and
  // expired tokens are returned as they are: the caller decides.
  virtual StateResult<Token> get_token(const std::string& id) = 0;
  virtual StateResult<std::vector<Token>> list_tokens(const std::optional<std::string>& user) = 0;
  // Sets revoked_at (once: wrong_state when already revoked).
  virtual StateResult<Token> revoke_token(const std::string& id) = 0;
  // Records a use (last_used_at), at most once a minute per token (true when
  // written); not audited.
  virtual StateResult<bool> touch_token(const std::string& id) = 0;
  // What token `id` used since `since` (see TokenUsage).
  virtual StateResult<TokenUsage> token_usage(const std::string& id, UnixMs since) = 0;
  // An audit row for a change made outside this database (a commit to the
  // repository, a moved tag), as done by the current actor.
  virtual StateResult<bool> append_audit(const std::string& action, const std::string& target,
                                         const nlohmann::json& detail) = 0;
  // Newest first.
  virtual StateResult<std::vector<AuditEntry>> audit_log(const AuditFilter& f) = 0;
  // The database's clock (leases and expiry are measured by it).
  virtual UnixMs now() = 0;
};

}  // namespace kzoo::store
