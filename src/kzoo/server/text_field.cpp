#include "kzoo/server/text_field.hpp"

#include <fmt/format.h>

#include "kzoo/format/utf8.hpp"

namespace kzoo::server {

std::string text_problem(const nlohmann::json& v, std::size_t min, std::size_t max) {
  if (!v.is_string()) return fmt::format("is {}, not a string", v.type_name());
  const auto& s = v.get_ref<const std::string&>();
  if (s.size() < min || s.size() > max) return fmt::format("is {} bytes long", s.size());
  if (auto p = format::find_invalid_utf8(s))
    return fmt::format("is not UTF-8 (byte 0x{:02X} at line {}, column {})", static_cast<unsigned char>(s[p->offset]),
                       p->line, p->column);
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    unsigned cp = c;
    if (c == 0xC2 && i + 1 < s.size()) cp = static_cast<unsigned char>(s[i + 1]);  // C2 xx is U+00xx (valid UTF-8)
    const bool c0 = (c < 0x20 && c != '\t' && c != '\n') || c == 0x7F;
    const bool c1 = c == 0xC2 && cp <= 0x9F;
    if (c0 || c1) {
      auto p = format::position_of(s, i);
      return fmt::format("holds the control character U+{:04X} at line {}, column {}", cp, p.line, p.column);
    }
  }
  return "";
}

}  // namespace kzoo::server
