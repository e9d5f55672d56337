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

namespace cmd_pack {  // per command: a unity build joins commands (CMakeLists.txt)

namespace fs = std::filesystem;

struct Options {
  std::string dir;
  std::string out;
  std::optional<std::string> root;
  std::optional<std::string> kernel_id;
  bool force = false;
  bool json = false;
};

// A usage or I/O error: one line on stderr, and with --json the same as a document.
int error(const Options& o, const std::string& message) {
  std::cerr << "kzoo pack: " << message << "\n";
  if (o.json) kzoo::cli::print_json(std::cout, nlohmann::json{{"ok", false}, {"error", message}});
  return kzoo::cli::kExitError;
}

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
    return error(o, "the output \"" + o.out + "\" must end in .tar.gz (submissions are gzipped tarballs)");
  }
  if (fs::exists(fs::symlink_status(o.out, ec)) && !o.force) {
    return error(o, "\"" + o.out + "\" already exists; pass --force to replace it");
  }
  if (fs::is_directory(o.out, ec)) {
    return error(o, "\"" + o.out + "\" is a directory");
  }
  const fs::path out_abs = fs::weakly_canonical(fs::absolute(o.out, ec), ec);
  const fs::path dir_abs = fs::weakly_canonical(fs::absolute(o.dir, ec), ec);
  if (!ec && inside(out_abs, dir_abs)) {
    return error(o, "the output \"" + o.out + "\" lies inside the package \"" + o.dir +
                        "\"; it would become part of the package: write it elsewhere");
  }

  auto in = kzoo::cli::read_package_input(o.dir, o.root, o.kernel_id);
  if (!in) {
    return error(o, in.error().message);
  }
  auto r = kzoo::package::inspect_tree(in->tree, in->kernel_id, o.dir);
  kzoo::Violations all = in->violations;
  all.insert(all.end(), r.violations.begin(), r.violations.end());
  if (!all.empty()) {
    if (o.json)
      kzoo::cli::print_json(std::cout, nlohmann::json{{"ok", false}, {"kernel_id", in->kernel_id},
                                                      {"violations", kzoo::to_json(all)}});
    else
      kzoo::cli::print_verdict(std::cout, "package " + o.dir + " (" + in->kernel_id + "), not packed", all);
    return kzoo::cli::kExitInvalid;
  }

  const fs::path tmp = out_abs.parent_path() / (name + ".partial-" + std::to_string(::getpid()));
  fs::remove(tmp, ec);
  auto written = kzoo::package::write_package_tarball(in->tree, in->kernel_id, tmp.string());
  if (!written) {
    fs::remove(tmp, ec);
    return error(o, "cannot write \"" + o.out + "\": " + written.error().message);
  }
  // The server will read this file with read_package_tarball: make sure it
  // accepts what we made (caps, layout) before handing it to the user.
  auto back = kzoo::package::read_package_tarball(tmp.string(), in->kernel_id);
  if (!back || !back->violations.empty()) {
    fs::remove(tmp, ec);
    if (back) kzoo::cli::print_verdict(std::cerr, "tarball", back->violations);
    return error(o, "the tarball written for \"" + o.dir + "\" does not read back cleanly" +
                        (back ? std::string() : ": " + back.error().message));
  }
  fs::rename(tmp, out_abs, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return error(o, "cannot move the tarball into place at \"" + o.out + "\": " + ec.message());
  }
  if (o.json) {
    kzoo::cli::print_json(std::cout, nlohmann::json{{"ok", true}, {"kernel_id", in->kernel_id}, {"tarball", o.out},
                                                    {"files", in->tree.files.size()}, {"bytes", in->tree.total_bytes()},
                                                    {"tarball_bytes", fs::file_size(out_abs, ec)}});
    return kzoo::cli::kExitOk;
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
      sub.add_flag("--json", o->json, "Print one JSON document on stdout");
      return [o] { return run(*o); };
    });

}  // namespace
