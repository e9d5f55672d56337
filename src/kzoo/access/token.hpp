// Bearer tokens. The text a client sends is
//
//   kzoo_<id>_<secret>      id: 16 lowercase hex digits (8 random bytes, public:
//                           it names the token in listings and the audit trail);
//                           secret: 32 random bytes, base64url without padding
//
// 65 characters in all. Only BLAKE2b-256("kzoo-token-v1" | id | secret) is stored
// (store::Token::hash): a copy of the database gives no usable token, and a
// stored hash cannot be moved onto another id. The secret has 256 bits of
// entropy, so a fast hash suffices (no password stretching). Verification
// hashes what was presented and compares it with the stored hash in constant
// time (sodium_memcmp); the id lookup before it is not secret.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kzoo/util/result.hpp"

namespace kzoo::access {

struct NewToken {
  std::string id;
  std::string text;  // shown once to whoever asked for it, never stored
  std::string hash;  // 32 bytes, for store::Token::hash
};

// Initialises libsodium (idempotent, thread-safe); fails only when the
// system's random source is unusable.
Result<void> init_crypto();

// A fresh token from the system's random source.
Result<NewToken> new_token();

struct TokenText {
  std::string id;
  std::string secret;  // the decoded 32 bytes
};

// The parts of a token text; nullopt when it is not one (wrong prefix,
// length or alphabet). Never throws, whatever the input.
std::optional<TokenText> parse_token(std::string_view text);

std::string token_hash(const std::string& id, const std::string& secret);

// True when `presented` hashes to `stored_hash` (constant time in the hash).
bool token_matches(const TokenText& presented, const std::string& stored_hash);

// "Bearer <token>" -> the token text; nullopt when the header is absent or
// not of that form.
std::optional<std::string> bearer(std::string_view authorization_header);

// "Basic base64(user:token)" -> the token text (the password; the user name
// is ignored): git and its credential helpers send a token this way, the
// convention of the big forges. nullopt when the header is not of that form.
std::optional<std::string> basic_password(std::string_view authorization_header);

}  // namespace kzoo::access
