// A safe reader for Python literals, like ast.literal_eval but smaller: it
// reads KERNEL_ZOO_TEST_CASE_METAS out of benchmark.py WITHOUT running Python.
//
// Accepted: dicts (string keys only), lists, tuples (-> JSON arrays), strings
// ('..', "..", triple-quoted, r/u-prefixed, implicit concatenation, every
// escape but \N{...}, which is refused: write the character), ints
// (decimal, 0x/0o/0b, underscores; must fit int64), floats (incl. exponent,
// inf/nan are refused), unary +/- on numbers, True/False/None, comments and
// line continuations, a bare top-level tuple `1, 2`. Refused with a clear
// message naming the construct and its line/column: names, calls, attribute
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
  std::size_t max_bytes = 1u << 20;  // of the literal's source text (a module: twice this)
  std::size_t max_depth = 32;        // bracket nesting; values above 256 act as 256
  std::size_t max_items = 100000;    // total values in the literal
};

// Parses exactly one literal expression (surrounding whitespace/comments ok).
// The Violation's pointer is "line L, column C"; rules: literal.syntax,
// literal.not-literal, literal.key-type, literal.duplicate-key (a dict key
// given twice: Python would keep the last silently), literal.too-deep,
// literal.too-large, literal.int-range, literal.float-range (a float that
// overflows to inf), literal.utf8 (invalid UTF-8 source, or a \u escape naming
// a lone surrogate, which has no UTF-8 form).
tl::expected<nlohmann::json, Violation> parse_py_literal(std::string_view text, const std::string& file,
                                                          const LiteralLimits& limits = {});

// Finds the one top-level statement `NAME = <literal>` in a Python module and
// parses its right-hand side (`NAME: T = <literal>` too). Rules besides the
// above: literal.missing (no such unindented assignment), literal.reassigned
// (anywhere in the module, indented blocks included: a second assignment,
// augmented assignment, walrus, annotated re-binding, `del`, `global`,
// `nonlocal`, `import`/`from`/`as`, `def`/`class`, a for-loop target, a
// tuple-unpacking or chained target that includes NAME, or a mutation
// NAME.attr / NAME[...] = ...). Deliberately conservative: `f(NAME=1)` and
// `d[NAME] = 1` are refused too. Not seen: aliases (`x = NAME; x.append(1)`)
// and string-keyed access (`globals()["NAME"]`). Modules over twice
// max_bytes are literal.too-large.
tl::expected<nlohmann::json, Violation> extract_py_assignment(std::string_view source, std::string_view name,
                                                               const std::string& file,
                                                               const LiteralLimits& limits = {});

}  // namespace kzoo::format
