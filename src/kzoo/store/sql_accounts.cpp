// Users and tokens (accounts.hpp) on the SQL state.
#include <fmt/format.h>

#include "kzoo/store/sql_state.hpp"

namespace kzoo::store::sql {

namespace {
Value opt_int(const std::optional<std::int64_t>& v) { return v ? Value(*v) : Value(nullptr); }
}  // namespace

StateResult<User> SqlAccounts::add_user(const std::string& name, Role role) {
  return c_.guarded([&] {
    if (!valid_name(name))
      refuse(StateError::invalid, fmt::format("user name \"{}\" is invalid: use 1-64 letters, digits, '.', '_' "
                                              "or '-', starting with a letter or digit",
                                              name));
    return c_.write([&] {
      UnixMs now = c_.db().now();
      // Two connections adding the same name race to the primary key; the
      // loser's transaction runs again (sql_conn.hpp) and lands here.
      auto existing = c_.db().query("SELECT role FROM users WHERE name=$1", {name});
      if (!existing.empty())
        refuse(StateError::wrong_state, fmt::format("user \"{}\" exists already (role {})", name, existing[0].text(0)));
      c_.db().exec("INSERT INTO users(name, role, created_at) VALUES ($1,$2,$3)", {name, std::string(to_string(role)), now});
      c_.audit(now, "user.add", "user/" + name, {{"role", to_string(role)}});
      return User{name, role, now};
    });
  });
}

StateResult<User> SqlAccounts::get_user(const std::string& name) {
  return c_.guarded([&] { return c_.load_user(name); });
}

StateResult<std::vector<User>> SqlAccounts::list_users() {
  return c_.guarded([&] {
    std::vector<User> out;
    for (const auto& r : c_.db().query("SELECT name, role, created_at FROM users ORDER BY name")) out.push_back(Core::user_of(r));
    return out;
  });
}

StateResult<Token> SqlAccounts::add_token(const Token& t) {
  return c_.guarded([&] {
    if (!is_hex(t.id, 16)) refuse(StateError::invalid, fmt::format("token id \"{}\" must be 16 lowercase hex digits", t.id));
    if (t.hash.size() != 32) refuse(StateError::invalid, "a token hash is 32 bytes");
    if ((t.kind == TokenKind::person) != t.label.empty())
      refuse(StateError::invalid, t.kind == TokenKind::person ? "a person's token has no agent or runner name"
                                                              : "an agent's or runner's token needs its name");
    if (!t.label.empty() && !valid_name(t.label))
      refuse(StateError::invalid,
             fmt::format("name \"{}\" is invalid: use 1-64 letters, digits, '.', '_' or '-'", t.label));
    return c_.write([&] {
      UnixMs now = c_.db().now();
      User u = c_.load_user(t.user);
      if (t.kind == TokenKind::runner && u.role != Role::maintainer)
        refuse(StateError::invalid, fmt::format("runner tokens are issued to maintainers only; \"{}\" is a {}", t.user,
                                                to_string(u.role)));
      c_.db().exec("INSERT INTO tokens(id, user_name, kind, label, hash, created_at, created_by, expires_at, "
                   "limit_submissions_per_hour, limit_concurrent_jobs, limit_upload_bytes_per_day) "
                   "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)",
                   {t.id, t.user, std::string(to_string(t.kind)), t.label, Blob{t.hash}, now,
                    t.created_by.empty() ? c_.actor.who : t.created_by, opt_int(t.expires_at),
                    opt_int(t.limits.submissions_per_hour), opt_int(t.limits.concurrent_jobs),
                    opt_int(t.limits.upload_bytes_per_day)});
      nlohmann::json d = {{"user", t.user}, {"kind", to_string(t.kind)}};
      if (!t.label.empty()) d["name"] = t.label;
      if (t.expires_at) d["expires_at"] = *t.expires_at;
      c_.audit(now, "token.issue", "token/" + t.id, d);
      return c_.load_token(t.id);
    });
  });
}

StateResult<Token> SqlAccounts::get_token(const std::string& id) {
  return c_.guarded([&] { return c_.load_token(id); });
}

StateResult<std::vector<Token>> SqlAccounts::list_tokens(const std::optional<std::string>& user) {
  return c_.guarded([&] {
    std::vector<Token> out;
    for (const auto& r : c_.db().query(fmt::format("SELECT {} FROM tokens t JOIN users u ON u.name = t.user_name "
                                                   "WHERE (CAST($1 AS TEXT) IS NULL OR t.user_name = $1) ORDER BY t.created_at, t.id",
                                                   Core::kTokenCols),
                                       {user ? Value(*user) : Value(nullptr)}))
      out.push_back(Core::token_of(r));
    return out;
  });
}

StateResult<Token> SqlAccounts::revoke_token(const std::string& id) {
  return c_.guarded([&] {
    return c_.write([&] {
      UnixMs now = c_.db().now();
      Token t = c_.load_token(id, true);
      if (t.revoked_at) refuse(StateError::wrong_state, fmt::format("token {} is revoked already", id));
      c_.db().exec("UPDATE tokens SET revoked_at=$1 WHERE id=$2", {now, id});
      c_.audit(now, "token.revoke", "token/" + id, {{"user", t.user}, {"kind", to_string(t.kind)}});
      return c_.load_token(id);
    });
  });
}

StateResult<bool> SqlAccounts::touch_token(const std::string& id) {
  return c_.guarded([&] {
    UnixMs now = c_.db().now();
    return c_.db().exec("UPDATE tokens SET last_used_at=$1 WHERE id=$2 AND (last_used_at IS NULL OR last_used_at < $3)",
                        {now, id, now - 60000}) == 1;
  });
}

StateResult<TokenUsage> SqlAccounts::token_usage(const std::string& id, UnixMs since) {
  return c_.guarded([&] { return c_.usage(id, since); });
}

}  // namespace kzoo::store::sql
