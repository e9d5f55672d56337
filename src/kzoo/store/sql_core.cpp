// What every concern of the SQL state shares (sql_state.hpp): reading rows
// into records, the audit row, and the moves of a submission with its job.
#include <fmt/format.h>

#include "kzoo/store/sql_state.hpp"

namespace kzoo::store::sql {

void refuse(StateError::Kind k, std::string msg) { throw Refusal{StateError{k, std::move(msg)}}; }

const char* const Core::kSubCols =
    "id, kernel_id, submitter_id, summary, package_path, sha256, created_at, updated_at, state, verdict, reasons, "
    "accepted_commit, token_id, package_bytes, route, kind, received_by";
const char* const Core::kJobCols =
    "id, submission_id, state, attempts, max_attempts, lease_owner, lease_expires_at, heartbeat_at, result, "
    "created_at, started_at, finished_at, held, released_by, released_at, hold_reason, requires_cc, passed_over, kind, "
    "requires_gpus";
const char* const Core::kTokenCols =
    "t.id, t.user_name, t.kind, t.label, t.hash, t.created_at, t.created_by, t.expires_at, t.revoked_at, "
    "t.last_used_at, t.limit_submissions_per_hour, t.limit_concurrent_jobs, t.limit_upload_bytes_per_day, u.role";
const char* const Core::kPullCols = "submission_id, route, author, state, created_at, decided_by, decided_at";

std::string Core::qualified_job_cols() {
  std::string out, cols = kJobCols;
  for (std::size_t at = 0; at < cols.size();) {
    std::size_t comma = cols.find(", ", at);
    if (comma == std::string::npos) comma = cols.size();
    out += (out.empty() ? "j." : ", j.") + cols.substr(at, comma - at);
    at = comma + 2;
  }
  return out;
}

namespace {

State state_of(const std::string& s) {
  auto st = parse_state(s);
  if (!st) refuse(StateError::io, fmt::format("state database holds unknown state \"{}\"", s));
  return *st;
}

Role role_of(const std::string& s) {
  auto r = parse_role(s);
  if (!r) refuse(StateError::io, fmt::format("state database holds unknown role \"{}\"", s));
  return *r;
}

}  // namespace

std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_hex(std::string_view s, std::size_t n) {
  if (s.size() != n) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool valid_name(std::string_view n) {
  if (n.empty() || n.size() > 64) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (!alnum(n[0])) return false;
  for (char c : n)
    if (!alnum(c) && c != '.' && c != '_' && c != '-') return false;
  return true;
}

StateError Core::failure(const EngineFailure& e) const {
  if (e.kind == EngineFailure::io) return StateError{StateError::io, fmt::format("state database {}: {}", conn_->describe(), e.message)};
  return StateError{StateError::busy, fmt::format("state database {} {}; retry", conn_->describe(), e.message)};
}

StateError Core::malformed_json(const std::string& what) const {
  return StateError{StateError::io, fmt::format("state database {} holds malformed JSON: {}", conn_->describe(), what)};
}

Pull Core::pull_of(const Row& r) {
  Pull p;
  p.submission_id = r.i64(0);
  p.route = r.text(1);
  p.author = r.text(2);
  p.state = parse_pull_state(r.text(3)).value_or(PullState::open);
  p.created_at = r.i64(4);
  p.decided_by = r.text(5);
  p.decided_at = r.opt(6);
  return p;
}

User Core::user_of(const Row& r) { return User{r.text(0), role_of(r.text(1)), r.i64(2)}; }

Submission Core::submission_of(const Row& r) {
  Submission s;
  s.id = r.i64(0);
  s.kernel_id = r.text(1);
  s.submitter_id = r.text(2);
  s.summary = r.text(3);
  s.package_path = r.text(4);
  s.sha256 = r.text(5);
  s.created_at = r.i64(6);
  s.updated_at = r.i64(7);
  s.state = state_of(r.text(8));
  if (!r.null(9)) s.verdict = nlohmann::json::parse(r.text(9));
  s.reasons = nlohmann::json::parse(r.text(10)).get<std::vector<std::string>>();
  s.accepted_commit = r.text(11);
  s.token_id = r.text(12);
  s.package_bytes = r.i64(13);
  s.route = r.text(14);
  s.kind = r.text(15);
  s.received_by = r.text(16);
  return s;
}

Job Core::job_of(const Row& r) {
  Job j;
  j.id = r.i64(0);
  j.submission_id = r.opt(1).value_or(0);  // NULL for a batch job
  j.state = state_of(r.text(2));
  j.attempts = static_cast<int>(r.i64(3));
  j.max_attempts = static_cast<int>(r.i64(4));
  j.lease_owner = r.text(5);
  j.lease_expires_at = r.opt(6);
  j.heartbeat_at = r.opt(7);
  if (!r.null(8)) j.result = nlohmann::json::parse(r.text(8));
  j.created_at = r.i64(9);
  j.started_at = r.opt(10);
  j.finished_at = r.opt(11);
  j.held = r.i64(12) != 0;
  j.released_by = r.text(13);
  j.released_at = r.opt(14);
  j.hold_reason = r.text(15);
  j.requires_cc = static_cast<int>(r.i64(16));
  j.passed_over = r.text(17);
  j.kind = r.text(18);
  j.requires_gpus = static_cast<int>(r.i64(19));
  return j;
}

Token Core::token_of(const Row& r) {
  Token t;
  t.id = r.text(0);
  t.user = r.text(1);
  auto k = parse_token_kind(r.text(2));
  if (!k) refuse(StateError::io, fmt::format("state database holds unknown token kind \"{}\"", r.text(2)));
  t.kind = *k;
  t.label = r.text(3);
  t.hash = r.blob(4);
  t.created_at = r.i64(5);
  t.created_by = r.text(6);
  t.expires_at = r.opt(7);
  t.revoked_at = r.opt(8);
  t.last_used_at = r.opt(9);
  t.limits.submissions_per_hour = r.opt(10);
  t.limits.concurrent_jobs = r.opt(11);
  t.limits.upload_bytes_per_day = r.opt(12);
  t.role = role_of(r.text(13));
  return t;
}

void Core::audit(UnixMs now, std::string_view action, const std::string& target, const nlohmann::json& detail) {
  conn_->exec("INSERT INTO audit(at, who, token_id, action, target, detail, address) VALUES ($1,$2,$3,$4,$5,$6,$7)",
              {now, actor.who, actor.token_id, std::string(action), target,
               json_text(detail.is_object() ? detail : nlohmann::json::object()), actor.address});
}

Submission Core::load_submission(std::int64_t id, bool lock) {
  auto rows = conn_->query(fmt::format("SELECT {} FROM submissions WHERE id=$1{}", kSubCols, lock ? conn_->lock_rows() : ""),
                           {id});
  if (rows.empty()) refuse(StateError::not_found, fmt::format("submission {} does not exist", id));
  return submission_of(rows.front());
}

Submission Core::expect_submission(std::int64_t id, std::initializer_list<State> from, std::string_view action) {
  Submission s = load_submission(id, true);
  for (State f : from)
    if (s.state == f) return s;
  std::string allowed;
  for (State f : from) allowed += (allowed.empty() ? "" : " or ") + std::string(to_string(f));
  refuse(StateError::wrong_state, fmt::format("cannot {} submission {}: it is {}, and {} starts only from {}", action,
                                              id, to_string(s.state), action, allowed));
}

std::optional<Job> Core::find_job(std::int64_t id, bool lock) {
  auto rows = conn_->query(fmt::format("SELECT {} FROM jobs WHERE id=$1{}", kJobCols, lock ? conn_->lock_rows() : ""), {id});
  if (rows.empty()) return std::nullopt;
  return job_of(rows.front());
}

Job Core::expect_holder(std::int64_t job_id, const std::string& worker_id, std::string_view action) {
  auto j = find_job(job_id, true);
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

Job Core::queue_job(std::int64_t submission_id, int max_attempts, std::string_view hold_reason, UnixMs now,
                     const JobNeeds& needs) {
  if (max_attempts < 1 || max_attempts > 100)
    refuse(StateError::invalid, fmt::format("max_attempts {} is out of range: give 1 to 100", max_attempts));
  if (needs.compute_capability < 0 || needs.compute_capability > 1000)
    refuse(StateError::invalid, fmt::format("required compute capability {} is out of range: give 0 (none) to 1000 "
                                            "(tenths: 90 is 9.0)",
                                            needs.compute_capability));
  // A graded job runs on at least one GPU, the judge's.
  if (needs.gpus < 1 || needs.gpus > kMaxNodeGpus)
    refuse(StateError::invalid, fmt::format("required GPUs {} is out of range: give 1 to {} GPUs of one node (the "
                                            "task's environment.gpus)",
                                            needs.gpus, kMaxNodeGpus));
  conn_->exec("UPDATE submissions SET state='queued', updated_at=$1 WHERE id=$2", {now, submission_id});
  auto rows = conn_->query(fmt::format("INSERT INTO jobs(submission_id, state, max_attempts, created_at, held, hold_reason, "
                                       "requires_cc, requires_gpus) VALUES ($1, 'queued', $2, $3, $4, $5, $6, $7) "
                                       "RETURNING {}",
                                       kJobCols),
                           {submission_id, std::int64_t{max_attempts}, now, std::int64_t{hold_reason.empty() ? 0 : 1},
                            std::string(hold_reason), std::int64_t{needs.compute_capability},
                            std::int64_t{needs.gpus}});
  return job_of(rows.at(0));
}

void Core::move_submission(std::int64_t id, State from, State to, UnixMs now) {
  if (conn_->exec("UPDATE submissions SET state=$1, updated_at=$2 WHERE id=$3 AND state=$4",
                  {std::string(to_string(to)), now, id, std::string(to_string(from))}) != 1)
    refuse(StateError::io, fmt::format("submission {} is not {} although its job is moving {} -> {}: the state "
                                       "database is inconsistent; nothing was changed",
                                       id, to_string(from), to_string(from), to_string(to)));
}

void Core::finish_submission(std::int64_t id, State to, const nlohmann::json& verdict,
                             const std::vector<std::string>& reasons, const std::string& commit, UnixMs now) {
  conn_->exec("UPDATE submissions SET state=$1, verdict=$2, reasons=$3, accepted_commit=$4, updated_at=$5 WHERE id=$6",
              {std::string(to_string(to)), verdict.is_null() ? Value(nullptr) : Value(json_text(verdict)),
               json_text(reasons), commit, now, id});
}

void Core::cancel_active_job(std::int64_t submission_id, UnixMs now) {
  conn_->exec("UPDATE jobs SET state='cancelled', finished_at=$1, lease_expires_at=NULL, held=0 "
              "WHERE submission_id=$2 AND state IN ('queued','running')",
              {now, submission_id});
}

Pull Core::load_pull(std::int64_t submission_id, bool lock) {
  auto rows = conn_->query(
      fmt::format("SELECT {} FROM pulls WHERE submission_id=$1{}", kPullCols, lock ? conn_->lock_rows() : ""),
      {submission_id});
  if (rows.empty())
    refuse(StateError::not_found, fmt::format("there is no pull request {} (a pull request is named by its submission: "
                                              "GET /api/pulls lists them)",
                                              submission_id));
  return pull_of(rows.front());
}

User Core::load_user(const std::string& name) {
  auto rows = conn_->query("SELECT name, role, created_at FROM users WHERE name=$1", {name});
  if (rows.empty())
    refuse(StateError::not_found,
           fmt::format("user \"{}\" does not exist: add it with `kzoo user add {} --role member`", name, name));
  return user_of(rows.front());
}

Token Core::load_token(const std::string& id, bool lock) {
  // FOR UPDATE cannot lock the nullable side of a join, and none is outer here; the token row is the one changed.
  auto rows = conn_->query(fmt::format("SELECT {} FROM tokens t JOIN users u ON u.name = t.user_name WHERE t.id=$1{}",
                                       kTokenCols, lock ? conn_->lock_rows() : ""),
                           {id});
  if (rows.empty()) refuse(StateError::not_found, fmt::format("token {} does not exist", id));
  return token_of(rows.front());
}

TokenUsage Core::usage(const std::string& id, UnixMs since) {
  TokenUsage u;
  // sum() of BIGINT is NUMERIC on PostgreSQL: cast back.
  auto s = conn_->query("SELECT count(*), min(created_at), CAST(COALESCE(sum(package_bytes), 0) AS BIGINT), "
                         "min(CASE WHEN package_bytes > 0 THEN created_at END) "
                         "FROM submissions WHERE token_id=$1 AND created_at > $2",
                         {id, since}).at(0);
  u.submissions = s.i64(0);
  u.oldest_submission = s.opt(1);
  u.upload_bytes = s.i64(2);
  u.oldest_upload = s.opt(3);
  // A token's batch jobs count as its graded ones do.
  // Two counts, each along its own index (an OR across the joins would scan every job).
  u.active_jobs = conn_->query("SELECT (SELECT count(*) FROM jobs j JOIN submissions s ON s.id = j.submission_id "
                                "WHERE s.token_id=$1 AND j.state IN ('queued','running')) + "
                                "(SELECT count(*) FROM jobs j JOIN batch_jobs b ON b.job_id = j.id "
                                "WHERE b.token_id=$1 AND j.state IN ('queued','running'))",
                                {id}).at(0).i64(0);
  // Everything a token writes for others to read counts against one limit:
  // pull-request comments and reviews, issues, and issues' comments.
  auto c = conn_->query("SELECT CAST(COALESCE(sum(n), 0) AS BIGINT), min(oldest) FROM ("
                        " SELECT count(*) AS n, min(at) AS oldest FROM comments WHERE token_id=$1 AND at > $2"
                        " UNION ALL SELECT count(*), min(created_at) FROM issues WHERE token_id=$1 AND created_at > $2"
                        " UNION ALL SELECT count(*), min(at) FROM issue_comments WHERE token_id=$1 AND at > $2) AS w",
                        {id, since}).at(0);
  u.comments = c.i64(0);
  u.oldest_comment = c.opt(1);
  return u;
}

}  // namespace kzoo::store::sql
