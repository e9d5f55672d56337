#include "kzoo/runner/signature.hpp"

#include <stdexcept>

#include <openssl/crypto.h>
#include <openssl/evp.h>

namespace kzoo::runner {
namespace {

// [begin, end) of the last non-empty line.
std::pair<size_t, size_t> last_line(std::string_view s) {
  size_t end = s.size();
  while (end > 0 && (s[end - 1] == '\n' || s[end - 1] == '\r')) --end;
  size_t begin = s.rfind('\n', end == 0 ? 0 : end - 1);
  begin = (begin == std::string_view::npos || end == 0) ? 0 : begin + 1;
  return {begin, end};
}

}  // namespace

std::string to_hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t len = 0;
  char digest[] = "SHA256";
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, digest, nullptr, key.data(), key.size(),
                reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, sizeof mac, &len) == nullptr)
    throw std::runtime_error("OpenSSL HMAC-SHA256 failed");  // a broken libcrypto: cannot go on
  return to_hex(std::string_view(reinterpret_cast<const char*>(mac), len));
}

Result<void> verify_judge_signature(std::string_view key, std::string_view stdout_bytes,
                                    std::string_view verdict) {
  auto [b, e] = last_line(verdict);
  std::string_view line = verdict.substr(b, e - b);
  if (line.substr(0, kSignaturePrefix.size()) != kSignaturePrefix)
    return fail("the judge's signature line is missing (its verdict channel, " + std::string(kVerdictFdVariable) +
                ", must end with '" + std::string(kSignaturePrefix) +
                "<hex>'): the result was not produced by the judge, or the judge was killed before signing");
  std::string_view given = line.substr(kSignaturePrefix.size());
  while (!given.empty() && (given.back() == ' ' || given.back() == '\t')) given.remove_suffix(1);
  std::string expected = hmac_sha256_hex(key, stdout_bytes);
  if (given.size() != expected.size() || CRYPTO_memcmp(given.data(), expected.data(), expected.size()) != 0)
    return fail("the judge's signature does not match the output received: the result was forged or altered");
  return ok();
}

}  // namespace kzoo::runner
