// Package inspection: everything that can be decided about a kernel package
// without running it. Produces the kernel_package_meta document of the seed
// ({path, has_dot_kernel_package, required_files_present,
// required_files_missing}) plus kernel_id and every violation found:
// kernel ID segments, the four required files, desc.yaml and
// bench_result.yaml against their schemas, KERNEL_ZOO_TEST_CASE_METAS read
// from benchmark.py without running it and checked against its schema and for
// consistency (unique test_case_ids, primary_metric among metrics, io_signature
// names unique), and the evidence-free policy over every file.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "kzoo/package/package_tree.hpp"
#include "kzoo/util/violation.hpp"

namespace kzoo::package {

inline constexpr const char* kRequiredFiles[] = {
    ".kernel_package/desc.yaml",
    ".kernel_package/bench_result.yaml",
    ".kernel_package/build_test_env.py",
    ".kernel_package/benchmark.py",
};

struct Inspection {
  std::string kernel_id;
  nlohmann::json meta;    // kernel_package_meta document incl. kernel_id, violations
  Violations violations;  // also in meta["violations"]
  nlohmann::json desc;    // parsed desc.yaml (null if missing/unparseable)
  nlohmann::json metas;   // parsed KERNEL_ZOO_TEST_CASE_METAS (null if not read)
  bool ok() const { return violations.empty(); }
};

// `display_path` is what messages call the package (its directory or
// "archive.tar.gz:kernel/id"); violation paths are display_path + "/" + file.
Inspection inspect_tree(const PackageTree& tree, const std::string& kernel_id,
                        const std::string& display_path);

}  // namespace kzoo::package
