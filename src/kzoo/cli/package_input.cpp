#include "kzoo/cli/package_input.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>

#include "kzoo/package/kernel_id.hpp"
#include "kzoo/util/text_file.hpp"

namespace kzoo::cli {
namespace fs = std::filesystem;

Result<PackageDirInput> read_package_input(const std::string& dir, const std::optional<std::string>& root,
                                           const std::optional<std::string>& kernel_id) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return fail("cannot read package \"" + dir + "\": " +
                (fs::exists(dir, ec) ? std::string("not a directory") : std::string("no such directory")));
  }
  PackageDirInput in;
  bool have_root = (root && !root->empty()) || package::find_kernel_data_root(dir).has_value();
  if (have_root) {
    auto id = package::kernel_id_of(dir, root);
    if (!id) return tl::unexpected(id.error());
    in.kernel_id = *id;
    if (kernel_id && *kernel_id != *id) {
      in.violations.push_back(Violation{dir, "", "kernel-id.mismatch",
                                        "--kernel-id says \"" + *kernel_id + "\" but the package's path below its "
                                        "kernel_data root makes it \"" + *id +
                                            "\"; drop --kernel-id, or move the package to that path"});
    }
  } else if (kernel_id) {
    in.kernel_id = *kernel_id;
  } else {
    return fail("cannot tell the kernel ID of \"" + dir + "\": no ancestor holds a .kernel_data marker; pass "
                "--root DIR (the kernel_data root) or --kernel-id ID");
  }
  auto loaded = package::read_package_dir(dir);
  if (!loaded) return tl::unexpected(loaded.error());
  in.tree = std::move(loaded->tree);
  // read_package_dir names entries relative to the directory; show them as
  // the user's path to the package plus the entry.
  std::string prefix = dir;
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  for (Violation v : loaded->violations) {
    if (v.path.empty()) {
      v.path = prefix;
    } else if (v.path.rfind(prefix, 0) != 0) {
      v.path = prefix + "/" + v.path;
    }
    in.violations.push_back(std::move(v));
  }
  return in;
}

Result<std::string> read_file(const std::string& path, std::size_t max_bytes) {
  return read_text_file(path, max_bytes);
}

void print_json(std::ostream& out, const nlohmann::json& doc) {
  out << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

void print_verdict(std::ostream& out, const std::string& what, const Violations& vs) {
  if (vs.empty()) {
    out << "VALID " << what << "\n";
    return;
  }
  out << "INVALID " << what << ": " << vs.size() << (vs.size() == 1 ? " violation" : " violations") << "\n";
  for (const auto& v : vs) out << "  " << to_string(v) << "\n";
}

}  // namespace kzoo::cli
