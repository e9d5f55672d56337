#pragma once
// ASCII-only case folding: file names, extensions and header words compared without
// regard to case, whatever the process's locale says.

#include <cctype>
#include <string>
#include <string_view>

namespace kzoo::util {

inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace kzoo::util
