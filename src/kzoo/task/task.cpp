#include "kzoo/task/task.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "kzoo/format/json_schema.hpp"
#include "kzoo/format/json_text.hpp"

namespace kzoo::task {

using nlohmann::json;

nlohmann::json Workload::bind(const json& shape) const {
  json out = json::object();
  if (!shape.is_array()) return out;
  for (std::size_t i = 0; i < dims.size() && i < shape.size(); ++i) out[dims[i]] = shape[i];
  return out;
}

const TensorSpec* Task::input(const std::string& n) const {
  for (const auto& t : inputs) {
    if (t.name == n) return &t;
  }
  return nullptr;
}

const Workload* Task::workload(const std::string& n) const {
  for (const auto& w : workloads) {
    if (w.name == n) return &w;
  }
  return nullptr;
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

namespace {

// The schema has been checked before these run, so types are as declared;
// the accessors still tolerate absence, because optional fields are optional.
const json& at(const json& obj, const char* key) {
  static const json kNull;
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

std::string str(const json& obj, const char* key) {
  if (!obj.is_object()) return {};
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::vector<TensorSpec> specs(const json& arr, const std::string& pointer) {
  std::vector<TensorSpec> out;
  if (!arr.is_array()) return out;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const json& t = arr[i];
    TensorSpec s;
    s.pointer = pointer + "/" + std::to_string(i);
    s.name = str(t, "name");
    s.dtype = str(t, "dtype");
    if (at(t, "shape").is_array()) {
      for (const auto& e : at(t, "shape")) s.shape.push_back(e);
    }
    if (at(t, "quantized").is_object()) s.quantized = at(t, "quantized");
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<json> shapes(const json& w, const char* key) {
  std::vector<json> out;
  if (at(w, key).is_array()) {
    for (const auto& s : at(w, key)) out.push_back(s);
  }
  return out;
}

std::optional<double> number(const json& obj, const char* key) {
  if (!obj.is_object()) return std::nullopt;
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

tl::expected<Task, Violations> task_from_json(const json& doc, const std::string& file) {
  Violations schema = format::SchemaSet::bundled().validate(doc, "task", file);
  if (!schema.empty()) return tl::unexpected(std::move(schema));

  Task t;
  t.file = file;
  t.doc = doc;
  t.name = str(doc, "name");
  t.family = str(doc, "family");
  t.description = str(doc, "description");

  // The schema requires and types all of this, but valijson enforces only
  // draft-07 keywords (LIBNOTES), so every access below is still defensive.
  const json& def = at(doc, "definition");
  t.entry_point = str(def, "entry_point");
  t.module = str(def, "module");
  t.signature = str(def, "signature");
  t.reference_source = str(at(def, "reference"), "source");
  t.inputs = specs(at(def, "inputs"), "/definition/inputs");
  t.outputs = specs(at(def, "outputs"), "/definition/outputs");
  if (at(def, "read_only_inputs").is_boolean()) t.read_only_inputs = at(def, "read_only_inputs").get<bool>();
  for (const auto& n : at(def, "in_place_outputs")) {
    if (at(def, "in_place_outputs").is_array() && n.is_string()) t.in_place_outputs.push_back(n.get<std::string>());
  }

  const json& workloads = at(doc, "workloads");
  for (auto it = workloads.begin(); workloads.is_object() && it != workloads.end(); ++it) {
    Workload w;
    w.name = it.key();
    w.pointer = "/workloads/" + pointer_token(it.key());
    const json& wj = it.value();
    if (!str(wj, "source").empty()) w.source = str(wj, "source");
    for (const auto& d : at(wj, "dims")) {
      if (at(wj, "dims").is_array() && d.is_string()) w.dims.push_back(d.get<std::string>());
    }
    w.graded = shapes(wj, "graded");
    w.correctness = shapes(wj, "correctness");
    w.measure = shapes(wj, "measure");
    w.roofline_us = number(wj, "roofline_us");
    t.workloads.push_back(std::move(w));
  }

  const json& g = at(doc, "grading");
  t.metric = str(g, "metric");
  t.canonical_work = str(at(g, "reward"), "canonical_work");
  const json& tol = at(g, "tolerance");
  t.tolerance.value = number(tol, "value").value_or(0);
  t.tolerance.comparator = str(tol, "comparator");
  t.tolerance.row_pass = number(tol, "row_pass");
  t.tolerance.measured_floor_E = number(tol, "measured_floor_E");
  t.tolerance.measured_drop_D = number(tol, "measured_drop_D");
  t.tolerance.basis = str(tol, "basis");
  return t;
}

tl::expected<Task, Violations> load_task(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return tl::unexpected(Violations{
        {path, "", "task.io", std::string("cannot read the task file: ") + std::strerror(errno)}});
  }
  std::stringstream ss;
  ss << in.rdbuf();
  auto doc = format::parse_json(ss.str(), path);
  if (!doc) return tl::unexpected(Violations{doc.error()});
  return task_from_json(*doc, path);
}

}  // namespace kzoo::task
