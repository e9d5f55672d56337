// libFuzzer: the token reader and the Authorization header reader never
// crash, and what parse_token accepts is exactly one token: its id is 16
// lowercase hex digits, its secret 32 bytes, and writing them back gives the
// same text (so no two texts name one token).
#include <cstdint>
#include <cstdlib>
#include <string>

#include <sodium.h>

#include "kzoo/access/token.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto t = kzoo::access::parse_token(text)) {
    if (t->id.size() != 16 || t->secret.size() != 32) std::abort();
    char b64[sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
    sodium_bin2base64(b64, sizeof b64, reinterpret_cast<const unsigned char*>(t->secret.data()), 32,
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    if ("kzoo_" + t->id + "_" + b64 != text) std::abort();
    if (!kzoo::access::token_matches(*t, kzoo::access::token_hash(t->id, t->secret))) std::abort();
  }
  if (auto b = kzoo::access::bearer(text)) {
    if (b->empty() || b->front() == ' ' || b->back() == ' ') std::abort();
    if (text.find(*b) == std::string_view::npos) std::abort();
  }
  return 0;
}
