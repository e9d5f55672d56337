// Who is who in the state database: users with a role, their bearer tokens
// (stored as hashes only), the append-only audit trail, and what a token has
// used (for per-token limits), and the interface that keeps users and
// tokens (AccountStore); access/ decides what they allow.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/store/state_records.hpp"

namespace kzoo::store {

// maintainer and member are "the project"; an outsider may sign in and
// submit, but its jobs wait held for a maintainer (seed: Who can do what).
enum class Role { maintainer, member, outsider };
std::string_view to_string(Role r);
std::optional<Role> parse_role(std::string_view s);

// person: the user's own; agent: an AI agent working for the user (counted on
// the board, never approves rules); runner: a worker's, issued by a
// maintainer, that only claims and completes jobs.
enum class TokenKind { person, agent, runner };
std::string_view to_string(TokenKind k);
std::optional<TokenKind> parse_token_kind(std::string_view s);

struct User {
  std::string name;  // ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$
  Role role = Role::member;
  UnixMs created_at = 0;
};

// Per-token overrides of the server's default limits; nullopt = the default.
struct TokenLimits {
  std::optional<std::int64_t> submissions_per_hour;
  std::optional<std::int64_t> concurrent_jobs;
  std::optional<std::int64_t> upload_bytes_per_day;
};

struct Token {
  std::string id;  // public part of the token text: 16 lowercase hex digits
  std::string user;
  TokenKind kind = TokenKind::person;
  std::string label;         // the agent's or runner's name; empty for person tokens
  std::string hash;          // 32 bytes: BLAKE2b-256 of the secret part (access/token.hpp)
  UnixMs created_at = 0;
  std::string created_by;    // who issued it (a user, or "local:<account>" on the data directory)
  std::optional<UnixMs> expires_at;
  std::optional<UnixMs> revoked_at;
  std::optional<UnixMs> last_used_at;
  TokenLimits limits;
  Role role = Role::member;  // the owner's role, filled on reads
};

// Who a transition is done for, written into the audit row of the same
// transaction (BoardAudit::set_actor).
struct Actor {
  std::string who = "system";  // a user name, "local:<account>", or "system"
  std::string token_id;        // empty when no token was used
  std::string address;         // the client's IP address as the server saw it (trusted proxies resolved); empty: local
};

struct AuditEntry {
  std::int64_t id = 0;
  UnixMs at = 0;
  std::string who, token_id, action, target;
  nlohmann::json detail;  // object
  std::string address;    // the client's, when the change came over HTTP
};

struct AuditFilter {
  std::int64_t before_id = INT64_MAX;  // paging: ids strictly below, newest first
  int limit = 100;
  std::optional<std::string> who;
};

// What one token used since a point in time (per-token limits).
struct TokenUsage {
  std::int64_t submissions = 0;           // created since
  std::optional<UnixMs> oldest_submission;  // the first of those, for Retry-After
  std::int64_t upload_bytes = 0;          // package bytes since
  std::optional<UnixMs> oldest_upload;
  std::int64_t active_jobs = 0;           // queued or running now, whenever submitted
  std::int64_t comments = 0;              // texts written since: comments, reviews, issues and their comments
  std::optional<UnixMs> oldest_comment;
};

// A job waiting for a maintainer, with what a maintainer needs to decide.
struct HeldJob {
  std::int64_t job_id = 0;
  std::int64_t submission_id = 0;
  std::string kernel_id, submitter_id, summary, sha256;
  UnixMs created_at = 0;
  std::string reason;  // kHeldAdmin or kHeldPullRequest (pulls.hpp)
  std::string route;   // the submission's route; empty: main
};

// Users and their tokens. Only a token's hash is ever stored.
class AccountStore {
 public:
  virtual ~AccountStore() = default;

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
};

}  // namespace kzoo::store
