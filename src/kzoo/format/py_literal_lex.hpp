// Private to the Python literal reader (py_literal.cpp): the tokenizer and the
// module scanner that finds `NAME = <literal>` and refuses any other binding
// or mutation of NAME. Not a public interface; use py_literal.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <tl/expected.hpp>

#include "kzoo/util/violation.hpp"

namespace kzoo::format::py_lex {

enum class Kind : std::uint8_t { Name, Number, String, Op, Newline, End };

// One token. Positions are byte offsets into the source (the tokenizer
// refuses sources over 1 GiB, so 32 bits suffice and a token stays small).
struct Token {
  Kind kind = Kind::End;
  bool line_start = false;  // first token of a logical line
  bool indented = false;    // ...and preceded by whitespace on its line
  std::uint32_t pos = 0, len = 0;
  std::uint32_t depth = 0;  // brackets open around it (an opener counts outside itself)
  std::uint32_t match = 0;  // for an opening bracket: index of its closer
};

// The text being read and how to word errors about it.
struct Source {
  std::string_view text;
  std::string file;
  std::string subject;  // "the literal" or the variable's name, for messages

  std::string where(std::size_t pos) const;  // "line L, column C" (1-based, code points)
  tl::unexpected<Violation> fail(std::size_t pos, const std::string& rule, const std::string& detail) const;
};

// At most 40 bytes of `s`, cut on a code point, control characters escaped.
std::string excerpt(std::string_view s);

// Python 3 tokens; Newline marks the end of each logical line (brackets and
// backslash continuations join lines). Ends with one End token. Errors:
// literal.utf8 (invalid UTF-8), literal.syntax (NUL byte, unterminated
// string, stray backslash, unbalanced brackets), literal.too-large (> 1 GiB).
// Token extents only: numbers and string escapes are checked by the parser,
// so the rest of a module may hold anything Python accepts.
tl::expected<std::vector<Token>, Violation> tokenize(const Source& src);

struct Assignment {
  std::size_t target = 0;                // index of the NAME token
  std::size_t rhs_begin = 0, rhs_end = 0;  // the value's tokens; rhs_end is the terminator
};

// The one top-level `NAME = ...` / `NAME: T = ...` (src.subject is NAME), or
// literal.missing; any other binding or mutation of NAME anywhere in the
// module is literal.reassigned.
tl::expected<Assignment, Violation> find_assignment(const Source& src, const std::vector<Token>& toks);

}  // namespace kzoo::format::py_lex
