#include "kzoo/format/utf8.hpp"

namespace kzoo::format {
namespace {

// Length of the well-formed sequence starting at text[i], or 0 if it is not.
// Ranges from the Unicode standard's table 3-7 (well-formed byte sequences).
std::size_t sequence_length(std::string_view text, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char c = b(0);
  const std::size_t left = text.size() - i;
  auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) {
    return k < left && b(k) >= lo && b(k) <= hi;
  };
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;  // no surrogates
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;  // <= U+10FFFF
  return 0;
}

}  // namespace

std::optional<TextPosition> find_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t n = sequence_length(text, i);
    if (n == 0) return position_of(text, i);
    i += n;
  }
  return std::nullopt;
}

TextPosition position_of(std::string_view text, std::size_t offset) {
  TextPosition p;
  p.offset = offset;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '\n') {
      ++p.line;
      p.column = 1;
    } else if ((c & 0xC0) != 0x80) {  // count code points, not continuation bytes
      ++p.column;
    }
  }
  return p;
}

std::string json_pointer_token(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

}  // namespace kzoo::format
