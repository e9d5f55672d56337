// bwrap's command line for a SandboxSpec. The running of it (fork, limits,
// output collection) is in sandbox_run.cpp.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <sys/stat.h>
#include <unistd.h>

#include "kzoo/runner/sandbox.hpp"

namespace kzoo::runner {
namespace fs = std::filesystem;
namespace {

bool path_exists(const std::string& p) {
  struct stat st;
  return ::lstat(p.c_str(), &st) == 0;
}

// /etc files a Python/PyTorch/CUDA process needs. Binding the whole of /etc
// would show the host's configuration (and any secrets kept there); these
// are what the loader, numpy's BLAS alternatives and Python's site hooks read.
const char* const kEtcFiles[] = {
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
    "/etc/localtime",   "/etc/nsswitch.conf", "/etc/mime.types",
};

// Python's per-version config (/etc/python3.11/sitecustomize.py is a link
// target of the one in /usr/lib/python3.11 on Debian).
std::vector<std::string> etc_python_dirs() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/etc", ec)) {
    auto name = e.path().filename().string();
    if (name.rfind("python3", 0) == 0) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Library directories listed in /etc/ld.so.conf.d that lie outside /usr
// (NVIDIA's driver, when installed under /opt or similar): ld.so.cache points
// into them, so they must be visible for the cache to be any use.
std::vector<std::string> extra_library_dirs() {
  std::set<std::string> dirs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/etc/ld.so.conf.d", ec)) {
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      line.erase(0, line.find_first_not_of(" \t"));
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (line.empty() || line[0] != '/' || line.rfind("/usr/", 0) == 0) continue;
      if (line.find("..") != std::string::npos) continue;
      struct stat st;
      if (::stat(line.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) dirs.insert(line);
    }
  }
  return {dirs.begin(), dirs.end()};
}

void add(std::vector<std::string>& v, std::initializer_list<std::string> items) {
  v.insert(v.end(), items);
}

}  // namespace

std::string default_bwrap_path() {
  const char* env = std::getenv("KZOO_BWRAP");
  return env && *env ? env : "/usr/bin/bwrap";
}

std::string visible_path(const SandboxSpec& spec, const SandboxOptions& options, const std::string& host) {
  if (!options.sandboxed) return host;
  auto under = [&](const std::string& root) -> std::optional<std::string> {
    if (host == root) return std::string();
    if (host.size() > root.size() && host.compare(0, root.size(), root) == 0 && host[root.size()] == '/')
      return host.substr(root.size());
    return std::nullopt;
  };
  // Later binds cover earlier ones: look from the last.
  for (auto it = spec.ro_binds.rbegin(); it != spec.ro_binds.rend(); ++it)
    if (auto rest = under(it->host)) return it->inside + *rest;
  if (auto rest = under(spec.workdir)) return std::string(kSandboxWorkdir) + *rest;
  return host;
}

std::vector<std::string> gpu_device_nodes(const std::string& dev) {
  std::vector<std::string> out;
  for (const char* name : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}) {
    std::string p = dev + "/" + name;
    if (path_exists(p)) out.push_back(p);
  }
  std::vector<std::string> numbered;
  std::error_code ec;
  static const std::regex kNumbered("nvidia[0-9]+");
  for (const auto& e : fs::directory_iterator(dev, ec)) {
    auto name = e.path().filename().string();
    if (std::regex_match(name, kNumbered)) numbered.push_back(e.path().string());
  }
  std::sort(numbered.begin(), numbered.end());
  out.insert(out.end(), numbered.begin(), numbered.end());
  return out;
}

Result<std::vector<std::string>> gpu_device_nodes_for(const std::vector<int>& gpus, const std::string& dev) {
  auto all = gpu_device_nodes(dev);
  if (gpus.empty()) return all;
  std::vector<std::string> out, present;
  for (const auto& n : all) {
    auto name = fs::path(n).filename().string();
    if (name.size() > 6 && std::isdigit(static_cast<unsigned char>(name[6]))) present.push_back(name.substr(6));
    else out.push_back(n);  // a control node
  }
  for (int g : gpus) {
    const std::string node = dev + "/nvidia" + std::to_string(g);
    if (std::find(all.begin(), all.end(), node) == all.end()) {
      std::string there;
      for (const auto& p : present) there += (there.empty() ? "" : ", ") + p;
      return fail("GPU " + std::to_string(g) + ": " + node + " does not exist (GPUs here: " +
                  (there.empty() ? "none" : there) + "): name GPUs by nvidia-smi's index");
    }
    if (std::find(out.begin(), out.end(), node) == out.end()) out.push_back(node);
  }
  return out;
}

std::vector<std::string> bwrap_argv(const SandboxSpec& spec, const std::string& bwrap, const BwrapFds& fds) {
  std::vector<std::string> a{bwrap};
  // --unshare-user is implied by --unshare-all for an unprivileged caller but
  // must be explicit for --disable-userns, which stops the program from making
  // nested user namespaces (a large kernel attack surface).
  add(a, {"--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
          "--cap-drop", "ALL", "--hostname", "kzoo-sandbox", "--clearenv"});
  for (const auto& [k, v] : spec.env) add(a, {"--setenv", k, v});

  // The system, read-only. On merged-/usr systems /bin, /lib... are links.
  add(a, {"--ro-bind", "/usr", "/usr"});
  for (const char* top : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    std::error_code ec;
    auto st = fs::symlink_status(top, ec);
    if (ec || !fs::exists(st)) continue;
    if (fs::is_symlink(st))
      add(a, {"--symlink", fs::read_symlink(top, ec).string(), top});
    else
      add(a, {"--ro-bind", top, top});
  }
  for (const char* f : kEtcFiles)
    if (path_exists(f)) add(a, {"--ro-bind", f, f});
  for (const auto& d : etc_python_dirs()) add(a, {"--ro-bind", d, d});
  for (const auto& d : extra_library_dirs()) add(a, {"--ro-bind", d, d});
  if (fds.passwd >= 0) add(a, {"--ro-bind-data", std::to_string(fds.passwd), "/etc/passwd"});
  if (fds.group >= 0) add(a, {"--ro-bind-data", std::to_string(fds.group), "/etc/group"});

  add(a, {"--proc", "/proc", "--dev", "/dev"});
  for (const char* t : {"/tmp", "/dev/shm"}) {
    if (spec.tmpfs_bytes > 0) add(a, {"--size", std::to_string(spec.tmpfs_bytes)});
    add(a, {"--tmpfs", t});
  }
  for (const auto& d : spec.devices) add(a, {"--dev-bind", d, d});

  add(a, {"--bind", spec.workdir, kSandboxWorkdir});
  for (const auto& b : spec.ro_binds) add(a, {"--ro-bind", b.host, b.inside});
  add(a, {"--remount-ro", "/", "--chdir", kSandboxWorkdir});

  if (fds.seccomp >= 0) add(a, {"--seccomp", std::to_string(fds.seccomp)});
  if (fds.json_status >= 0) add(a, {"--json-status-fd", std::to_string(fds.json_status)});
  a.push_back("--");
  a.insert(a.end(), spec.argv.begin(), spec.argv.end());
  return a;
}

}  // namespace kzoo::runner
