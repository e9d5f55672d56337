// A safe reader for Python literals, like ast.literal_eval but smaller: it
// reads KERNEL_ZOO_TEST_CASE_METAS out of benchmark.py WITHOUT running Python.
//
// Accepted: dicts (string keys only), lists, tuples (-> JSON arrays), strings
// ('..', "..", triple-quoted, r-prefixed, implicit concatenation), ints
// (decimal, 0x/0o/0b, underscores; must fit int64), floats (incl. exponent,
// inf/nan are refused), unary +/- on numbers, True/False/None, comments and
// line continuations. Refused with a clear message: names, calls, attribute
// access, operators, comprehensions, f-strings, bytes, sets, lambdas,
// starred items, and anything past the depth/size caps.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "kzoo/util/violation.hpp"

namespace kzoo::format {

struct LiteralLimits {
  std::size_t max_bytes = 1u << 20;  // of the literal's source text
  std::size_t max_depth = 32;
  std::size_t max_items = 100000;    // total values in the literal
};

// Parses exactly one literal expression (surrounding whitespace/comments ok).
// The Violation's pointer is "line L, column C"; rules: literal.syntax,
// literal.not-literal, literal.key-type, literal.too-deep, literal.too-large,
// literal.int-range, literal.utf8.
tl::expected<nlohmann::json, Violation> parse_py_literal(std::string_view text, const std::string& file,
                                                          const LiteralLimits& limits = {});

// Finds the one top-level statement `NAME = <literal>` in a Python module and
// parses its right-hand side. Rules besides the above: literal.missing (no
// such assignment), literal.reassigned (a second assignment, augmented
// assignment, annotated re-binding, `del`, `global`, or a tuple-unpacking
// target that includes NAME anywhere at top level).
tl::expected<nlohmann::json, Violation> extract_py_assignment(std::string_view source, std::string_view name,
                                                               const std::string& file,
                                                               const LiteralLimits& limits = {});

}  // namespace kzoo::format
