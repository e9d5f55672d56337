// Texts people write for others to read again later (pull-request comments,
// issues, close reasons): the one rule the server holds them to.
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace kzoo::server {

// Why `v` cannot be stored as such a text, or "" when it can: a string of
// `min`-`max` bytes of UTF-8 with no control character but tab and line feed.
// Those texts reach other people's terminals (`kzoo pull`, `kzoo issue show`)
// and pages: ESC would start an escape sequence there, CR rewrite the line
// they see, NUL cut it short.
std::string text_problem(const nlohmann::json& v, std::size_t min, std::size_t max);

inline constexpr const char* kTextRule =
    "UTF-8 text, with tabs and line breaks (\\n) but no other control characters";

}  // namespace kzoo::server
