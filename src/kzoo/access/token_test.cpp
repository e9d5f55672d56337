// Token texts: their shape, that only the hash is needed to check one, and
// that anything else -- a changed character, another id, garbage -- fails.
#include "kzoo/access/token.hpp"

#include <set>

#include <gtest/gtest.h>

namespace kzoo::access {
namespace {

TEST(Token, ANewTokenHasThePublicIdTheSecretAndOnlyItsHashIsNeededToCheckIt) {
  auto t = new_token();
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->text.size(), 65u);
  EXPECT_EQ(t->text.substr(0, 5), "kzoo_");
  EXPECT_EQ(t->text.substr(5, 16), t->id);
  EXPECT_EQ(t->hash.size(), 32u);
  EXPECT_EQ(t->text.find(t->hash), std::string::npos);
  auto p = parse_token(t->text);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->id, t->id);
  EXPECT_TRUE(token_matches(*p, t->hash));
}

TEST(Token, TokensAreFreshEachTime) {
  std::set<std::string> ids, texts;
  for (int i = 0; i < 200; ++i) {
    auto t = new_token();
    ASSERT_TRUE(t);
    ids.insert(t->id);
    texts.insert(t->text);
  }
  EXPECT_EQ(ids.size(), 200u);
  EXPECT_EQ(texts.size(), 200u);
}

TEST(Token, AChangedSecretCharacterDoesNotMatch) {
  auto t = new_token();
  ASSERT_TRUE(t);
  std::string x = t->text;
  x[40] = x[40] == 'A' ? 'B' : 'A';
  auto p = parse_token(x);
  ASSERT_TRUE(p);
  EXPECT_FALSE(token_matches(*p, t->hash));
}

TEST(Token, AHashCannotBeMovedToAnotherId) {
  auto a = new_token(), b = new_token();
  ASSERT_TRUE(a && b);
  auto pa = parse_token(a->text);
  ASSERT_TRUE(pa);
  TokenText moved{b->id, pa->secret};  // a's secret under b's id
  EXPECT_FALSE(token_matches(moved, a->hash));
  EXPECT_FALSE(token_matches(*pa, b->hash));
  EXPECT_FALSE(token_matches(*pa, ""));
}

TEST(Token, MalformedTextsAreNotTokens) {
  auto t = new_token();
  ASSERT_TRUE(t);
  for (std::string bad : {std::string(), std::string("kzoo_"), t->text.substr(0, 64), t->text + "A",
                          "KZOO_" + t->text.substr(5), t->text.substr(0, 5) + "ABCDEF0123456789" + t->text.substr(21),
                          t->text.substr(0, 21) + "-" + t->text.substr(22), t->text.substr(0, 30) + "=" + t->text.substr(31),
                          std::string(65, '\0'), t->text.substr(0, 30) + "\xff" + t->text.substr(31)})
    EXPECT_FALSE(parse_token(bad)) << bad;
}

TEST(Token, BearerHeadersAreReadCaseInsensitivelyAndNothingElseIs) {
  EXPECT_EQ(bearer("Bearer abc"), "abc");
  EXPECT_EQ(bearer("bearer  abc "), "abc");
  EXPECT_FALSE(bearer("Basic abc"));
  EXPECT_FALSE(bearer("Bearer "));
  EXPECT_FALSE(bearer(""));
  EXPECT_FALSE(bearer("Bearerabc"));
}

// git sends the token as the Basic password (docs/GIT.md): the user name is
// anything, the token is everything after the first colon.
TEST(Token, BasicHeadersYieldThePasswordWhateverTheUserName) {
  // "x:kzoo_ab_cd" and "any one:kzoo_a:b" in base64
  EXPECT_EQ(basic_password("Basic eDprem9vX2FiX2Nk"), "kzoo_ab_cd");
  EXPECT_EQ(basic_password("basic YW55IG9uZTprem9vX2E6Yg=="), "kzoo_a:b");
  EXPECT_FALSE(basic_password("Basic eDo="));         // "x:" has no password
  EXPECT_FALSE(basic_password("Basic eA=="));         // "x" has no colon
  EXPECT_FALSE(basic_password("Basic e!Do"));         // not base64
  EXPECT_FALSE(basic_password("Bearer kzoo_ab_cd"));
  EXPECT_FALSE(basic_password("Basic " + std::string(5000, 'A')));  // absurdly long
}

}  // namespace
}  // namespace kzoo::access
