// JSON Schema validation of every kzoo format, through valijson (Debian 1.0:
// draft-07 keywords only; see LIBNOTES.md and docs/formats.md for what the
// bundled schemas may use).
//
// The bundled schemas are the files of schemas/, compiled into the binary.
// Schema names are the file names without ".schema.json": "task", "desc",
// "bench_result", "test_case_meta", "benchmark_output", "submission_envelope",
// "kernel_package_meta".
//
// Thread-safety: a SchemaSet is immutable after construction; validate() may
// be called from any number of threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/util/result.hpp"
#include "kzoo/util/violation.hpp"

namespace kzoo::format {

class SchemaSet {
 public:
  // The schemas compiled into this binary. Built once, on first use.
  static const SchemaSet& bundled();

  // Loads schemas from (name, JSON text) pairs; fails naming the bad schema.
  static Result<SchemaSet> load(const std::vector<std::pair<std::string, std::string>>& files);

  SchemaSet(SchemaSet&&) noexcept;
  SchemaSet& operator=(SchemaSet&&) noexcept;
  ~SchemaSet();

  // Every violation of `doc` against schema `name`. Each Violation has
  // path = `file`, pointer = the JSON pointer of the offending value,
  // rule = "schema.<keyword>" (schema.required, schema.type, schema.enum, ...),
  // detail = what was found, what the schema wants, and the value itself.
  // An unknown schema name throws std::out_of_range (a programming error).
  Violations validate(const nlohmann::json& doc, std::string_view name, const std::string& file) const;

  const nlohmann::json& schema(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  struct Impl;
  explicit SchemaSet(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kzoo::format
