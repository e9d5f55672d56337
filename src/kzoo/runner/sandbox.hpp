// Running one untrusted program under bubblewrap, with limits, and collecting
// what it printed. The run is described by a plain value (SandboxSpec) so the
// local runner and a Slurm job script build the same sandbox from the same
// description; run_sandbox() executes it on this machine.
//
// What the sandboxed process sees (docs/SANDBOX.md says what each part defends
// against):
//   /usr, the /bin /sbin /lib* links (or read-only binds where they are real
//   directories), a short list of /etc files (the dynamic loader's cache and
//   config, alternatives, python's config, localtime), library directories
//   named in /etc/ld.so.conf.d that lie outside /usr (GPU drivers), all
//   read-only; a generated /etc/passwd and /etc/group naming only its own uid;
//   a fresh /proc, a minimal /dev (+ the requested device nodes), tmpfs /tmp
//   and /dev/shm; the workdir read-write at kSandboxWorkdir (also the cwd);
//   the spec's extra read-only binds. Everything else of the host, including
//   /root, /home and /work, does not exist in it. The root is re-mounted
//   read-only after set-up.
//   Namespaces: user, pid, net (only `lo`, down to the host), ipc, uts,
//   cgroup; no nested user namespaces; all capabilities dropped; a new session
//   (no TIOCSTI into our terminal); killed when we die; the seccomp deny-list
//   of seccomp.hpp.
//   Launched by root, the process first drops to an unprivileged uid/gid
//   (65534 unless configured), because a user namespace made by root maps the
//   sandbox uid to the real root; the workdir is handed to that uid.
//
// Limits: wall clock (SIGKILL to everything at the deadline: timed_out), and
// memory and process count through a cgroup (cgroup.hpp; oom is reported).
// Without a usable cgroup (not root) the limits fall back to RLIMIT_NPROC and,
// for runs without devices, RLIMIT_AS (which breaks CUDA initialisation), with
// a warning in SandboxResult::warnings.
//
// Output: stdout is kept up to stdout_cap bytes, stderr's last stderr_cap
// bytes; the rest is read and discarded (flagged), so a flood neither blocks
// the program nor fills our memory.
//
// Thread-safety: run_sandbox may be called from several threads at once; it
// forks, and the child only makes async-signal-safe calls before exec.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "kzoo/util/result.hpp"

namespace kzoo::runner {

// Where the workdir appears inside the sandbox.
inline constexpr const char* kSandboxWorkdir = "/kzoo/work";

struct Bind {
  std::string host;    // absolute path on this machine; must exist
  std::string inside;  // absolute path inside the sandbox
};

struct SandboxSpec {
  std::vector<std::string> argv;  // argv[0]: absolute path of the program, as seen inside
  std::string workdir;            // host directory; read-write at kSandboxWorkdir and the cwd
  std::vector<Bind> ro_binds;     // extra read-only binds, applied in order after the workdir
                                  // (so one may cover a part of the workdir)
  std::vector<std::pair<std::string, std::string>> env;  // the complete environment
  std::vector<std::string> devices;  // device nodes passed through (e.g. gpu_device_nodes())
  std::chrono::milliseconds wall_limit{std::chrono::minutes(30)};
  std::uint64_t memory_bytes = 0;  // 0: unlimited
  std::uint64_t max_pids = 0;      // 0: unlimited
  int cpus = 0;                    // CPU time of at most this many CPUs (cgroup only); 0: unlimited
  std::vector<int> cpu_affinity;   // the CPUs it runs on (sched_setaffinity, inherited); empty: any
  std::uint64_t tmpfs_bytes = 0;   // size of /tmp and /dev/shm each; 0: the kernel's default
  std::size_t stdout_cap = 4u << 20;
  std::size_t stderr_cap = 64u << 10;
  std::vector<int> pass_fds;  // our descriptors (>= 3) the program inherits, same numbers
};

struct SandboxResult {
  int exit_code = -1;  // when the program exited; -1 when killed by a signal
  int signal = 0;      // the signal that ended it (a sandboxed exit status 128+N counts as N)
  bool timed_out = false;
  bool stopped = false;  // SandboxOptions::should_stop asked for it
  bool oom = false;
  std::string stdout_data;  // first stdout_cap bytes
  bool stdout_truncated = false;
  std::string stderr_tail;  // last stderr_cap bytes
  bool stderr_truncated = false;
  std::chrono::milliseconds wall{0};
  std::optional<std::uint64_t> peak_memory_bytes;
  std::string limits;                 // "cgroup-v1", "cgroup-v2" or "rlimit"
  std::vector<std::string> warnings;  // degraded protections, cleanup trouble

  bool exited_ok() const { return exit_code == 0 && signal == 0 && !timed_out && !stopped && !oom; }
};

// $KZOO_BWRAP when set (a bwrap unpacked from Debian's .deb on a machine
// without the package), else /usr/bin/bwrap.
std::string default_bwrap_path();

struct SandboxOptions {
  bool sandboxed = true;  // false (--no-sandbox): same argv, env, limits; no namespaces
  std::string bwrap = default_bwrap_path();
  // When running as root: the uid/gid the program runs as.
  uid_t uid = 65534;
  gid_t gid = 65534;
  std::string cgroup_root = "/sys/fs/cgroup";
  // Called with each chunk of stderr as it arrives (progress display). The
  // bytes are the program's: sanitise before printing to a terminal.
  std::function<void(std::string_view)> on_stderr;
  // Asked about once a second while the program runs; true ends the run as
  // the deadline does (everything killed), with SandboxResult::stopped set
  // (a batch job cancelled by scancel while it runs).
  std::function<bool()> should_stop;
};

// The path of host path `host` as the program will see it: inside the workdir
// or a ro_bind it is translated; with options.sandboxed == false (or for
// paths outside every bind) it is returned unchanged.
std::string visible_path(const SandboxSpec& spec, const SandboxOptions& options, const std::string& host);

// Existing NVIDIA device nodes: /dev/nvidiactl, /dev/nvidia-uvm,
// /dev/nvidia-uvm-tools, /dev/nvidia-modeset and /dev/nvidia[0-9]+.
std::vector<std::string> gpu_device_nodes(const std::string& dev = "/dev");

// The device nodes of GPUs `gpus` alone (their /dev/nvidiaN, N the driver's
// minor number, as nvidia-smi's index), with the control nodes every CUDA
// process needs. A sandbox given only these sees only these GPUs: the driver
// skips a GPU whose node it cannot open, as in containers. All GPUs when
// `gpus` is empty. An error names a GPU without its node and the ones there are.
Result<std::vector<std::string>> gpu_device_nodes_for(const std::vector<int>& gpus, const std::string& dev = "/dev");

// Descriptors run_sandbox passes to bwrap beside the spec's.
struct BwrapFds {
  int seccomp = -1;      // compiled filter (seccomp.hpp)
  int json_status = -1;  // bwrap writes {"child-pid": N} once the sandbox is up
  int passwd = -1;       // contents for /etc/passwd and /etc/group
  int group = -1;
};

// The complete bwrap command line (argv[0] = `bwrap`) for `spec`. Pure: reads
// only which system paths exist, so a Slurm job script can be generated from
// it as well.
std::vector<std::string> bwrap_argv(const SandboxSpec& spec, const std::string& bwrap, const BwrapFds& fds);

// Runs `spec`. Fails (Error) when the run could not be started or the sandbox
// could not be set up (bwrap missing, workdir missing, bwrap's own error);
// whatever the program does is reported in the SandboxResult instead. Every
// process of the run is killed and its cgroup removed before returning.
// The same as StartedSandbox::start(spec, options) then wait(spec.wall_limit).
Result<SandboxResult> run_sandbox(const SandboxSpec& spec, const SandboxOptions& options = {});

// A run started now and waited for later: the judge started ahead of its job
// (warm_judge.hpp) imports torch while the job is still being claimed and laid
// out, and its wall-clock limit counts from the wait, not from the start.
// Until wait() nothing reads its output (a program that fills a pipe blocks
// until then) and nothing limits its time; the cgroup's limits hold from the
// start. Destroying it unwaited kills every process of the run and removes its
// cgroup.
class StartedSandbox {
 public:
  // Everything of run_sandbox up to the program's exec: the same checks, the
  // same errors.
  static Result<StartedSandbox> start(const SandboxSpec& spec, const SandboxOptions& options = {});

  StartedSandbox();  // none: running() is false, wait() fails
  StartedSandbox(StartedSandbox&&) noexcept;
  StartedSandbox& operator=(StartedSandbox&&) noexcept;
  ~StartedSandbox();

  // Reads its output until it ends or `wall_limit` from now has passed (then
  // everything is killed: timed_out), as run_sandbox does; SandboxResult::wall
  // counts from this call. Once only.
  Result<SandboxResult> wait(std::chrono::milliseconds wall_limit);
  // Whether the program (bwrap's monitor, in the sandbox) has not ended yet.
  bool running() const;
  pid_t pid() const;

 private:
  struct Impl;
  explicit StartedSandbox(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kzoo::runner
