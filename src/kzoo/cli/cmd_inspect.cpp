// `kzoo inspect PATH [--root R] [--kernel-id ID] [--json]`: everything that
// can be decided about a package directory without running it, as the
// kernel_package_meta document. Exit 0 no violations, 1 violations, 2 usage
// or I/O error.
#include <iostream>
#include <memory>
#include <optional>

#include "kzoo/cli/command.hpp"
#include "kzoo/cli/package_input.hpp"
#include "kzoo/package/inspect.hpp"

namespace cmd_inspect {  // per command: a unity build joins commands (CMakeLists.txt)

struct Options {
  std::string path;
  std::optional<std::string> root;
  std::optional<std::string> kernel_id;
  bool json = false;
};

int run(const Options& o) {
  auto in = kzoo::cli::read_package_input(o.path, o.root, o.kernel_id);
  if (!in) {
    std::cerr << "kzoo inspect: " << in.error().message << "\n";
    return kzoo::cli::kExitError;
  }
  auto r = kzoo::package::inspect_tree(in->tree, in->kernel_id, o.path);
  // Reading problems (symlinks, caps, --kernel-id disagreement) come first.
  kzoo::Violations all = in->violations;
  all.insert(all.end(), r.violations.begin(), r.violations.end());
  r.meta["violations"] = kzoo::to_json(all);
  if (o.json) {
    kzoo::cli::print_json(std::cout, r.meta);
  } else {
    std::cout << "package   " << o.path << "\n"
              << "kernel_id " << in->kernel_id << "\n"
              << ".kernel_package/ " << (r.meta["has_dot_kernel_package"].get<bool>() ? "present" : "MISSING")
              << "\n";
    for (const auto& f : r.meta["required_files_present"]) std::cout << "  present " << f.get<std::string>() << "\n";
    for (const auto& f : r.meta["required_files_missing"]) std::cout << "  MISSING " << f.get<std::string>() << "\n";
    std::cout << "files     " << in->tree.files.size() << " (" << in->tree.total_bytes() << " bytes)\n";
    if (r.metas.is_array()) std::cout << "test cases " << r.metas.size() << "\n";
    kzoo::cli::print_verdict(std::cout, o.path, all);
  }
  return all.empty() ? kzoo::cli::kExitOk : kzoo::cli::kExitInvalid;
}

const bool registered = kzoo::cli::register_command(
    "inspect", "Describe a kernel package directory (kernel_package_meta) and list every violation",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Options>();
      sub.add_option("path", o->path, "Package directory")->required();
      sub.add_option("--root", o->root, "kernel_data root (default: nearest ancestor holding .kernel_data)");
      sub.add_option("--kernel-id", o->kernel_id, "Kernel ID when the package is not under a kernel_data root");
      sub.add_flag("--json", o->json, "Print exactly one JSON document on stdout");
      return [o] { return run(*o); };
    });

}  // namespace
