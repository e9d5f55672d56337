// parse_yaml and to_yaml: YAML into the JSON model, safely.
#include "kzoo/format/yaml_json.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace kzoo::format {
namespace {

using json = nlohmann::json;

json read(std::string_view text) {
  auto r = parse_yaml(text, "desc.yaml");
  EXPECT_TRUE(r.has_value()) << text << "\n" << (r ? "" : to_string(r.error()));
  return r ? *r : json();
}

Violation error_of(std::string_view text, const YamlLimits& limits = {}) {
  auto r = parse_yaml(text, "desc.yaml", limits);
  EXPECT_FALSE(r.has_value()) << "accepted: " << text;
  return r ? Violation{} : r.error();
}

TEST(ParseYaml, TypesPlainScalarsByTheCoreSchema) {
  const std::pair<const char*, json> cases[] = {
      {"true", true},        {"True", true},      {"FALSE", false},       {"null", nullptr},
      {"~", nullptr},        {"", nullptr},       {"42", 42},             {"-7", -7},
      {"+3", 3},             {"0x1F", 31},        {"0o17", 15},           {"012", 12},
      {"1.5", 1.5},          {".5", 0.5},         {"1e3", 1000.0},        {"-2.5E-3", -0.0025},
      {"yes", "yes"},        {"no", "no"},        {"NO", "NO"},           {"on", "on"},
      {"off", "off"},        {"1_000", "1_000"},  {".inf", ".inf"},       {".nan", ".nan"},
      {"0x", "0x"},          {"1e", "1e"},        {"sm_90a", "sm_90a"},   {"2026-01-31", "2026-01-31"},
  };
  for (const auto& [text, want] : cases) {
    json got = read(std::string("v: ") + text)["v"];
    EXPECT_EQ(got, want) << text;
    EXPECT_EQ(got.type(), want.type()) << text;
  }
}

TEST(ParseYaml, KeepsIntegerRangesExact) {
  EXPECT_EQ(read("v: 9223372036854775807")["v"], std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(read("v: -9223372036854775808")["v"], std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(read("v: 18446744073709551615")["v"], std::numeric_limits<std::uint64_t>::max());
  EXPECT_TRUE(read("v: 99999999999999999999")["v"].is_number_float());
}

TEST(ParseYaml, QuotedAndBlockScalarsAreStrings) {
  json d = read("a: \"42\"\nb: 'true'\nc: |\n  line one\n  line two\nd: !!str 5\ne: \"\"\n");
  EXPECT_EQ(d["a"], "42");
  EXPECT_EQ(d["b"], "true");
  EXPECT_EQ(d["c"], "line one\nline two\n");
  EXPECT_EQ(d["d"], "5");
  EXPECT_EQ(d["e"], "");
}

TEST(ParseYaml, ReadsNestedBlockAndFlowCollections) {
  json d = read("category:\n  arch: sm90\nio:\n  - {name: x, shape: [M, 128]}\n  - name: y\n");
  EXPECT_EQ(d["category"]["arch"], "sm90");
  EXPECT_EQ(d["io"][0]["shape"], json::array({"M", 128}));
  EXPECT_EQ(d["io"][1]["name"], "y");
}

TEST(ParseYaml, EmptyTextIsNull) { EXPECT_TRUE(read("").is_null()); }

TEST(ParseYaml, RefusesAnchorsAndAliases) {
  auto v = error_of("a: &x [1, 2]\nb: *x\n");
  EXPECT_EQ(v.rule, "yaml.alias");
  EXPECT_EQ(v.pointer, "line 1, column 4");
  EXPECT_NE(v.detail.find("billion laughs"), std::string::npos);
  // The classic: nine levels of ten aliases each. Refused at the first anchor,
  // before anything is expanded.
  std::string laughs = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
  for (char c = 'b'; c <= 'i'; ++c) {
    std::string prev(1, static_cast<char>(c - 1));
    laughs += std::string(1, c) + ": &" + c + " [*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev +
              ",*" + prev + ",*" + prev + ",*" + prev + ",*" + prev + "]\n";
  }
  EXPECT_EQ(error_of(laughs).rule, "yaml.alias");
}

TEST(ParseYaml, RefusesDuplicateKeysComparedAfterResolution) {
  auto v = error_of("name: a\nsummary: s\nname: b\n");
  EXPECT_EQ(v.rule, "yaml.duplicate-key");
  EXPECT_EQ(v.pointer, "line 3, column 1");
  EXPECT_NE(v.detail.find("\"name\""), std::string::npos);
  EXPECT_EQ(error_of("\"a\": 1\na: 2\n").rule, "yaml.duplicate-key");
  EXPECT_EQ(error_of("1: x\n01: y\n").rule, "yaml.duplicate-key");
  EXPECT_EQ(error_of("{a: 1, a: 2}").rule, "yaml.duplicate-key");
  EXPECT_EQ(error_of("l:\n  - k: 1\n    k: 2\n").rule, "yaml.duplicate-key");
  // Equal keys in different mappings are fine.
  EXPECT_TRUE(parse_yaml("a: {k: 1}\nb: {k: 2}\n", "d.yaml").has_value());
}

TEST(ParseYaml, RefusesKeysThatAreNotNames) {
  EXPECT_EQ(error_of("? [a, b]\n: 1\n").rule, "yaml.key-type");
  EXPECT_EQ(error_of("? {a: 1}\n: 1\n").rule, "yaml.key-type");
  EXPECT_EQ(error_of("~: 1\n").rule, "yaml.key-type");
}

TEST(ParseYaml, RefusesMoreThanOneDocument) {
  auto v = error_of("a: 1\n---\nb: 2\n");
  EXPECT_EQ(v.rule, "yaml.multi-document");
  EXPECT_EQ(error_of("a: 1\n---\n").rule, "yaml.multi-document");
  EXPECT_TRUE(parse_yaml("---\na: 1\n...\n", "d.yaml").has_value());
}

TEST(ParseYaml, RefusesTagsOtherThanStr) {
  EXPECT_EQ(error_of("a: !!int 5\n").rule, "yaml.syntax");
  EXPECT_EQ(error_of("a: !custom x\n").rule, "yaml.syntax");
  EXPECT_EQ(error_of("a: !!set {x}\n").rule, "yaml.syntax");
}

TEST(ParseYaml, EnforcesTheCaps) {
  YamlLimits limits;
  limits.max_depth = 3;
  EXPECT_TRUE(parse_yaml("a: {b: [1]}", "d.yaml", limits).has_value());
  EXPECT_EQ(error_of("a: {b: [[1]]}", limits).rule, "yaml.too-deep");
  limits = {};
  limits.max_nodes = 5;
  EXPECT_EQ(error_of("[1, 2, 3, 4, 5, 6]", limits).rule, "yaml.too-many-nodes");
  limits = {};
  limits.max_bytes = 8;
  EXPECT_EQ(error_of("a: 123456789", limits).rule, "yaml.too-large");
  // yaml-cpp's own parser recurses; the default caps stop deep nesting long
  // before the stack is at risk.
  std::string deep;
  for (int i = 0; i < 50000; ++i) deep += "{a: ";
  deep += "1" + std::string(50000, '}');
  EXPECT_EQ(error_of(deep).rule, "yaml.too-deep");
  EXPECT_FALSE(parse_yaml(std::string(50000, '['), "d.yaml").has_value());
}

TEST(ParseYaml, RefusesInvalidUtf8WithLineAndColumn) {
  auto v = error_of("name: ok\nsummary: caf\xe9\n");
  EXPECT_EQ(v.rule, "yaml.utf8");
  EXPECT_EQ(v.pointer, "line 2, column 13");
  const std::string utf16("\xff\xfe" "a\0:\0 \0" "1\0", 10);
  EXPECT_EQ(error_of(utf16).rule, "yaml.utf8");
}

TEST(ParseYaml, RefusesRawControlCharacters) {
  // Found by the fuzzer: leading NULs made yaml-cpp decode the text as UTF-32.
  const std::string nuls("\0\0\0\0a: 1\n", 9);
  auto v = error_of(nuls);
  EXPECT_EQ(v.rule, "yaml.syntax");
  EXPECT_EQ(v.pointer, "line 1, column 1");
  EXPECT_NE(v.detail.find("U+0000"), std::string::npos);
  EXPECT_EQ(error_of("a: b\x1b[31m\n").rule, "yaml.syntax");
  // ...but escapes of them in double quotes are fine, and so are tabs and CRLF.
  EXPECT_EQ(read("a: \"x\\0y\\e\"\r\nb: \"t\tt\"\r\n")["a"], std::string("x\0y\x1b", 4));
}

TEST(ParseYaml, RefusesEscapesThatDecodeToInvalidUtf8) {
  // yaml-cpp itself refuses a lone surrogate; the check behind it is defence.
  for (const char* text : {"a: \"\\uD800\"\n", "a: \"\\uDFFF\\uD800\"\n"}) {
    const std::string rule = error_of(text).rule;
    EXPECT_TRUE(rule == "yaml.utf8" || rule == "yaml.syntax") << rule;
  }
}

TEST(ParseYaml, ExplainsTabIndentation) {
  auto v = error_of("category:\n\tarch: sm90\n");
  EXPECT_EQ(v.rule, "yaml.syntax");
  EXPECT_EQ(v.pointer.rfind("line 2", 0), 0u) << v.pointer;
  EXPECT_NE(v.detail.find("tab"), std::string::npos) << v.detail;
}

TEST(ParseYaml, ReportsSyntaxErrorsWithLineAndColumn) {
  auto v = error_of("a: 1\nb: [1, 2\n");
  EXPECT_EQ(v.rule, "yaml.syntax");
  EXPECT_EQ(v.pointer.rfind("line ", 0), 0u);
  EXPECT_EQ(error_of("a: b: c\n").rule, "yaml.syntax");
  EXPECT_EQ(error_of("a: [1, \"x\"\nb: 2\n").rule, "yaml.syntax");
}

TEST(ToYaml, RoundTripsThroughParseYaml) {
  json doc = {
      {"strings", {"true", "1", "null", "", "~", "yes", "a: b", "#x", "- x", "line1\nline2\n", "é 𝄞", " lead",
                   "trail ", "0x10", "1e3", "[x]", "{", "'q'", "\"d\"", "1.0", ".inf", "tab\there", "*x", "&y", "!t",
                   std::string("nul\0x", 5), "esc\x1b[0m", "del\x7f", "c1\u0085", "bom\ufeff", "cr\r\n", "~\r\r\r", "x\r", "tail\t", "\ttab",
                   "--- - - x", "---", "... end", "...", "--", "-- -"}},
      {"numbers", {0, -1, std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(),
                   std::numeric_limits<std::uint64_t>::max(), 1.5, 0.1, 1e300, -2.5e-8, 3.0}},
      {"flags", {true, false, nullptr}},
      {"empty", {{"object", json::object()}, {"array", json::array()}}},
      {"keys", {{"true", 1}, {"1", 2}, {"null", 3}, {"", 4}, {"a b", 5}, {"x:y", 6}, {"k\r", 7}, {"- k", 8}, {"--- k", 9}, {"...", 10},
                {std::string(2000, 'k'), 11}, {std::string(300, '"'), 12}, {std::string(256, 'x'), 13}}},
      {"cases", {{{"test_case_id", "c1"}, {"metrics_best", {{"TFLOP/s", 512.25}}}}}},
  };
  const std::string text = to_yaml(doc);
  auto back = parse_yaml(text, "bench_result.yaml");
  ASSERT_TRUE(back.has_value()) << to_string(back.error()) << "\n" << text;
  EXPECT_EQ(*back, doc) << text;
}

TEST(ToYaml, RoundTripsKeysAroundTheImplicitKeyCap) {
  // YAML caps an implicit key at 1024 characters; keys near it, quoted or not.
  for (std::size_t n = 1000; n <= 1030; ++n) {
    for (const std::string& key : {std::string(n, 'k'), "\"" + std::string(n, 'k'), std::string(n, 'k') + "\u00e9"}) {
      const json doc = {{key, 1}, {"b", {{key, nullptr}}}};
      auto back = parse_yaml(to_yaml(doc), "x.yaml", {1u << 24, 1000000, 64});
      ASSERT_TRUE(back.has_value()) << "key of " << key.size() << " bytes: " << to_string(back.error());
      EXPECT_EQ(*back, doc);
    }
  }
}

TEST(ToYaml, WritesBlockStyle) {
  const std::string text = to_yaml({{"kernel_id", "a/b"}, {"cases", {{{"test_case_id", "c"}}}}});
  EXPECT_EQ(text, "cases:\n  - test_case_id: c\nkernel_id: a/b\n");
}

TEST(ToYaml, RoundTripsScalarsAtTheTop) {
  for (const json& v : {json("true"), json(5), json(nullptr), json(2.5), json(""), json("--- - - tru-e"),
                       json("... x")}) {
    auto back = parse_yaml(to_yaml(v), "x.yaml");
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, v) << to_yaml(v);
  }
}

}  // namespace
}  // namespace kzoo::format
