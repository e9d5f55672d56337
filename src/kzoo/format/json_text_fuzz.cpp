// libFuzzer: parse_json never crashes; what it accepts, nlohmann accepts too.
// kzoo-fuzz-sources: format/utf8.cpp
#include <cstdint>
#include <cstdlib>

#include "kzoo/format/json_text.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = kzoo::format::parse_json(text, "fuzz.json");
  if (doc && !nlohmann::json::accept(text)) std::abort();
  return 0;
}
