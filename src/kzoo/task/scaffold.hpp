// `kzoo task scaffold`: turns a KBench task into a kernel package whose source
// is the eager PyTorch baseline (the task's reference function), ready to be
// committed to a kernel_data repository and improved on by contributors:
//
//   <root>/<kernel_id>/.kernel_package/desc.yaml          from the task
//                     /.kernel_package/bench_result.yaml  empty metrics per case
//                     /.kernel_package/benchmark.py       KERNEL_ZOO_TEST_CASE_METAS + the judge
//                     /.kernel_package/build_test_env.py  the judge builds the run's inputs
//                     /src/<module>                       the eager baseline
//
// The kernel ID's first four segments are the category: arch/op_class/
// sub_class/quant; the last is the package name.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "kzoo/task/task.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::task {

// A JSON value as Python literal source (dicts, lists, str, int, float,
// True/False/None), indented by 4 spaces per level, short values on one line,
// keys in the value's own order. format::extract_py_assignment reads it back
// to the same JSON.
std::string to_py_literal(const nlohmann::ordered_json& value, int level = 0);

// The package's test cases: one per graded shape of `workload`, ids
// "<workload>-<index>", in the order of the task's graded list; keys in the
// order a reader wants them (id first, shape dims in the workload's order).
Result<nlohmann::ordered_json> test_case_metas(const Task& task, const std::string& workload);

// Every file of the package, by path relative to the package directory. Pure:
// no I/O, so tests can read what would be written.
Result<std::map<std::string, std::string>> render_package(const Task& task, const std::string& kernel_id,
                                                          const std::string& workload = "synthetic");

struct ScaffoldOptions {
  std::string root;  // a kernel_data root: holds the ".kernel_data" marker
  std::string kernel_id;
  std::string workload = "synthetic";
};

// Renders and writes the package to <root>/<kernel_id>/. Refuses to touch an
// existing directory or a root without the marker. Returns the package dir.
Result<std::string> scaffold_package(const Task& task, const ScaffoldOptions& options);

}  // namespace kzoo::task
