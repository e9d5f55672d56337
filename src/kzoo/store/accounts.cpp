#include "kzoo/store/accounts.hpp"

namespace kzoo::store {

std::string_view to_string(Role r) {
  switch (r) {
    case Role::maintainer: return "maintainer";
    case Role::member: return "member";
    case Role::outsider: return "outsider";
  }
  return "outsider";
}

std::optional<Role> parse_role(std::string_view s) {
  for (Role r : {Role::maintainer, Role::member, Role::outsider})
    if (to_string(r) == s) return r;
  return std::nullopt;
}

std::string_view to_string(TokenKind k) {
  switch (k) {
    case TokenKind::person: return "person";
    case TokenKind::agent: return "agent";
    case TokenKind::runner: return "runner";
  }
  return "person";
}

std::optional<TokenKind> parse_token_kind(std::string_view s) {
  for (TokenKind k : {TokenKind::person, TokenKind::agent, TokenKind::runner})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

}  // namespace kzoo::store
