// Kernel IDs: the POSIX path of a package relative to its kernel_data root.
// The root is marked by a file named ".kernel_data" (see docs/formats.md);
// packages are found by walking up from a directory to that marker, or the
// root is given explicitly (--root).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kzoo/util/result.hpp"
#include "kzoo/util/violation.hpp"

namespace kzoo::package {

inline constexpr std::string_view kRootMarker = ".kernel_data";

// Every segment matches ^[A-Za-z0-9._-]+$, and is not "." or ".."; no
// leading/trailing slash; at most 16 segments and 200 bytes. Violations carry
// rule kernel-id.segment / kernel-id.empty / kernel-id.too-long, path = `where`.
Violations check_kernel_id(std::string_view id, const std::string& where);

// The nearest ancestor of `dir` (or `dir` itself) holding kRootMarker.
Result<std::string> find_kernel_data_root(const std::string& dir);

// The kernel ID of package directory `dir`: its path relative to `root`, or
// to the root found by find_kernel_data_root when `root` is empty. Fails if
// `dir` is not inside the root or is the root itself.
Result<std::string> kernel_id_of(const std::string& dir, const std::optional<std::string>& root = {});

}  // namespace kzoo::package
