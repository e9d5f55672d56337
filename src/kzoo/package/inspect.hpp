// Package inspection: everything that can be decided about a kernel package
// without running it. Produces the kernel_package_meta document of the seed
// ({path, has_dot_kernel_package, required_files_present,
// required_files_missing}) plus kernel_id and every violation found:
// kernel ID segments, the four required files, desc.yaml and
// bench_result.yaml against their schemas, KERNEL_ZOO_TEST_CASE_METAS read
// from benchmark.py without running it and checked against its schema and for
// consistency (unique test_case_ids, primary_metric among metrics, io_signature
// names unique), and the evidence-free policy over every file.
//
// Layout rules (decided here, beyond the seed): the package top level holds
// .kernel_package/ (exactly the four files below, nothing else: the runner
// uses trusted copies, so extras would be silently ignored), src/ (at least
// one file: package.no-source), and optionally the authored project files
// README*, LICENSE*/LICENCE*, COPYING*, NOTICE*, AUTHORS*, CHANGELOG*,
// CONTRIBUTING*, .gitignore, .gitattributes, CMakeLists.txt, Makefile,
// setup.py. Any other top-level file or directory is package.unexpected-entry
// (only src/ is taken into the repository on accept; move source there).
//
// Rules: kernel-id.*, package.missing-file, package.unexpected-entry,
// package.no-source, yaml.* / schema.* (desc.yaml, bench_result.yaml),
// literal.* / schema.* with pointer /N/... (KERNEL_ZOO_TEST_CASE_METAS item N),
// package.metas-not-list, package.no-test-cases, package.duplicate-test-case,
// package.primary-metric, package.duplicate-metric, package.duplicate-io-name,
// package.bench-result-mismatch (kernel_id differs, or a case that is not a
// declared test_case_id), evidence.*.
#pragma once

#include <string>
#include <string_view>

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

// Single-file checks for `kzoo validate desc.yaml|bench_result.yaml`: parse,
// schema, and what needs only that file (io_signature names unique; for
// bench_result, kernel_id equal to `kernel_id` when that is non-empty).
// Violations name `file`.
Violations check_desc_text(std::string_view text, const std::string& file);
Violations check_bench_result_text(std::string_view text, const std::string& file, const std::string& kernel_id);

}  // namespace kzoo::package
