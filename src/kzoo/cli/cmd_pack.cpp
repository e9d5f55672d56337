// `kzoo pack DIR -o FILE.tar.gz [--root R] [--kernel-id ID] [--force]`:
// the submission tarball of a package directory, made only from a package
// that passes inspection, deterministic (same tree, same bytes), and read
// back with the server's own reader before it is put in place. The file is
// written beside FILE under a temporary name and renamed over it, so an
// interrupted pack never leaves half a tarball under FILE.
// Exit 0 written, 1 package invalid (every violation listed), 2 usage/I/O.
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <system_error>

#include "kzoo/cli/command.hpp"
#include "kzoo/cli/package_input.hpp"
#include "kzoo/package/inspect.hpp"
#include "kzoo/package/tarball.hpp"

namespace {

namespace fs = std::filesystem;

struct Options {
  std::string dir;
  std::string out;
  std::optional<std::string> root;
  std::optional<std::string> kernel_id;
  bool force = false;
};

bool inside(const fs::path& child, const fs::path& parent) {
  auto c = child.begin();
  for (auto p = parent.begin(); p != parent.end(); ++p, ++c) {
    if (p->empty()) continue;  // trailing separator
    if (c == child.end() || *c != *p) return false;
  }
  return true;
}

int run(const Options& o) {
  std::error_code ec;
  const std::string name = fs::path(o.out).filename().string();
  if (name.size() <= 7 || name.compare(name.size() - 7, 7, ".tar.gz") != 0) {
    std::cerr << "kzoo pack: the output \"" << o.out << "\" must end in .tar.gz (submissions are gzipped tarballs)\n";
    return kzoo::cli::kExitError;
  }
  if (fs::exists(fs::symlink_status(o.out, ec)) && !o.force) {
    std::cerr << "kzoo pack: \"" << o.out << "\" already exists; pass --force to replace it\n";
    return kzoo::cli::kExitError;
  }
  if (fs::is_directory(o.out, ec)) {
    std::cerr << "kzoo pack: \"" << o.out << "\" is a directory\n";
    return kzoo::cli::kExitError;
  }
  const fs::path out_abs = fs::weakly_canonical(fs::absolute(o.out, ec), ec);
  const fs::path dir_abs = fs::weakly_canonical(fs::absolute(o.dir, ec), ec);
  if (!ec && inside(out_abs, dir_abs)) {
    std::cerr << "kzoo pack: the output \"" << o.out << "\" lies inside the package \"" << o.dir
              << "\"; it would become part of the package: write it elsewhere\n";
    return kzoo::cli::kExitError;
  }

  auto in = kzoo::cli::read_package_input(o.dir, o.root, o.kernel_id);
  if (!in) {
    std::cerr << "kzoo pack: " << in.error().message << "\n";
    return kzoo::cli::kExitError;
  }
  auto r = kzoo::package::inspect_tree(in->tree, in->kernel_id, o.dir);
  kzoo::Violations all = in->violations;
  all.insert(all.end(), r.violations.begin(), r.violations.end());
  if (!all.empty()) {
    kzoo::cli::print_verdict(std::cout, "package " + o.dir + " (" + in->kernel_id + "), not packed", all);
    return kzoo::cli::kExitInvalid;
  }

  const fs::path tmp = out_abs.parent_path() / (name + ".partial-" + std::to_string(::getpid()));
  fs::remove(tmp, ec);
  auto written = kzoo::package::write_package_tarball(in->tree, in->kernel_id, tmp.string());
  if (!written) {
    fs::remove(tmp, ec);
    std::cerr << "kzoo pack: cannot write \"" << o.out << "\": " << written.error().message << "\n";
    return kzoo::cli::kExitError;
  }
  // The server will read this file with read_package_tarball: make sure it
  // accepts what we made (caps, layout) before handing it to the user.
  auto back = kzoo::package::read_package_tarball(tmp.string(), in->kernel_id);
  if (!back || !back->violations.empty()) {
    fs::remove(tmp, ec);
    std::cerr << "kzoo pack: the tarball written for \"" << o.dir << "\" does not read back cleanly";
    if (!back) std::cerr << ": " << back.error().message;
    std::cerr << "\n";
    if (back) kzoo::cli::print_verdict(std::cerr, "tarball", back->violations);
    return kzoo::cli::kExitError;
  }
  fs::rename(tmp, out_abs, ec);
  if (ec) {
    fs::remove(tmp, ec);
    std::cerr << "kzoo pack: cannot move the tarball into place at \"" << o.out << "\": " << ec.message() << "\n";
    return kzoo::cli::kExitError;
  }
  std::cout << "packed " << in->kernel_id << " (" << in->tree.files.size() << " files, " << in->tree.total_bytes()
            << " bytes) into " << o.out << " (" << fs::file_size(out_abs, ec) << " bytes)\n";
  return kzoo::cli::kExitOk;
}

const bool registered = kzoo::cli::register_command(
    "pack", "Make the submission tarball of a valid package directory",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto o = std::make_shared<Options>();
      sub.add_option("dir", o->dir, "Package directory")->required();
      sub.add_option("-o,--output", o->out, "Output file, *.tar.gz")->required();
      sub.add_option("--root", o->root, "kernel_data root (default: nearest ancestor holding .kernel_data)");
      sub.add_option("--kernel-id", o->kernel_id, "Kernel ID when the package is not under a kernel_data root");
      sub.add_flag("--force", o->force, "Replace the output file if it exists");
      return [o] { return run(*o); };
    });

}  // namespace
