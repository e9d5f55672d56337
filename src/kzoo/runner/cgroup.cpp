#include "kzoo/runner/cgroup.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kzoo::runner {
namespace {

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// cgroup files take one value per write(2); a short or failed write is an error
// the kernel reports through errno (EINVAL for a bad value, EBUSY, ...).
Result<void> write_text(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return fail("cannot open " + path + " for writing: " + std::strerror(errno));
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size()))
    return fail("cannot write '" + value + "' to " + path + ": " + std::strerror(err));
  return ok();
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }
bool writable(const std::string& path) { return ::access(path.c_str(), W_OK) == 0; }

// Our own group in a v1 hierarchy, from /proc/self/cgroup ("4:memory:/a/b").
std::string own_v1_group(const std::string& controller) {
  auto text = read_text("/proc/self/cgroup");
  if (!text) return "/";
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    auto a = line.find(':');
    auto b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string controllers = line.substr(a + 1, b - a - 1);
    std::istringstream cs(controllers);
    std::string c;
    while (std::getline(cs, c, ','))
      if (c == controller) return line.substr(b + 1);
  }
  return "/";
}

std::optional<std::uint64_t> read_number(const std::string& path) {
  auto text = read_text(path);
  if (!text) return std::nullopt;
  try {
    return std::stoull(*text);
  } catch (...) {
    return std::nullopt;
  }
}

// "key value" lines (memory.events, memory.oom_control).
std::optional<std::uint64_t> read_keyed(const std::string& path, const std::string& key) {
  auto text = read_text(path);
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  std::string k;
  std::uint64_t v;
  while (lines >> k >> v)
    if (k == key) return v;
  return std::nullopt;
}

// The CFS quota of `cpus` CPUs over a 100 ms period, in microseconds.
constexpr long long kCpuPeriodUs = 100000;
long long cpu_quota_us(int cpus) { return static_cast<long long>(cpus) * kCpuPeriodUs; }

// Whether the space-separated list `text` holds `word` ("cpu" is not "cpuset").
bool has_word(const std::string& text, const std::string& word) {
  std::istringstream words(text);
  std::string w;
  while (words >> w)
    if (w == word) return true;
  return false;
}

// cpu.max: "<quota> <period>".
std::string fmt_cpu_max(int cpus) { return std::to_string(cpu_quota_us(cpus)) + " " + std::to_string(kCpuPeriodUs); }

std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// mkdir of a run's group. The name holds our pid: a group a process of the same pid
// left behind when it died (a killed worker, pid since reused) is removed first when
// empty, instead of failing every run of ours that draws its name.
bool make_group(const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) == 0) return true;
  return errno == EEXIST && ::rmdir(dir.c_str()) == 0 && ::mkdir(dir.c_str(), 0755) == 0;
}

}  // namespace

const char* to_string(CgroupVersion v) {
  switch (v) {
    case CgroupVersion::v1: return "cgroup-v1";
    case CgroupVersion::v2: return "cgroup-v2";
    case CgroupVersion::none: break;
  }
  return "none";
}

CgroupVersion detect_cgroup_version(const std::string& root) {
  if (exists(root + "/cgroup.controllers")) {
    auto controllers = read_text(root + "/cgroup.controllers").value_or("");
    if (controllers.find("memory") != std::string::npos && controllers.find("pids") != std::string::npos &&
        writable(root + "/cgroup.subtree_control"))
      return CgroupVersion::v2;
    return CgroupVersion::none;
  }
  for (const char* c : {"memory", "pids"}) {
    std::string dir = root + "/" + c + own_v1_group(c);
    if (!exists(dir + "/cgroup.procs") || !writable(dir)) return CgroupVersion::none;
  }
  return CgroupVersion::v1;
}

Result<Cgroup> Cgroup::create(const CgroupLimits& limits, const std::string& root) {
  Cgroup cg;
  cg.version_ = detect_cgroup_version(root);
  std::string suffix = unique_suffix();
  if (cg.version_ == CgroupVersion::none)
    return fail("no writable cgroup hierarchy with the memory and pids controllers under " + root +
                " (cgroups need root or a delegated subtree)");

  auto make_dir = [&](const std::string& dir) -> Result<void> {
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
      return fail("cannot create cgroup " + dir + ": " + std::strerror(errno));
    return ok();
  };

  if (cg.version_ == CgroupVersion::v1) {
    for (const char* c : {"memory", "pids"}) {
      std::string dir = root + "/" + c + own_v1_group(c);
      if (dir.back() != '/') dir += '/';
      dir += "kzoo-" + suffix;
      if (!make_group(dir))
        return fail("cannot create cgroup " + dir + ": " + std::strerror(errno));
      cg.dirs_.push_back(dir);  // from here on the destructor removes it
    }
    const std::string& mem = cg.dirs_[0];
    const std::string& pids = cg.dirs_[1];
    if (limits.memory_bytes > 0) {
      if (auto r = write_text(mem + "/memory.limit_in_bytes", std::to_string(limits.memory_bytes)); !r)
        return tl::unexpected(r.error());
      // Without this, a process past the limit swaps instead of being killed
      // (when the host has swap and the kernel accounts it).
      if (exists(mem + "/memory.memsw.limit_in_bytes"))
        (void)write_text(mem + "/memory.memsw.limit_in_bytes", std::to_string(limits.memory_bytes));
    }
    if (limits.max_pids > 0)
      if (auto r = write_text(pids + "/pids.max", std::to_string(limits.max_pids)); !r)
        return tl::unexpected(r.error());
    if (limits.cpus > 0) {
      std::string base = root + "/cpu" + own_v1_group("cpu");
      if (!exists(base + "/cpu.cfs_quota_us") || !writable(base)) {
        cg.cpu_note_ = "no writable cgroup-v1 cpu hierarchy at " + base;
        return cg;
      }
      // The CPU cap is optional: a group or quota the kernel refuses leaves the run uncapped, and says so.
      std::string dir = base + (base.back() == '/' ? "" : "/") + "kzoo-" + suffix;
      if (!make_group(dir)) {
        cg.cpu_note_ = "cannot create cgroup " + dir + ": " + std::strerror(errno);
        return cg;
      }
      cg.dirs_.push_back(dir);
      auto period = write_text(dir + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUs));
      auto quota = period ? write_text(dir + "/cpu.cfs_quota_us", std::to_string(cpu_quota_us(limits.cpus))) : period;
      if (quota) cg.cpu_capped_ = true;
      else cg.cpu_note_ = quota.error().message;
    }
    return cg;
  }

  // v2: enable the controllers for root's children and for kzoo's children.
  for (const std::string& parent : {root, root + "/kzoo"}) {
    if (parent != root)
      if (auto r = make_dir(parent); !r) return tl::unexpected(r.error());
    auto enabled = read_text(parent + "/cgroup.subtree_control").value_or("");
    if (enabled.find("memory") == std::string::npos || enabled.find("pids") == std::string::npos)
      if (auto r = write_text(parent + "/cgroup.subtree_control", "+memory +pids"); !r)
        return tl::unexpected(r.error());
  }
  std::string dir = root + "/kzoo/run-" + suffix;
  if (!make_group(dir)) return fail("cannot create cgroup " + dir + ": " + std::strerror(errno));
  cg.dirs_.push_back(dir);
  if (limits.memory_bytes > 0) {
    if (auto r = write_text(dir + "/memory.max", std::to_string(limits.memory_bytes)); !r)
      return tl::unexpected(r.error());
    if (exists(dir + "/memory.swap.max")) (void)write_text(dir + "/memory.swap.max", "0");
  }
  if (limits.max_pids > 0)
    if (auto r = write_text(dir + "/pids.max", std::to_string(limits.max_pids)); !r)
      return tl::unexpected(r.error());
  if (limits.cpus > 0) {
    // The cpu controller is optional: enabled for kzoo's groups only when asked for and offered.
    bool offered = has_word(read_text(root + "/cgroup.controllers").value_or(""), "cpu");
    for (const std::string& parent : {root, root + "/kzoo"}) {
      if (!offered) break;
      const bool on = has_word(read_text(parent + "/cgroup.subtree_control").value_or(""), "cpu");
      if (!on && !write_text(parent + "/cgroup.subtree_control", "+cpu")) {
        offered = false;
        cg.cpu_note_ = "the cpu controller could not be enabled in " + parent + "/cgroup.subtree_control";
      }
    }
    if (!offered && cg.cpu_note_.empty()) cg.cpu_note_ = "no cpu controller in " + root + "/cgroup.controllers";
    if (offered) {
      if (auto r = write_text(dir + "/cpu.max", fmt_cpu_max(limits.cpus)); r) cg.cpu_capped_ = true;
      else cg.cpu_note_ = r.error().message;
    }
  }
  return cg;
}

Cgroup::Cgroup(Cgroup&& other) noexcept
    : version_(other.version_),
      dirs_(std::move(other.dirs_)),
      cpu_capped_(other.cpu_capped_),
      cpu_note_(std::move(other.cpu_note_)) {
  other.dirs_.clear();
  other.version_ = CgroupVersion::none;
}

Cgroup& Cgroup::operator=(Cgroup&& other) noexcept {
  if (this != &other) {
    (void)remove();
    version_ = other.version_;
    dirs_ = std::move(other.dirs_);
    cpu_capped_ = other.cpu_capped_;
    cpu_note_ = std::move(other.cpu_note_);
    other.dirs_.clear();
    other.version_ = CgroupVersion::none;
  }
  return *this;
}

Cgroup::~Cgroup() { (void)remove(); }

Result<void> Cgroup::add(pid_t pid) const {
  for (const auto& dir : dirs_)
    if (auto r = write_text(dir + "/cgroup.procs", std::to_string(pid)); !r) return r;
  return ok();
}

std::vector<pid_t> Cgroup::members() const {
  std::set<pid_t> pids;
  for (const auto& dir : dirs_) {
    std::ifstream in(dir + "/cgroup.procs");
    pid_t p;
    while (in >> p) pids.insert(p);
  }
  return {pids.begin(), pids.end()};
}

bool Cgroup::kill_all(int max_wait_ms) const {
  if (dirs_.empty()) return true;
  if (version_ == CgroupVersion::v2 && exists(dirs_[0] + "/cgroup.kill"))
    (void)write_text(dirs_[0] + "/cgroup.kill", "1");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(max_wait_ms);
  for (;;) {
    auto pids = members();
    if (pids.empty()) return true;
    for (pid_t p : pids) ::kill(p, SIGKILL);
    if (std::chrono::steady_clock::now() > deadline) return false;
    // Killed processes stay members until their parent reaps them.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

CgroupUsage Cgroup::usage() const {
  CgroupUsage u;
  if (dirs_.empty()) return u;
  if (version_ == CgroupVersion::v1) {
    u.oom = read_keyed(dirs_[0] + "/memory.oom_control", "oom_kill").value_or(0) > 0;
    u.peak_memory_bytes = read_number(dirs_[0] + "/memory.max_usage_in_bytes");
  } else {
    u.oom = read_keyed(dirs_[0] + "/memory.events", "oom_kill").value_or(0) > 0;
    u.peak_memory_bytes = read_number(dirs_[0] + "/memory.peak");  // Linux >= 5.19
  }
  return u;
}

Result<void> Cgroup::remove() {
  if (dirs_.empty()) return ok();
  bool empty = kill_all();
  std::string failed;
  // rmdir fails with EBUSY for a moment after the last member is reaped.
  for (const auto& dir : dirs_) {
    int err = 0;
    for (int attempt = 0; attempt < 200; ++attempt) {
      if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) {
        err = 0;
        break;
      }
      err = errno;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (err != 0) failed += (failed.empty() ? "" : ", ") + dir + " (" + std::strerror(err) + ")";
  }
  dirs_.clear();
  if (!failed.empty())
    return fail("cannot remove cgroup " + failed + (empty ? "" : "; processes survived SIGKILL"));
  return ok();
}

}  // namespace kzoo::runner
