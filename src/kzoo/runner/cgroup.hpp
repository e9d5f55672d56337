// One control group per sandboxed run: the memory, process-count and CPU limits,
// the "kill everything that is left" switch and the OOM / peak-memory
// readings. Both kernel interfaces are supported because our machines differ
// (LIBNOTES): cgroup v1 (separate `memory` and `pids` hierarchies, as on the
// development and CI machines) and cgroup v2 (one unified hierarchy with
// memory.max, pids.max and cgroup.kill, as on the GPU machine).
//
// Where the group lives:
//   v1: <mount>/<memory|pids|cpu>/<this process's own group>/kzoo-<pid>-<n>, i.e.
//       nested below our own group, so limits set on us still apply (cpu only
//       when a CPU cap is asked for and that hierarchy is writable).
//   v2: <mount>/kzoo/run-<pid>-<n>; the "no internal processes" rule forbids
//       nesting below the group we ourselves sit in, so a parent "kzoo" group
//       with the memory and pids controllers enabled is made at the root.
//
// Managing cgroups needs root (or a delegated subtree). Callers check
// `detect_cgroup_version()` and fall back to rlimits when it says `none`.
//
// Lifetime: the destructor kills every member and removes the group, so an
// early return or an exception can never leave a run's processes behind.
// Not thread-safe; one Cgroup belongs to one run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "kzoo/util/result.hpp"

namespace kzoo::runner {

enum class CgroupVersion { none, v1, v2 };

const char* to_string(CgroupVersion v);

struct CgroupLimits {
  std::uint64_t memory_bytes = 0;  // 0: no memory limit
  std::uint64_t max_pids = 0;      // 0: no process-count limit
  int cpus = 0;                    // CPU time of at most this many CPUs (CFS quota); 0: no cap
};

struct CgroupUsage {
  bool oom = false;                                 // the kernel OOM-killed a member
  std::optional<std::uint64_t> peak_memory_bytes;   // high-water mark, when the kernel reports it
};

// Which interface this process can use to make limited groups: v2 when the
// unified hierarchy with the memory and pids controllers is mounted at `root`
// and writable, v1 when both the memory and pids hierarchies are, else none.
CgroupVersion detect_cgroup_version(const std::string& root = "/sys/fs/cgroup");

class Cgroup {
 public:
  // Creates the group and writes its limits. Fails (naming the file) when a
  // directory cannot be made or the memory or process limit cannot be
  // written; nothing is left behind on failure. The CPU cap alone is
  // optional: when it cannot be set, cpu_capped() is false and cpu_note() says why.
  static Result<Cgroup> create(const CgroupLimits& limits, const std::string& root = "/sys/fs/cgroup");

  Cgroup(Cgroup&& other) noexcept;
  Cgroup& operator=(Cgroup&& other) noexcept;
  Cgroup(const Cgroup&) = delete;
  Cgroup& operator=(const Cgroup&) = delete;
  ~Cgroup();

  CgroupVersion version() const { return version_; }
  // Whether limits.cpus was applied: the cpu controller is optional (a
  // kernel or a delegation may lack it); the caller warns when it was not.
  bool cpu_capped() const { return cpu_capped_; }
  // Why it was not, when asked for: names the file or the controller missing.
  const std::string& cpu_note() const { return cpu_note_; }
  // One directory per hierarchy (v1: memory and pids; v2: one).
  const std::vector<std::string>& dirs() const { return dirs_; }

  // Moves process `pid` (and so, later, all its descendants) into the group.
  Result<void> add(pid_t pid) const;

  // Pids currently in the group (union over hierarchies).
  std::vector<pid_t> members() const;

  // SIGKILLs every member, repeating until the group is empty (a member may
  // fork between one read of the member list and the kill) or `max_wait_ms`
  // passes. v2 uses cgroup.kill when the kernel has it. True if empty.
  bool kill_all(int max_wait_ms = 5000) const;

  CgroupUsage usage() const;

  // kill_all(), then rmdir every directory. Idempotent; the destructor calls it.
  Result<void> remove();

 private:
  Cgroup() = default;
  CgroupVersion version_ = CgroupVersion::none;
  std::vector<std::string> dirs_;
  bool cpu_capped_ = false;
  std::string cpu_note_;
};

}  // namespace kzoo::runner
