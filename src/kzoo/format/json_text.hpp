// Parsing JSON text from users: strict UTF-8, duplicate object keys refused
// (nlohmann silently keeps the last), depth and size capped.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "kzoo/util/violation.hpp"

namespace kzoo::format {

struct JsonLimits {
  std::size_t max_bytes = 8u << 20;
  std::size_t max_depth = 64;
};

// On failure the Violation names `file`, the line/column or pointer, and a rule
// among json.syntax, json.duplicate-key, json.utf8, json.too-large, json.too-deep.
tl::expected<nlohmann::json, Violation> parse_json(std::string_view text, const std::string& file,
                                                    const JsonLimits& limits = {});

}  // namespace kzoo::format
