// docs/formats.md is generated from the schemas, never typed by hand (seed:
// kernel_package_format), so the tables cannot drift from what is enforced.
// `kzoo docs` writes it; `kzoo docs --check` fails when the committed copy is
// stale.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/util/embedded.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::format {

// One row of a format's table. Nested object fields are dotted
// (`category.arch`), items of arrays of objects are `cases[].test_case_id`,
// values of maps are `workloads.*.dims`.
struct FieldRow {
  std::string field;
  std::string type;         // "string", "integer", "enum: a b c", "array of string", ...
  bool required = false;
  std::string description;  // the schema's description plus its constraints
};

// The rows of one schema (ordered as the schema lists its properties). Fields
// whose schema is a `$ref` are not expanded: their type names the definition,
// which gets its own table (see definition_rows).
std::vector<FieldRow> field_rows(const nlohmann::ordered_json& schema);

// The rows of definition `name` of the schema's `$defs`.
std::vector<FieldRow> definition_rows(const nlohmann::ordered_json& schema, const std::string& name);

// The whole of docs/formats.md from the given schema files (e.g.
// embedded_schemas()). Fails naming a file that is not valid JSON.
Result<std::string> render_formats_doc(std::span<const EmbeddedFile> schema_files);

}  // namespace kzoo::format
