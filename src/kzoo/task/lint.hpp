// `kzoo task lint`: everything about a KBench task that can be checked without
// running it. The schema says what a task looks like; lint says whether it
// can be graded honestly: its expressions evaluate at every shape, its graded
// shapes are big enough that the kernel dominates, its tolerance sits between
// the measured error floor and the measured error of a wrong variant, and its
// interface is one the judge can call. docs/TASKS.md lists every rule.
//
// Every finding is a Violation: path = the task file, pointer = the JSON
// pointer of the offending value, rule = "task.<rule>" (or json.* / schema.*
// from loading), detail = the value and the fix.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kzoo/task/task.hpp"
#include "kzoo/task/tolerance.hpp"
#include "kzoo/task/work_expr.hpp"
#include "kzoo/util/result.hpp"
#include "kzoo/util/violation.hpp"

namespace kzoo::task {

// One entry of catalog/device_classes.json.
struct DeviceClass {
  std::string name;
  double bandwidth_GBps = 0;
  std::map<std::string, double> tflops;  // per dominant input dtype
};

// Picks class `name` out of a parsed device_classes.json document (an empty
// name means the document's "default"). Fails naming the known classes.
Result<DeviceClass> device_class_from_json(const nlohmann::json& doc, const std::string& name);
// Reads the file (strictly) and picks the class.
Result<DeviceClass> load_device_class(const std::string& path, const std::string& name);
// catalog/device_classes.json of the source tree this binary was built from.
std::string default_device_classes_path();

struct LintOptions {
  DeviceClass device;
  double min_roofline_us = 250;  // graded shapes must reach this
  double roofline_match = 0.05;  // a stated roofline_us may be off by this fraction
  ToleranceRule tolerance;       // where the tolerance must sit, given E and D (tolerance.hpp)
};

// The dtype of the inputs holding the most elements at `dims` (the binding
// of one shape): what bounds a TFLOP/s kernel. Empty if nothing evaluates.
std::string dominant_input_dtype(const Task& task, const nlohmann::json& dims);

// What a perfect kernel needs at one shape, in microseconds: work / peak of
// the device class, for metrics GB/s (work in bytes) and TFLOP/s (work in
// FLOP). nullopt for metrics without a peak rate (tokens/s, ...). Fails when
// the work does not evaluate or the class has no rate for the dtype.
Result<std::optional<double>> roofline_us(const Task& task, const WorkExpr& work, const nlohmann::json& dims,
                                          const DeviceClass& device);

// Every violation of `task`. Empty means lint-clean.
Violations lint_task(const Task& task, const LintOptions& options);

// Loads `path` (JSON syntax and schema violations are returned as they are),
// then lints it.
Violations lint_task_file(const std::string& path, const LintOptions& options);

}  // namespace kzoo::task
