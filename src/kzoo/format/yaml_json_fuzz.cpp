// libFuzzer: parse_yaml never crashes, hangs or grows without bound, and
// whatever it accepts survives to_yaml -> parse_yaml unchanged.
// kzoo-fuzz-sources: format/utf8.cpp
#include <cstdint>
#include <cstdlib>

#include "kzoo/format/yaml_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto doc = kzoo::format::parse_yaml(text, "fuzz.yaml");
  if (doc) {
    auto again = kzoo::format::parse_yaml(kzoo::format::to_yaml(*doc), "again.yaml", {1u << 24, 1000000, 64});
    if (!again || *again != *doc) std::abort();
  }
  return 0;
}
