// parse_json: what a hostile or careless JSON file gets back.
#include "kzoo/format/json_text.hpp"

#include <gtest/gtest.h>

#include "kzoo/format/utf8.hpp"

namespace kzoo::format {
namespace {

Violation error_of(std::string_view text, const JsonLimits& limits = {}) {
  auto r = parse_json(text, "in.json", limits);
  EXPECT_FALSE(r.has_value()) << "accepted: " << text;
  return r.has_value() ? Violation{} : r.error();
}

TEST(ParseJson, ReadsAValidDocumentWithItsTypes) {
  auto r = parse_json(R"({"a": [1, -2, 18446744073709551615, 1.5, true, null, "é𝄞"], "b": {}})", "in.json");
  ASSERT_TRUE(r.has_value()) << to_string(r.error());
  const auto& a = (*r)["a"];
  EXPECT_TRUE(a[0].is_number_integer());
  EXPECT_EQ(a[1], -2);
  EXPECT_TRUE(a[2].is_number_unsigned());
  EXPECT_TRUE(a[3].is_number_float());
  EXPECT_EQ(a[4], true);
  EXPECT_TRUE(a[5].is_null());
  EXPECT_EQ(a[6], "é𝄞");
  EXPECT_TRUE((*r)["b"].is_object());
}

TEST(ParseJson, RefusesADuplicateKeyNamingItsPointer) {
  auto v = error_of(R"({"x": [{"k": 1, "k": 2}]})");
  EXPECT_EQ(v.rule, "json.duplicate-key");
  EXPECT_EQ(v.path, "in.json");
  EXPECT_EQ(v.pointer, "/x/0/k");
  EXPECT_NE(v.detail.find("\"k\""), std::string::npos);
}

TEST(ParseJson, EscapesSlashAndTildeInDuplicateKeyPointers) {
  auto v = error_of(R"({"o": {"a/b~c": 1, "a/b~c": 1}})");
  EXPECT_EQ(v.rule, "json.duplicate-key");
  EXPECT_EQ(v.pointer, "/o/a~1b~0c");
}

TEST(ParseJson, SameKeyInDifferentObjectsIsFine) {
  EXPECT_TRUE(parse_json(R"({"a": {"k": 1}, "b": {"k": 2}, "k": 3})", "in.json").has_value());
}

TEST(ParseJson, CapsNestingDepth) {
  JsonLimits limits;
  limits.max_depth = 3;
  EXPECT_TRUE(parse_json("[[[1]]]", "in.json", limits).has_value());
  auto v = error_of(R"({"a": [[{"b": 1}]]})", limits);
  EXPECT_EQ(v.rule, "json.too-deep");
  EXPECT_EQ(v.pointer, "/a/0/0");
  // The default cap holds against a deep hostile document without crashing.
  std::string deep(100000, '[');
  EXPECT_EQ(error_of(deep).rule, "json.too-deep");
}

TEST(ParseJson, CapsSize) {
  JsonLimits limits;
  limits.max_bytes = 10;
  auto v = error_of(R"({"a": "0123456789"})", limits);
  EXPECT_EQ(v.rule, "json.too-large");
  EXPECT_NE(v.detail.find("10 bytes"), std::string::npos);
}

TEST(ParseJson, RefusesInvalidUtf8WithLineAndColumn) {
  struct Case {
    std::string text;
    const char* pointer;
  };
  const Case cases[] = {
      {"{\"a\":\n \"\xff\"}", "line 2, column 3"},               // never valid
      {"{\"a\": \"\xc0\xaf\"}", "line 1, column 8"},              // overlong '/'
      {"{\"a\": \"\xed\xa0\x80\"}", "line 1, column 8"},          // UTF-16 surrogate
      {"{\"a\": \"\xf4\x90\x80\x80\"}", "line 1, column 8"},      // above U+10FFFF
      {"{\"é\": \"\xe2\x82\"}", "line 1, column 8"},              // truncated sequence
      {"\xfe\xff{}", "line 1, column 1"},                        // UTF-16 byte order mark
  };
  for (const auto& c : cases) {
    auto v = error_of(c.text);
    EXPECT_EQ(v.rule, "json.utf8") << c.text;
    EXPECT_EQ(v.pointer, c.pointer) << c.text;
  }
}

TEST(ParseJson, ReportsSyntaxErrorsWithLineAndColumn) {
  auto v = error_of("{\n  \"a\": tru\n}");
  EXPECT_EQ(v.rule, "json.syntax");
  EXPECT_EQ(v.pointer.rfind("line 2, column", 0), 0u) << v.pointer;
  EXPECT_EQ(v.detail.find("[json.exception"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find("tru"), std::string::npos) << v.detail;
}

TEST(ParseJson, RefusesWhatStrictJsonRefuses) {
  for (const char* text : {"", "{} x", "{\"a\": 1,}", "// c\n{}", "{'a': 1}", "[1e999]", "{\"a\" 1}", "NaN"}) {
    EXPECT_EQ(error_of(text).rule, "json.syntax") << text;
  }
}

TEST(Utf8, FindsTheFirstBadByteAndCountsColumnsInCharacters) {
  EXPECT_FALSE(find_invalid_utf8("plain ascii\nand é 𝄞 €").has_value());
  auto p = find_invalid_utf8("ab\néé\x80");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->offset, 7u);
  EXPECT_EQ(p->line, 2u);
  EXPECT_EQ(p->column, 3u);
}

}  // namespace
}  // namespace kzoo::format
