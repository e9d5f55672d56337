// The judge's signature line: exactly HMAC-SHA256(seed, stdout), as the last
// line of its verdict channel; anything else is a forgery.
#include "kzoo/runner/signature.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kzoo::runner {
namespace {

using ::testing::HasSubstr;

TEST(Hmac, MatchesRfc4231TestCase2) {
  EXPECT_EQ(hmac_sha256_hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(JudgeSignature, AcceptsTheHmacOfTheExactStdoutAsTheLastLine) {
  std::string key(32, '\x07'), out = "{\"a\": 1}\n";
  std::string verdict = "kzoo-judge-signature: " + hmac_sha256_hex(key, out) + "\n";
  EXPECT_TRUE(verify_judge_signature(key, out, verdict).has_value());
}

TEST(JudgeSignature, RefusesAMissingLineNamingTheChannel) {
  auto r = verify_judge_signature("k", "{}", "");
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("missing"));
  EXPECT_THAT(r.error().message, HasSubstr("KZOO_VERDICT_FD"));
}

TEST(JudgeSignature, RefusesALineThatIsNotLast) {
  std::string out = "{}";
  std::string err = "kzoo-judge-signature: " + hmac_sha256_hex("k", out) + "\nwritten afterwards\n";
  EXPECT_FALSE(verify_judge_signature("k", out, err).has_value());
}

TEST(JudgeSignature, RefusesOtherBytesOtherKeysAndTruncatedMacs) {
  std::string good = hmac_sha256_hex("k", "{}");
  EXPECT_FALSE(verify_judge_signature("k", "{} ", "kzoo-judge-signature: " + good).has_value());
  EXPECT_FALSE(verify_judge_signature("K", "{}", "kzoo-judge-signature: " + good).has_value());
  EXPECT_FALSE(verify_judge_signature("k", "{}", "kzoo-judge-signature: " + good.substr(0, 32)).has_value());
  EXPECT_FALSE(verify_judge_signature("k", "{}", "kzoo-judge-signature: ").has_value());
  auto r = verify_judge_signature("k", "{}", "kzoo-judge-signature: " + std::string(64, '0'));
  ASSERT_FALSE(r.has_value());
  EXPECT_THAT(r.error().message, HasSubstr("forged"));
}

TEST(JudgeSignature, ToleratesAMissingFinalNewline) {
  EXPECT_TRUE(verify_judge_signature("k", "{}", "kzoo-judge-signature: " + hmac_sha256_hex("k", "{}")).has_value());
}

}  // namespace
}  // namespace kzoo::runner
