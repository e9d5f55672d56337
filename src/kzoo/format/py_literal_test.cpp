// The Python literal reader, as a specification: what it accepts (with the
// JSON it yields), what it refuses (rule, position, and the construct named
// in the message), its caps, and the module scan for benchmark.py.
#include "kzoo/format/py_literal.hpp"

#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kzoo::format {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;

json accept(std::string_view text) {
  auto r = parse_py_literal(text, "t.py");
  EXPECT_TRUE(r) << "refused: " << text << "\n  " << (r ? "" : to_string(r.error()));
  return r ? *r : json("<refused>");
}

Violation refuse(std::string_view text, const LiteralLimits& limits = {}) {
  auto r = parse_py_literal(text, "t.py", limits);
  EXPECT_FALSE(r) << "accepted: " << text << " as " << (r ? r->dump() : "");
  return r ? Violation{} : r.error();
}

// ---------------------------------------------------------------- accepted

struct Accepted {
  std::string python, json_text;
};

TEST(PyLiteralAccepts, EveryLiteralFormWithItsJson) {
  const Accepted cases[] = {
      // strings: quotes, triple quotes, prefixes, concatenation
      {"'abc'", R"("abc")"},
      {"\"abc\"", R"("abc")"},
      {"''", R"("")"},
      {"''''''", R"("")"},
      {"'''a\nb'''", R"("a\nb")"},
      {"\"\"\"say \"hi\" \"\"\"", R"("say \"hi\" ")"},
      {"'''a\r\nb'''", R"("a\nb")"},
      {"r'\\n\\d'", R"("\\n\\d")"},
      {"R\"a\\\"b\"", R"("a\\\"b")"},
      {"u'x'", R"("x")"},
      {"U\"x\"", R"("x")"},
      {"'a' \"b\" r'\\c'", R"("ab\\c")"},
      {"('a'\n 'b')", R"("ab")"},
      {"'a' \\\n 'b'", R"("ab")"},
      {"'é漢😀'", R"("é漢😀")"},
      // escapes
      {R"('\n\t\\\'\"')", R"("\n\t\\'\"")"},
      {R"('\a\b\f\v\r')", R"("\u0007\b\f\u000b\r")"},
      {R"('\x41\u00e9\U0001F600')", R"("Aé😀")"},
      {R"('\101\0\7')", R"("A\u0000\u0007")"},
      {R"('\777')", R"("ǿ")"},
      {R"('\d\w')", R"("\\d\\w")"},
      {"'a\\\nb'", R"("ab")"},
      {"'''a\\\nb'''", R"("ab")"},
      // integers
      {"0", "0"},
      {"00", "0"},
      {"0_0", "0"},
      {"123", "123"},
      {"1_000_000", "1000000"},
      {"0xFF", "255"},
      {"0X_ff", "255"},
      {"0o17", "15"},
      {"0b1010", "10"},
      {"-5", "-5"},
      {"+5", "5"},
      {"- 5", "-5"},
      {"9223372036854775807", "9223372036854775807"},
      {"-9223372036854775808", "-9223372036854775808"},
      {"-0x8000000000000000", "-9223372036854775808"},
      // floats
      {"1.", "1.0"},
      {".5", "0.5"},
      {"1e-3", "0.001"},
      {"1E3", "1000.0"},
      {"1.e2", "100.0"},
      {"1_0.5", "10.5"},
      {"1.0_5", "1.05"},
      {"01.5", "1.5"},
      {"-2.5", "-2.5"},
      {"+.25", "0.25"},
      {"1e-400", "0.0"},
      {"1.7976931348623157e308", "1.7976931348623157e308"},
      // constants
      {"True", "true"},
      {"False", "false"},
      {"None", "null"},
      // containers
      {"[]", "[]"},
      {"[1, 2,]", "[1,2]"},
      {"()", "[]"},
      {"(1,)", "[1]"},
      {"(1)", "1"},
      {"((1))", "1"},
      {"(1, 'a', None)", R"([1,"a",null])"},
      {"((1,),)", "[[1]]"},
      {"{}", "{}"},
      {"{'a': 1, \"b\": [True, None],}", R"({"a":1,"b":[true,null]})"},
      {"{'k' 'ey': {'n': (1, 2.5)}}", R"({"key":{"n":[1,2.5]}})"},
      {"1, 2", "[1,2]"},
      {"1,", "[1]"},
      // layout: comments, newlines in brackets, continuations, BOM
      {"# lead\n[\n  1,  # one\n\n  2\n]\n# trail\n", "[1,2]"},
      {"  [1,\\\n 2]  ", "[1,2]"},
      {"{\r\n'a': 1\r\n}\r\n", R"({"a":1})"},
      {"\xEF\xBB\xBF[1]", "[1]"},
  };
  for (const auto& c : cases) EXPECT_EQ(accept(c.python), json::parse(c.json_text)) << c.python;
}

TEST(PyLiteralAccepts, FloatsStayFloatsAndIntsStayInts) {
  EXPECT_TRUE(accept("1.").is_number_float());
  EXPECT_TRUE(accept("1e3").is_number_float());
  EXPECT_TRUE(accept("-0.0").is_number_float());
  EXPECT_TRUE(std::signbit(accept("-0.0").get<double>()));
  EXPECT_TRUE(accept("10").is_number_integer());
}

// ----------------------------------------------------------------- refused

struct Refused {
  std::string python, rule, pointer, names;  // `names`: a fragment the message must contain
};

TEST(PyLiteralRefuses, EveryNonLiteralWithRulePositionAndConstruct) {
  const Refused cases[] = {
      {"foo", "literal.not-literal", "line 1, column 1", "the name 'foo'"},
      {"[1, foo(2)]", "literal.not-literal", "line 1, column 5", "a call 'foo'(...)"},
      {"os.path", "literal.not-literal", "line 1, column 1", "attribute access 'os'."},
      {"d[0]", "literal.not-literal", "line 1, column 1", "a subscript 'd'[...]"},
      {"1+2", "literal.not-literal", "line 1, column 2", "binary operator '+'"},
      {"2**8", "literal.not-literal", "line 1, column 2", "binary operator '**'"},
      {"[1, 2 * 3]", "literal.not-literal", "line 1, column 7", "binary operator '*'"},
      {"1j", "literal.not-literal", "line 1, column 1", "complex number '1j'"},
      {"1 + 2j", "literal.not-literal", "line 1, column 3", "binary operator '+'"},
      {"1 < 2", "literal.not-literal", "line 1, column 3", "comparison '<'"},
      {"1 in []", "literal.not-literal", "line 1, column 3", "comparison 'in'"},
      {"True and False", "literal.not-literal", "line 1, column 6", "boolean operator 'and'"},
      {"not True", "literal.not-literal", "line 1, column 1", "operator 'not'"},
      {"~1", "literal.not-literal", "line 1, column 1", "operator '~'"},
      {"[1 for x in y]", "literal.not-literal", "line 1, column 4", "comprehension"},
      {"{'a': 1 for a in b}", "literal.not-literal", "line 1, column 9", "comprehension"},
      {"lambda: 1", "literal.not-literal", "line 1, column 1", "lambda"},
      {"[*a]", "literal.not-literal", "line 1, column 2", "starred item"},
      {"{**a}", "literal.not-literal", "line 1, column 2", "dict unpacking"},
      {"{1, 2}", "literal.not-literal", "line 1, column 1", "a set"},
      {"{'a'}", "literal.not-literal", "line 1, column 1", "a set"},
      {"...", "literal.not-literal", "line 1, column 1", "Ellipsis"},
      {"[1 := 2]", "literal.not-literal", "line 1, column 4", "walrus"},
      {"(x := 5)", "literal.not-literal", "line 1, column 2", "the name 'x'"},
      {"f'x{1}'", "literal.not-literal", "line 1, column 1", "an f-string"},
      {"Rf'x'", "literal.not-literal", "line 1, column 1", "bytes/f-strings are not literals the judge can read"},
      {"b'x'", "literal.not-literal", "line 1, column 1", "a bytes literal"},
      {"rb'x'", "literal.not-literal", "line 1, column 1", "bytes/f-strings"},
      {"'a' b'x'", "literal.not-literal", "line 1, column 5", "a bytes literal"},
      {"1 if True else 2", "literal.not-literal", "line 1, column 3", "conditional expression"},
      {"inf", "literal.not-literal", "line 1, column 1", "JSON has no infinity or NaN"},
      {"-nan", "literal.not-literal", "line 1, column 1", "signs apply to numbers only"},
      {"-'a'", "literal.not-literal", "line 1, column 1", "applied to a string"},
      {"--1", "literal.not-literal", "line 1, column 1", "repeated signs"},
      {"-True", "literal.not-literal", "line 1, column 1", "applied to 'True'"},
      {"await x", "literal.not-literal", "line 1, column 1", "keyword 'await'"},
      {"x = 1", "literal.not-literal", "line 1, column 1", "the name 'x'"},
      {"1 = 1", "literal.not-literal", "line 1, column 3", "assignment '='"},
      // dict keys
      {"{1: 2}", "literal.key-type", "line 1, column 2", "dict key 1"},
      {"{(1, 2): 3}", "literal.key-type", "line 1, column 2", "not a string"},
      {"{None: 3}", "literal.key-type", "line 1, column 2", "dict key null"},
      {"{'a': 1, 'b': 2, 'a': 3}", "literal.duplicate-key", "line 1, column 18", "\"a\" at line 1, column 18"},
      // numbers Python itself rejects, and numbers JSON cannot hold
      {"01", "literal.syntax", "line 1, column 1", "leading zeros"},
      {"1__0", "literal.syntax", "line 1, column 1", "invalid decimal literal '1__0'"},
      {"1_", "literal.syntax", "line 1, column 1", "invalid decimal literal"},
      {"0x", "literal.syntax", "line 1, column 1", "invalid hexadecimal literal"},
      {"0b12", "literal.syntax", "line 1, column 1", "invalid binary literal"},
      {"0o8", "literal.syntax", "line 1, column 1", "invalid octal literal"},
      {"1e", "literal.syntax", "line 1, column 1", "invalid decimal literal"},
      {"1_.5", "literal.syntax", "line 1, column 1", "invalid decimal literal"},
      {"1abc", "literal.syntax", "line 1, column 1", "'1abc'"},
      {"9223372036854775808", "literal.int-range", "line 1, column 1", "64-bit"},
      {"-9223372036854775809", "literal.int-range", "line 1, column 2", "'-9223372036854775809'"},
      {"0x1_0000_0000_0000_0000", "literal.int-range", "line 1, column 1", "64-bit"},
      {"1e999", "literal.float-range", "line 1, column 1", "'1e999'"},
      {"-1.5e400", "literal.float-range", "line 1, column 2", "inf"},
      // strings
      {"'abc", "literal.syntax", "line 1, column 1", "never closed"},
      {"'a\nb'", "literal.syntax", "line 1, column 1", "no closing quote on its line"},
      {"'''abc''", "literal.syntax", "line 1, column 1", "no closing triple quote"},
      {R"('\x4')", "literal.syntax", "line 1, column 2", "truncated \\x escape"},
      {R"('\u12')", "literal.syntax", "line 1, column 2", "4 hex digits"},
      {R"('\U00110000')", "literal.syntax", "line 1, column 2", "U+10FFFF"},
      {R"('ok\ud800')", "literal.utf8", "line 1, column 4", "lone surrogate"},
      {R"('\N{EM DASH}')", "literal.syntax", "line 1, column 2", "\\N{...}"},
      // source text
      {"'\xff'", "literal.utf8", "line 1, column 2", "0xFF"},
      {"['\xC0\x80']", "literal.utf8", "line 1, column 3", "not valid UTF-8"},
      {"'\xED\xA0\x80'", "literal.utf8", "line 1, column 2", "not valid UTF-8"},
      {std::string("[1,\0 2]", 7), "literal.syntax", "line 1, column 4", "NUL byte"},
      {"[1, \\ 2]", "literal.syntax", "line 1, column 5", "backslash"},
      // structure
      {"", "literal.syntax", "line 1, column 1", "expected a value, found the end of the input"},
      {"# only a comment\n", "literal.syntax", "line 2, column 1", "expected a value"},
      {"[1, 2", "literal.syntax", "line 1, column 1", "'[' at line 1, column 1 is never closed"},
      {"[1, 2)", "literal.syntax", "line 1, column 6", "does not match '['"},
      {"1]", "literal.syntax", "line 1, column 2", "closes nothing"},
      {"[,]", "literal.syntax", "line 1, column 2", "expected a value, found ','"},
      {"[1,,]", "literal.syntax", "line 1, column 4", "expected a value"},
      {"[1 2]", "literal.syntax", "line 1, column 4", "expected ',' or ']'"},
      {"{'a' 1}", "literal.syntax", "line 1, column 6", "expected ':'"},
      {"1 2", "literal.syntax", "line 1, column 3", "expected the end of the literal"},
      {"1\n2", "literal.syntax", "line 2, column 1", "more code follows"},
      {"[\n  1,\n  foo,\n]", "literal.not-literal", "line 3, column 3", "found the name 'foo'"},
      {"['é漢', x]", "literal.not-literal", "line 1, column 8", "the name 'x'"},
  };
  for (const auto& c : cases) {
    Violation v = refuse(c.python);
    EXPECT_EQ(v.rule, c.rule) << c.python << "\n  " << to_string(v);
    EXPECT_EQ(v.pointer, c.pointer) << c.python << "\n  " << to_string(v);
    EXPECT_THAT(v.detail, HasSubstr(c.names)) << c.python;
    EXPECT_EQ(v.path, "t.py");
    if (v.rule == "literal.not-literal") {
      EXPECT_THAT(v.detail, HasSubstr(v.pointer)) << c.python;
    }
    EXPECT_NO_THROW((void)to_json(v).dump()) << "the message must be valid UTF-8: " << c.python;
  }
}

TEST(PyLiteralRefuses, ANotLiteralMessageSaysWhatToWriteInstead) {
  Violation v = refuse("{'n': N}");
  EXPECT_THAT(v.detail, HasSubstr("without running Python"));
  EXPECT_THAT(v.detail, HasSubstr("True, False and None"));
}

// -------------------------------------------------------------------- caps

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(PyLiteralCaps, DepthIsCappedBeforeRecursionCanHurt) {
  EXPECT_EQ(accept(nested(32)).dump(), nested(32));
  Violation v = refuse(nested(33));
  EXPECT_EQ(v.rule, "literal.too-deep");
  EXPECT_EQ(v.pointer, "line 1, column 33");
  EXPECT_THAT(v.detail, HasSubstr("32 levels"));
  EXPECT_EQ(refuse("(((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))").rule, "literal.too-deep");
}

TEST(PyLiteralCaps, HundredThousandBracketsDoNotCrash) {
  LiteralLimits roomy;
  roomy.max_bytes = 1 << 22;
  EXPECT_EQ(refuse(nested(100000), roomy).rule, "literal.too-deep");
  EXPECT_EQ(refuse(std::string(100000, '('), roomy).rule, "literal.syntax");  // never closed
  EXPECT_EQ(refuse(std::string(100000, '{'), roomy).rule, "literal.syntax");
  roomy.max_depth = SIZE_MAX;  // an absurd limit is clamped, not trusted
  Violation v = refuse(nested(100000), roomy);
  EXPECT_EQ(v.rule, "literal.too-deep");
  EXPECT_THAT(v.detail, HasSubstr("256 levels"));
}

TEST(PyLiteralCaps, ItemsAreCountedAcrossTheWholeLiteral) {
  LiteralLimits small;
  small.max_items = 5;
  EXPECT_EQ(parse_py_literal("[1, 2, 3, 4]", "t.py", small).value(), json::parse("[1,2,3,4]"));
  Violation v = refuse("[[1, 2], [3, 4]]", small);  // 7 values
  EXPECT_EQ(v.rule, "literal.too-large");
  EXPECT_EQ(v.pointer, "line 1, column 11");  // the 6th value, '3'
  EXPECT_THAT(v.detail, HasSubstr("more than 5 values"));
}

TEST(PyLiteralCaps, SourceBytesAreCapped) {
  LiteralLimits small;
  small.max_bytes = 8;
  EXPECT_TRUE(parse_py_literal("[1, 2]", "t.py", small));
  Violation v = refuse("[1, 2, 3, 4]", small);
  EXPECT_EQ(v.rule, "literal.too-large");
  EXPECT_THAT(v.detail, HasSubstr("12 bytes; the limit is 8"));
}

// ------------------------------------------------------- benchmark.py scan

const char* kName = "KERNEL_ZOO_TEST_CASE_METAS";

tl::expected<json, Violation> extract(std::string_view module, const LiteralLimits& limits = {}) {
  return extract_py_assignment(module, kName, "benchmark.py", limits);
}

const std::string kBenchmark = R"PY(#!/usr/bin/env python3
"""Benchmark for the softmax package.

KERNEL_ZOO_TEST_CASE_METAS = "not this one, it is a docstring"
"""
import sys

from kzoo_judge.entry import run_package_benchmark  # noqa

# The graded shapes.
KERNEL_ZOO_TEST_CASE_METAS = [
    {
        "test_case_id": "small",
        "params": {"workload": "softmax", "shape": {"B": 4, "N": 1_024}},
        "primary_metric": "latency_us",
        "metrics": [{"name": "latency_us", "unit": "us", "direction": "lower"}],
        "tolerance": {"correctness_atol": 1e-5, "correctness_rtol": 1e-3},
    },
    {
        'test_case_id': 'large',  # single quotes are fine
        'params': {'workload': 'softmax', 'shape': {'B': 64, 'N': 0x4000}},
        'primary_metric': 'latency_us',
        'metrics': [{'name': 'latency_us', 'unit': 'us', 'direction': 'lower'}],
        'tolerance': {'correctness_atol': 1e-5, 'correctness_rtol': 1e-3},
    },
]


def main() -> int:
    cases = [c for c in KERNEL_ZOO_TEST_CASE_METAS if c["test_case_id"]]
    print(len(KERNEL_ZOO_TEST_CASE_METAS), KERNEL_ZOO_TEST_CASE_METAS[0], file=sys.stderr)
    return run_package_benchmark(metas=KERNEL_ZOO_TEST_CASE_METAS, cases=cases)


if __name__ == "__main__":
    sys.exit(main())
)PY";

TEST(PyAssignment, ReadsTheLiteralOfARealisticBenchmarkPy) {
  auto r = extract(kBenchmark);
  ASSERT_TRUE(r) << to_string(r.error());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0]["test_case_id"], "small");
  EXPECT_EQ((*r)[0]["params"]["shape"]["N"], 1024);
  EXPECT_EQ((*r)[1]["params"]["shape"]["N"], 16384);
  EXPECT_EQ((*r)[1]["tolerance"]["correctness_atol"], 1e-5);
}

TEST(PyAssignment, AcceptedShapesOfTheAssignment) {
  const Accepted cases[] = {
      {"KERNEL_ZOO_TEST_CASE_METAS = [1]", "[1]"},
      {"KERNEL_ZOO_TEST_CASE_METAS: list = [1]", "[1]"},
      {"KERNEL_ZOO_TEST_CASE_METAS: list[dict[str, object]] = [1]", "[1]"},
      {"KERNEL_ZOO_TEST_CASE_METAS = [1]; other = 2", "[1]"},
      {"KERNEL_ZOO_TEST_CASE_METAS = 1, 2  # a tuple", "[1,2]"},
      {"KERNEL_ZOO_TEST_CASE_METAS = (\n  1,\n  2)\n", "[1,2]"},
      {"KERNEL_ZOO_TEST_CASE_METAS = \\\n  [1]", "[1]"},
      {"\xEF\xBB\xBFKERNEL_ZOO_TEST_CASE_METAS = [1]\r\nx = 2\r\n", "[1]"},
      {"if True:\n    pass\nKERNEL_ZOO_TEST_CASE_METAS = [1]", "[1]"},
      {"OTHER_KERNEL_ZOO_TEST_CASE_METAS = [0]\nKERNEL_ZOO_TEST_CASE_METAS = [1]", "[1]"},
      {"x = '''\nKERNEL_ZOO_TEST_CASE_METAS = [0]\n'''\nKERNEL_ZOO_TEST_CASE_METAS = [1]", "[1]"},
      {"# KERNEL_ZOO_TEST_CASE_METAS = [0]\nKERNEL_ZOO_TEST_CASE_METAS = [1]", "[1]"},
      {"x = f'{KERNEL_ZOO_TEST_CASE_METAS}' + b'\\N{DASH}'.decode()\nKERNEL_ZOO_TEST_CASE_METAS = [1]", "[1]"},
      {"x = [" + nested(100000) + "]\nKERNEL_ZOO_TEST_CASE_METAS = [1]", "[1]"},
      // reads of NAME anywhere are fine
      {"KERNEL_ZOO_TEST_CASE_METAS = [1]\nfor c in KERNEL_ZOO_TEST_CASE_METAS: print(c)\n"
       "y = KERNEL_ZOO_TEST_CASE_METAS[0]\nrun(KERNEL_ZOO_TEST_CASE_METAS, n=len(KERNEL_ZOO_TEST_CASE_METAS))",
       "[1]"},
  };
  for (const auto& c : cases) {
    auto r = extract(c.python);
    ASSERT_TRUE(r) << c.python.substr(0, 200) << "\n  " << to_string(r.error());
    EXPECT_EQ(*r, json::parse(c.json_text)) << c.python;
  }
}

struct Rebinding {
  std::string later, pointer, names;
};

TEST(PyAssignment, AnyOtherBindingOrMutationOfTheNameIsRefused) {
  const std::string head = "KERNEL_ZOO_TEST_CASE_METAS = [{'a': 1}]\n";  // line 1
  const Rebinding cases[] = {
      {"KERNEL_ZOO_TEST_CASE_METAS = []", "line 2, column 1", "assigns to KERNEL_ZOO_TEST_CASE_METAS ('=')"},
      {"KERNEL_ZOO_TEST_CASE_METAS += [{}]", "line 2, column 1", "('+=')"},
      {"KERNEL_ZOO_TEST_CASE_METAS: list = []", "line 2, column 1", "or a part of it"},
      {"KERNEL_ZOO_TEST_CASE_METAS: list", "line 2, column 1", "re-declares"},
      {"KERNEL_ZOO_TEST_CASE_METAS, x = [], 1", "line 2, column 1", "or a part of it"},
      {"x, (y, KERNEL_ZOO_TEST_CASE_METAS) = 1, (2, 3)", "line 2, column 8", "or a part of it"},
      {"x = KERNEL_ZOO_TEST_CASE_METAS = []", "line 2, column 5", "('=')"},
      {"del KERNEL_ZOO_TEST_CASE_METAS", "line 2, column 5", "'del' statement"},
      {"global KERNEL_ZOO_TEST_CASE_METAS", "line 2, column 8", "'global' statement"},
      {"for KERNEL_ZOO_TEST_CASE_METAS in range(3): pass", "line 2, column 5", "for-loop target"},
      {"for i, KERNEL_ZOO_TEST_CASE_METAS in x: pass", "line 2, column 8", "for-loop target"},
      {"y = [0 for KERNEL_ZOO_TEST_CASE_METAS in x]", "line 2, column 12", "for-loop target"},
      {"import json as KERNEL_ZOO_TEST_CASE_METAS", "line 2, column 16", "with 'as'"},
      {"from cases import KERNEL_ZOO_TEST_CASE_METAS", "line 2, column 19", "'from' statement"},
      {"from cases import (a,\n    KERNEL_ZOO_TEST_CASE_METAS)", "line 3, column 5", "'from' statement"},
      {"import KERNEL_ZOO_TEST_CASE_METAS", "line 2, column 8", "'import' statement"},
      {"def KERNEL_ZOO_TEST_CASE_METAS(): pass", "line 2, column 5", "defines def"},
      {"class KERNEL_ZOO_TEST_CASE_METAS: pass", "line 2, column 7", "defines class"},
      {"with open('f') as KERNEL_ZOO_TEST_CASE_METAS: pass", "line 2, column 19", "with 'as'"},
      {"if (KERNEL_ZOO_TEST_CASE_METAS := []): pass", "line 2, column 5", "(':=')"},
      {"if x: del KERNEL_ZOO_TEST_CASE_METAS", "line 2, column 11", "'del' statement"},
      {"if __name__ == '__main__':\n    KERNEL_ZOO_TEST_CASE_METAS = []", "line 3, column 5", "assigns to"},
      {"if __name__ == '__main__':\n    KERNEL_ZOO_TEST_CASE_METAS.append({'a': 2})", "line 3, column 5",
       "mutates KERNEL_ZOO_TEST_CASE_METAS (through '.append')"},
      {"def f():\n    global KERNEL_ZOO_TEST_CASE_METAS\n    KERNEL_ZOO_TEST_CASE_METAS = []", "line 3, column 12",
       "'global' statement"},
      {"KERNEL_ZOO_TEST_CASE_METAS[0]['a'] = 2", "line 2, column 1", "or a part of it"},
      {"KERNEL_ZOO_TEST_CASE_METAS[0].update(a=2)", "line 2, column 1", "through '.update'"},
      {"KERNEL_ZOO_TEST_CASE_METAS.clear()", "line 2, column 1", "through '.clear'"},
      {"import sys; sys.modules[__name__].KERNEL_ZOO_TEST_CASE_METAS = []", "line 2, column 35", "('=')"},
      {"run(KERNEL_ZOO_TEST_CASE_METAS=[])", "line 2, column 5", "('=')"},  // conservative
      {"match x:\n    case [KERNEL_ZOO_TEST_CASE_METAS]: pass", "line 3, column 11", "'case' statement"},
  };
  for (const auto& c : cases) {
    auto r = extract(head + c.later);
    ASSERT_FALSE(r) << c.later;
    EXPECT_EQ(r.error().rule, "literal.reassigned") << c.later << "\n  " << to_string(r.error());
    EXPECT_EQ(r.error().pointer, c.pointer) << c.later << "\n  " << to_string(r.error());
    EXPECT_THAT(r.error().detail, HasSubstr(c.names)) << c.later;
    EXPECT_THAT(r.error().detail, HasSubstr("at " + c.pointer)) << c.later;
    EXPECT_THAT(r.error().detail, HasSubstr("the only definition")) << c.later;
  }
}

TEST(PyAssignment, AMissingAssignmentIsNamed) {
  for (std::string module : {"", "x = 1\n", "OTHER_KERNEL_ZOO_TEST_CASE_METAS = [1]\n",
                             "if True:\n    KERNEL_ZOO_TEST_CASE_METAS = [1]\n",
                             "x = 1; \\\nKERNEL_ZOO_TEST_CASE_METAS == [1]\n",
                             "if x: KERNEL_ZOO_TEST_CASE_METAS = [1]\n",
                             "'''\nKERNEL_ZOO_TEST_CASE_METAS = [1]\n'''\n"}) {
    auto r = extract(module);
    ASSERT_FALSE(r) << module;
    EXPECT_EQ(r.error().rule, "literal.missing") << module << "\n  " << to_string(r.error());
    EXPECT_THAT(r.error().detail, HasSubstr("KERNEL_ZOO_TEST_CASE_METAS = [...]"));
  }
}

TEST(PyAssignment, LiteralErrorsPointIntoTheModule) {
  auto hidden_call = extract("import os\n\nKERNEL_ZOO_TEST_CASE_METAS = [\n    {'n': int('3')},\n]\n");
  ASSERT_FALSE(hidden_call);
  EXPECT_EQ(hidden_call.error().rule, "literal.not-literal");
  EXPECT_EQ(hidden_call.error().pointer, "line 4, column 11");
  EXPECT_THAT(hidden_call.error().detail, HasSubstr("a call 'int'(...)"));
  EXPECT_THAT(hidden_call.error().detail, HasSubstr("in KERNEL_ZOO_TEST_CASE_METAS"));

  auto computed = extract("KERNEL_ZOO_TEST_CASE_METAS = [1] * 3\n");
  ASSERT_FALSE(computed);
  EXPECT_EQ(computed.error().pointer, "line 1, column 34");
  EXPECT_THAT(computed.error().detail, HasSubstr("binary operator '*'"));

  auto chained = extract("KERNEL_ZOO_TEST_CASE_METAS = other = [1]\n");
  ASSERT_FALSE(chained);
  EXPECT_EQ(chained.error().rule, "literal.not-literal");

  auto empty = extract("KERNEL_ZOO_TEST_CASE_METAS =\n");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().rule, "literal.syntax");
  EXPECT_EQ(empty.error().pointer, "line 1, column 29");

  auto deep = extract("KERNEL_ZOO_TEST_CASE_METAS = " + nested(100000));
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.error().rule, "literal.too-deep");
}

TEST(PyAssignment, TheRestOfTheModuleMustTokenize) {
  auto r = extract("KERNEL_ZOO_TEST_CASE_METAS = [1]\n\ndef f():\n    return '''unterminated\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().rule, "literal.syntax");
  EXPECT_EQ(r.error().pointer, "line 4, column 12");
  auto bad_utf8 = extract("KERNEL_ZOO_TEST_CASE_METAS = [1]\n# caf\xe9\n");
  ASSERT_FALSE(bad_utf8);
  EXPECT_EQ(bad_utf8.error().rule, "literal.utf8");
  EXPECT_EQ(bad_utf8.error().pointer, "line 2, column 6");
}

TEST(PyAssignment, SizeCapsApplyToTheLiteralAndTheModule) {
  LiteralLimits small;
  small.max_bytes = 64;
  std::string big_literal = "KERNEL_ZOO_TEST_CASE_METAS = [" + std::string(70, '1') + "]\n";
  auto r = extract(big_literal, small);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().rule, "literal.too-large");
  EXPECT_EQ(r.error().pointer, "line 1, column 30");
  auto module = extract("KERNEL_ZOO_TEST_CASE_METAS = [1]\n" + std::string(200, '#'), small);
  ASSERT_FALSE(module);
  EXPECT_EQ(module.error().rule, "literal.too-large");
  EXPECT_THAT(module.error().detail, HasSubstr("for a module"));
}

}  // namespace
}  // namespace kzoo::format
