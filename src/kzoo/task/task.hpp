// A KBench task (schemas/task.schema.json, the seed's schema) read into typed
// views. Loading checks JSON syntax and the schema only; the semantic rules
// (expressions, rooflines, tolerances...) are lint's (lint.hpp), so that lint
// can report every problem at once and the runner can load a task cheaply.
//
// Every view keeps the JSON pointer of what it came from, so a Violation
// raised about it points at the exact place in the file.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

#include "kzoo/util/violation.hpp"

namespace kzoo::task {

struct TensorSpec {
  std::string pointer;               // e.g. "/definition/inputs/0"
  std::string name;
  std::vector<nlohmann::json> shape;  // each an integer or an expression string
  std::string dtype;
  std::optional<nlohmann::json> quantized;  // {format, scale_granularity, block_size}
};

struct Workload {
  std::string pointer;  // "/workloads/<name>" (JSON-pointer escaped)
  std::string name;
  std::string source = "synthetic";
  std::vector<std::string> dims;
  std::vector<nlohmann::json> graded;       // each a shape tuple (JSON array)
  std::vector<nlohmann::json> correctness;
  std::vector<nlohmann::json> measure;
  std::optional<double> roofline_us;

  // The binding {dim: value} of one shape tuple, for WorkExpr::evaluate.
  // Extra or missing tuple entries are ignored here (lint reports them).
  nlohmann::json bind(const nlohmann::json& shape) const;
};

struct Tolerance {
  double value = 0;
  std::string comparator;
  std::optional<double> row_pass;
  std::optional<double> measured_floor_E;
  std::optional<double> measured_drop_D;
  std::string basis;
};

struct Task {
  std::string file;   // as given by the caller; Violations name it
  nlohmann::json doc;  // the whole document, as read

  std::string name;
  std::string family;
  std::string description;

  std::string entry_point;
  std::string module;  // may be empty (the schema makes it optional; lint requires it)
  std::string signature;
  std::string reference_source;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  bool read_only_inputs = true;
  std::vector<std::string> in_place_outputs;

  std::vector<Workload> workloads;  // in name order

  std::string metric;
  std::string canonical_work;  // empty when the task gives none
  Tolerance tolerance;

  const TensorSpec* input(const std::string& name) const;
  const Workload* workload(const std::string& name) const;
};

// Escapes a JSON pointer token ("~" -> "~0", "/" -> "~1").
std::string pointer_token(const std::string& key);

// Reads `path` (strict JSON: format::parse_json) and checks it against the
// bundled "task" schema. All violations name `path`; an unreadable file is a
// single violation with rule "task.io".
tl::expected<Task, Violations> load_task(const std::string& path);

// The same from an already parsed document; `file` only names it in messages.
tl::expected<Task, Violations> task_from_json(const nlohmann::json& doc, const std::string& file);

}  // namespace kzoo::task
