// YAML documents (desc.yaml, bench_result.yaml) read into the JSON model, so
// one set of schemas validates both. yaml-cpp 0.7 accepts duplicate keys and
// expands aliases lazily (LIBNOTES): both are refused here, as are non-UTF-8
// text, raw C0 control characters, tags other than !!str, non-scalar or null
// keys, more than one document, and inputs past the caps.
//
// Scalars map as YAML 1.2 core schema would: unquoted true/false -> bool,
// null/~/empty -> null, integers and floats -> numbers, everything else (and
// anything quoted) -> string. "NO"/"yes"/"on" stay strings; so do .inf/.nan
// (JSON has no such numbers).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "kzoo/util/violation.hpp"

namespace kzoo::format {

struct YamlLimits {
  std::size_t max_bytes = 1u << 20;
  std::size_t max_nodes = 100000;
  std::size_t max_depth = 64;
};

// On failure the Violation names `file`, "line L, column C" as pointer when
// known, and a rule among yaml.syntax, yaml.duplicate-key, yaml.alias,
// yaml.utf8, yaml.multi-document, yaml.too-large, yaml.too-deep,
// yaml.too-many-nodes, yaml.key-type.
tl::expected<nlohmann::json, Violation> parse_yaml(std::string_view text, const std::string& file,
                                                    const YamlLimits& limits = {});

// How a plain (unquoted) scalar's text maps to JSON, per the rules above;
// quoted scalars are always strings. to_yaml quotes any string this would
// read back as something else.
nlohmann::json resolve_plain_scalar(std::string_view text);

// Serialises JSON as block-style YAML (for the server-owned bench_result.yaml).
std::string to_yaml(const nlohmann::json& doc);

}  // namespace kzoo::format
