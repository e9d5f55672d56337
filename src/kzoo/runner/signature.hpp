// The judge's signature: the channel the submission cannot write (DESIGN §3.6).
// The judge, which alone holds the run's secret seed, prints its document on
// stdout and then, as the LAST line of stderr,
//     kzoo-judge-signature: <hex HMAC-SHA256(seed bytes, stdout bytes)>
// Submitted code shares stdout/stderr with the judge and can print anything,
// but without the seed it cannot produce a matching HMAC for the bytes we
// actually received. The key is the raw seed (the bytes the hex on
// KZOO_SEED_FD decodes to).
#pragma once

#include <string>
#include <string_view>

#include "kzoo/util/result.hpp"

namespace kzoo::runner {

inline constexpr std::string_view kSignaturePrefix = "kzoo-judge-signature: ";

std::string to_hex(std::string_view bytes);

// Lowercase hex HMAC-SHA256 (OpenSSL libcrypto).
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

// Checks that the last non-empty line of `stderr_tail` is a signature line
// whose HMAC matches `stdout_bytes` under `key` (constant-time comparison).
// Fails saying whether the line is missing or the HMAC is wrong.
Result<void> verify_judge_signature(std::string_view key, std::string_view stdout_bytes,
                                    std::string_view stderr_tail);

// `stderr_tail` without a trailing signature line (for showing logs).
std::string strip_signature_line(std::string_view stderr_tail);

}  // namespace kzoo::runner
