#include "kzoo/access/token.hpp"

#include <cctype>

#include <sodium.h>

namespace kzoo::access {
namespace {

constexpr std::string_view kPrefix = "kzoo_";
constexpr std::size_t kIdHex = 16, kSecretBytes = 32;
constexpr std::size_t kSecretB64 = 43;  // 32 bytes, base64url, no padding
constexpr std::string_view kDomain = "kzoo-token-v1";

bool is_lower_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool is_b64url(std::string_view s) {
  for (char c : s)
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
      return false;
  return true;
}

}  // namespace

Result<void> init_crypto() {
  if (sodium_init() < 0) return fail("libsodium could not initialise (no usable random source on this system)");
  return ok();
}

Result<NewToken> new_token() {
  if (auto r = init_crypto(); !r) return tl::unexpected(r.error());
  unsigned char id[kIdHex / 2], secret[kSecretBytes];
  randombytes_buf(id, sizeof id);
  randombytes_buf(secret, sizeof secret);
  char id_hex[kIdHex + 1];
  sodium_bin2hex(id_hex, sizeof id_hex, id, sizeof id);
  char b64[sodium_base64_ENCODED_LEN(kSecretBytes, sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
  sodium_bin2base64(b64, sizeof b64, secret, sizeof secret, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  NewToken t;
  t.id = id_hex;
  t.text = std::string(kPrefix) + t.id + "_" + b64;
  t.hash = token_hash(t.id, std::string(reinterpret_cast<const char*>(secret), sizeof secret));
  sodium_memzero(secret, sizeof secret);
  return t;
}

std::optional<TokenText> parse_token(std::string_view text) {
  if (text.size() != kPrefix.size() + kIdHex + 1 + kSecretB64) return std::nullopt;
  if (text.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view id = text.substr(kPrefix.size(), kIdHex);
  if (!is_lower_hex(id) || text[kPrefix.size() + kIdHex] != '_') return std::nullopt;
  std::string_view b64 = text.substr(kPrefix.size() + kIdHex + 1);
  if (!is_b64url(b64)) return std::nullopt;
  if (auto r = init_crypto(); !r) return std::nullopt;
  unsigned char secret[kSecretBytes];
  std::size_t n = 0;
  if (sodium_base642bin(secret, sizeof secret, b64.data(), b64.size(), nullptr, &n, nullptr,
                        sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
      n != kSecretBytes)
    return std::nullopt;
  TokenText t{std::string(id), std::string(reinterpret_cast<const char*>(secret), n)};
  sodium_memzero(secret, sizeof secret);
  return t;
}

std::string token_hash(const std::string& id, const std::string& secret) {
  (void)init_crypto();
  crypto_generichash_state st;
  crypto_generichash_init(&st, nullptr, 0, 32);
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(kDomain.data()), kDomain.size());
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(id.data()), id.size());
  crypto_generichash_update(&st, reinterpret_cast<const unsigned char*>(secret.data()), secret.size());
  unsigned char out[32];
  crypto_generichash_final(&st, out, sizeof out);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

bool token_matches(const TokenText& presented, const std::string& stored_hash) {
  if (stored_hash.size() != 32) return false;
  std::string h = token_hash(presented.id, presented.secret);
  return sodium_memcmp(h.data(), stored_hash.data(), 32) == 0;
}

std::optional<std::string> bearer(std::string_view h) {
  constexpr std::string_view kScheme = "Bearer ";
  if (h.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i)  // the scheme is case-insensitive (RFC 9110)
    if (std::tolower(static_cast<unsigned char>(h[i])) != std::tolower(static_cast<unsigned char>(kScheme[i])))
      return std::nullopt;
  std::string_view t = h.substr(kScheme.size());
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  if (t.empty()) return std::nullopt;
  return std::string(t);
}

std::optional<std::string> basic_password(std::string_view h) {
  constexpr std::string_view kScheme = "Basic ";
  if (h.size() <= kScheme.size() || h.size() > 4096) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(h[i])) != std::tolower(static_cast<unsigned char>(kScheme[i])))
      return std::nullopt;
  std::string_view b = h.substr(kScheme.size());
  while (!b.empty() && b.front() == ' ') b.remove_prefix(1);
  while (!b.empty() && b.back() == ' ') b.remove_suffix(1);
  // Standard base64 (RFC 7617), padding optional.
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (char c : b) {
    int v = c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
            : c == '+' ? 62 : c == '/' ? 63 : c == '=' ? -2 : -1;
    if (v == -1) return std::nullopt;
    if (v == -2) break;
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  auto colon = out.find(':');
  if (colon == std::string::npos || colon + 1 >= out.size()) return std::nullopt;
  return out.substr(colon + 1);
}

}  // namespace kzoo::access
