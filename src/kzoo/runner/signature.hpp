// The judge's signature: the channel the submission cannot write (DESIGN §3.6).
// The judge, which alone holds the run's secret seed, prints its document on
// stdout and then writes, on its verdict channel (a pipe of its own, named by
// KZOO_VERDICT_FD, that no child of the judge inherits),
//     kzoo-judge-signature: <hex HMAC-SHA256(seed bytes, stdout bytes)>
// Submitted code shares stdout/stderr with the judge and can print anything,
// but without the seed it cannot produce a matching HMAC for the bytes we
// actually received. The key is the raw seed (the bytes the hex on
// KZOO_SEED_FD decodes to).
//
// Why a channel of its own and not the last stderr line (as until 2026-12):
// text that reaches stderr after the judge has signed -- torch's CUDA IPC
// warning at interpreter exit, a library's atexit noise, a dying child's last
// words -- turned every honest GPU grade into "signature missing".
#pragma once

#include <string>
#include <string_view>

#include "kzoo/util/result.hpp"

namespace kzoo::runner {

inline constexpr std::string_view kSignaturePrefix = "kzoo-judge-signature: ";

std::string to_hex(std::string_view bytes);

// Lowercase hex HMAC-SHA256 (OpenSSL libcrypto).
std::string hmac_sha256_hex(std::string_view key, std::string_view data);

// The environment variable naming the verdict channel's descriptor.
inline constexpr std::string_view kVerdictFdVariable = "KZOO_VERDICT_FD";

// Checks that the last non-empty line of `verdict` (what the judge wrote on its
// verdict channel) is a signature line whose HMAC matches `stdout_bytes` under
// `key` (constant-time comparison). Fails saying whether the line is missing
// or the HMAC is wrong.
Result<void> verify_judge_signature(std::string_view key, std::string_view stdout_bytes,
                                    std::string_view verdict);

}  // namespace kzoo::runner
