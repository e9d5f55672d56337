// Strict UTF-8 checking for text from users (JSON, YAML): the readers check
// the bytes themselves first, so a bad byte is reported as such, with its
// line and column, instead of as a confusing syntax error further on.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace kzoo::format {

struct TextPosition {
  std::size_t offset = 0;  // byte offset of the first bad byte
  std::size_t line = 1;    // 1-based
  std::size_t column = 1;  // 1-based, counted in characters (code points)
};

// The position of the first byte that is not part of well-formed UTF-8
// (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF), or
// nullopt if all of `text` is well-formed.
std::optional<TextPosition> find_invalid_utf8(std::string_view text);

// Line and column (1-based, columns in code points) of byte `offset`.
TextPosition position_of(std::string_view text, std::size_t offset);

// One reference token of a JSON pointer (RFC 6901): "~" -> "~0", "/" -> "~1".
std::string json_pointer_token(std::string_view s);

}  // namespace kzoo::format
