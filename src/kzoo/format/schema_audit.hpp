// What kzoo's schemas may say, and walking a document along its schema.
//
// valijson 1.0 enforces draft-07 keywords and SILENTLY ignores the rest
// (prefixItems, dependentRequired, unevaluatedProperties, anything beside
// $ref...), so a schema using them would promise checks that never happen.
// audit_schema() refuses every keyword outside a small set that valijson
// enforces and that SchemaSet knows how to explain, so a schema can only
// say what is actually checked.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/util/violation.hpp"

namespace kzoo::format {

// `$schema` values accepted at a schema's root. All are parsed as draft 7.
inline constexpr const char* kAcceptedDialects[] = {
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-07/schema",
    "https://json-schema.org/draft/2020-12/schema",
};

// Every keyword of `schema` that kzoo cannot enforce or does not understand,
// as violations with path = `file`, pointer = the keyword's place in the
// schema, rule schema-audit.{not-enforced,unsupported,bad-value,bad-ref}.
Violations audit_schema(const nlohmann::json& schema, const std::string& file);

// The (sub)schema that governs the value at JSON pointer `pointer` of a
// document, following properties, additionalProperties, items and local
// $refs; nullptr if no subschema applies.
const nlohmann::json* schema_at(const nlohmann::json& root, const std::string& pointer);

// libstdc++'s std::regex, which valijson uses for `pattern`, recurses once per
// character: a 100 000-character string crashes the process (seen). Strings
// longer than this are never handed to it.
inline constexpr std::size_t kMaxPatternInput = 1024;

struct LongString {
  std::string pointer;  // in the document
  std::size_t length;   // bytes
  std::string pattern;  // the pattern it would have been matched against
};

// Every string of `doc` that `schema` matches against a `pattern` and that is
// longer than kMaxPatternInput bytes.
std::vector<LongString> find_long_patterned_strings(const nlohmann::json& schema, const nlohmann::json& doc);

}  // namespace kzoo::format
