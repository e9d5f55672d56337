// What `kzoo inspect`, `kzoo validate` and `kzoo pack` share: reading a
// package directory into a tree, settling its kernel ID from --root,
// --kernel-id and the .kernel_data marker, and printing results (one JSON
// document, or human lines).
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kzoo/package/package_tree.hpp"
#include "kzoo/util/result.hpp"
#include "kzoo/util/violation.hpp"

namespace kzoo::cli {

struct PackageDirInput {
  std::string kernel_id;
  package::PackageTree tree;
  Violations violations;  // read problems (tree.*) and a --kernel-id disagreement
};

// Reads package directory `dir`. The kernel ID is its path below --root, or
// below the nearest ancestor holding .kernel_data; when neither exists,
// --kernel-id supplies it. A --kernel-id that disagrees with the path is the
// violation kernel-id.mismatch (the path wins). Fails (usage/I/O error) when
// `dir` is not a readable directory or no kernel ID can be settled.
Result<PackageDirInput> read_package_input(const std::string& dir, const std::optional<std::string>& root,
                                           const std::optional<std::string>& kernel_id);

// Reads a whole file (at most `max_bytes`); the error names the path.
Result<std::string> read_file(const std::string& path, std::size_t max_bytes);

// Prints `doc` as one JSON document; invalid UTF-8 in strings (hostile
// names) is replaced rather than thrown on.
void print_json(std::ostream& out, const nlohmann::json& doc);

// "VALID <what>" or "INVALID <what>: N violations" and one line each.
void print_verdict(std::ostream& out, const std::string& what, const Violations& vs);

}  // namespace kzoo::cli
