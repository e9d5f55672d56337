// run_sandbox(): fork, limit, exec bwrap (or the program itself with
// --no-sandbox), collect output, enforce the deadline, clean up.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kzoo/runner/cgroup.hpp"
#include "kzoo/runner/cpu_list.hpp"
#include "kzoo/runner/gpu_cpus.hpp"
#include "kzoo/runner/sandbox.hpp"
#include "kzoo/runner/seccomp.hpp"

namespace kzoo::runner {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

// A file descriptor closed on scope exit.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  ~Fd() { reset(); }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

Result<std::pair<Fd, Fd>> make_pipe() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return fail(std::string("pipe2 failed: ") + std::strerror(errno));
  return std::pair<Fd, Fd>{Fd(p[0]), Fd(p[1])};
}

Result<Fd> memfd_with(const std::string& content, const char* name) {
  Fd fd(::memfd_create(name, MFD_CLOEXEC));
  if (fd.get() < 0) return fail(std::string("memfd_create failed: ") + std::strerror(errno));
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size()) ||
      ::lseek(fd.get(), 0, SEEK_SET) != 0)
    return fail(std::string("writing a memfd failed: ") + std::strerror(errno));
  return fd;
}

// The workdir must be writable by the uid the program runs as. It is ours
// (just laid out), so handing it over is safe; links are not followed.
Result<void> chown_tree(const std::string& root, uid_t uid, gid_t gid) {
  if (::lchown(root.c_str(), uid, gid) != 0)
    return fail("cannot hand the workdir " + root + " to uid " + std::to_string(uid) + ": " + std::strerror(errno));
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (::lchown(it->path().c_str(), uid, gid) != 0)
      return fail("cannot hand " + it->path().string() + " to uid " + std::to_string(uid) + ": " +
                  std::strerror(errno));
  }
  if (ec) return fail("cannot walk the workdir " + root + ": " + ec.message());
  return ok();
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Closes every descriptor >= 3 not in `keep` (sorted), async-signal-safely.
void close_all_but(const int* keep, int nkeep) {
  unsigned lo = 3;
  for (int i = 0; i < nkeep; ++i) {
    unsigned k = static_cast<unsigned>(keep[i]);
    if (k < lo) continue;
    if (k > lo) ::syscall(SYS_close_range, lo, k - 1, 0);
    lo = k + 1;
  }
  ::syscall(SYS_close_range, lo, ~0u, 0);
}

struct ChildPlan {
  const char* path;  // program to exec
  char* const* argv;
  char* const* envp;
  const char* chdir_to;  // nullptr: stay
  int stdin_fd, stdout_fd, stderr_fd;
  int go_fd;        // read one byte before exec: we are in the cgroup
  int exec_err_fd;  // errno written here if exec fails (close-on-exec)
  const int* keep;  // sorted descriptors to keep open (cloexec cleared)
  int nkeep;
  bool drop;
  uid_t uid;
  gid_t gid;
  rlim_t nproc, as;  // RLIM_INFINITY: leave
  const cpu_set_t* affinity;  // nullptr: leave
  std::size_t affinity_size;
};

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void child_main(const ChildPlan& p) {
  auto die = [&](int err) {
    (void)!::write(p.exec_err_fd, &err, sizeof err);
    ::_exit(127);
  };
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  char go;
  if (::read(p.go_fd, &go, 1) != 1) ::_exit(127);  // parent gave up
  if (::dup2(p.stdin_fd, 0) < 0 || ::dup2(p.stdout_fd, 1) < 0 || ::dup2(p.stderr_fd, 2) < 0) die(errno);
  for (int i = 0; i < p.nkeep; ++i) {
    int flags = ::fcntl(p.keep[i], F_GETFD);
    if (flags < 0 || ::fcntl(p.keep[i], F_SETFD, flags & ~FD_CLOEXEC) < 0) die(errno);
  }
  close_all_but(p.keep, p.nkeep);
  // Before exec, so bwrap and everything the program starts inherit it.
  if (p.affinity && ::sched_setaffinity(0, p.affinity_size, p.affinity) != 0) die(errno);
  struct rlimit core{0, 0};
  ::setrlimit(RLIMIT_CORE, &core);  // no core files in the workdir
  if (p.nproc != RLIM_INFINITY) {
    struct rlimit r{p.nproc, p.nproc};
    ::setrlimit(RLIMIT_NPROC, &r);
  }
  if (p.as != RLIM_INFINITY) {
    struct rlimit r{p.as, p.as};
    ::setrlimit(RLIMIT_AS, &r);
  }
  if (p.drop) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(p.gid) != 0 || ::setuid(p.uid) != 0) die(errno);
    if (::getuid() == 0 || ::geteuid() == 0) die(EPERM);
  }
  if (p.chdir_to && ::chdir(p.chdir_to) != 0) die(errno);
  ::execve(p.path, p.argv, p.envp);
  die(errno);
  ::_exit(127);
}

// Reads what is available on `fd` into `sink`; false at EOF or error.
template <class Sink>
bool drain(int fd, Sink&& sink) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      sink(std::string_view(buf, static_cast<size_t>(n)));
      if (static_cast<size_t>(n) < sizeof buf) return true;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    return false;
  }
}

}  // namespace

// Everything a started run holds until it is waited for: its descriptors, its
// cgroup, its process, and what it has reported so far.
struct StartedSandbox::Impl {
  SandboxSpec spec;
  SandboxOptions options;
  SandboxResult result;
  std::optional<Cgroup> cgroup;
  int out_r = -1, err_r = -1, status_r = -1, pidfd = -1;  // closed by ~Impl
  pid_t pid = -1;
  bool reaped = false;

  // Only ever called while `pid` is unreaped (alive or a zombie), so its
  // process group id cannot have been recycled for someone else's group.
  void kill_everything() {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
    if (cgroup) cgroup->kill_all();
  }
  ~Impl() {
    if (pid > 0 && !reaped) {
      kill_everything();
      ::waitpid(pid, nullptr, 0);
    }
    if (cgroup) (void)cgroup->remove();
    for (int fd : {out_r, err_r, status_r, pidfd})
      if (fd >= 0) ::close(fd);
  }
};

StartedSandbox::StartedSandbox(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StartedSandbox::StartedSandbox() = default;
StartedSandbox::StartedSandbox(StartedSandbox&&) noexcept = default;
StartedSandbox& StartedSandbox::operator=(StartedSandbox&&) noexcept = default;
StartedSandbox::~StartedSandbox() = default;

pid_t StartedSandbox::pid() const { return impl_ ? impl_->pid : -1; }

bool StartedSandbox::running() const {
  if (!impl_ || impl_->reaped) return false;
  siginfo_t si{};
  return ::waitid(P_PID, static_cast<id_t>(impl_->pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == 0;
}

Result<SandboxResult> run_sandbox(const SandboxSpec& spec, const SandboxOptions& options) {
  auto started = StartedSandbox::start(spec, options);
  if (!started) return tl::unexpected(started.error());
  return started->wait(spec.wall_limit);
}

Result<StartedSandbox> StartedSandbox::start(const SandboxSpec& spec_in, const SandboxOptions& options_in) {
  auto impl = std::make_unique<Impl>();
  impl->spec = spec_in;
  impl->options = options_in;
  const SandboxSpec& spec = impl->spec;
  const SandboxOptions& options = impl->options;
  SandboxResult& result = impl->result;
  if (spec.argv.empty() || spec.argv[0].empty() || spec.argv[0][0] != '/')
    return fail("sandbox: argv[0] must be an absolute path, got '" + (spec.argv.empty() ? "" : spec.argv[0]) + "'");
  struct stat st;
  if (::stat(spec.workdir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || spec.workdir[0] != '/')
    return fail("sandbox: workdir '" + spec.workdir + "' is not an existing absolute directory");
  for (const auto& b : spec.ro_binds)
    if (b.host.empty() || b.host[0] != '/' || ::stat(b.host.c_str(), &st) != 0 || b.inside.empty() || b.inside[0] != '/')
      return fail("sandbox: read-only bind '" + b.host + "' -> '" + b.inside + "' needs an existing absolute host path and an absolute target");
  for (const auto& d : spec.devices)
    if (::stat(d.c_str(), &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
      return fail("sandbox: device '" + d + "' is not a device node on this machine");
  for (int fd : spec.pass_fds)
    if (fd < 3 || ::fcntl(fd, F_GETFD) < 0)
      return fail("sandbox: descriptor " + std::to_string(fd) + " to pass is not an open descriptor >= 3");
  if (options.sandboxed && ::access(options.bwrap.c_str(), X_OK) != 0)
    return fail("bubblewrap (bwrap) not found at " + options.bwrap +
                ": apt-get install bubblewrap, or pass --no-sandbox for a trusted local run");

  const bool root = ::geteuid() == 0;
  const uid_t run_uid = root ? options.uid : ::getuid();
  const gid_t run_gid = root ? options.gid : ::getgid();
  if (root && options.uid == 0)
    return fail("sandbox: refusing to run the program as uid 0; configure an unprivileged uid");
  if (root)
    if (auto r = chown_tree(spec.workdir, run_uid, run_gid); !r) return tl::unexpected(r.error());

  // Limits: a cgroup when we can manage one, else rlimits (with a warning).
  std::optional<Cgroup>& cgroup = impl->cgroup;
  rlim_t nproc = RLIM_INFINITY, as = RLIM_INFINITY;
  if (detect_cgroup_version(options.cgroup_root) != CgroupVersion::none) {
    auto cg = Cgroup::create({spec.memory_bytes, spec.max_pids, spec.cpus}, options.cgroup_root);
    if (!cg) return fail("sandbox: " + cg.error().message);
    cgroup.emplace(std::move(*cg));
    result.limits = to_string(cgroup->version());
    if (spec.cpus > 0 && !cgroup->cpu_capped())
      result.warnings.push_back(fmt::format("CPU time NOT capped at {} CPUs: {}", spec.cpus, cgroup->cpu_note()));
  } else {
    result.limits = "rlimit";
    std::string w = "no usable cgroup (run as root for cgroup limits): ";
    if (spec.max_pids > 0) {
      nproc = spec.max_pids;
      w += "process count limited per user with RLIMIT_NPROC; ";
    }
    if (spec.memory_bytes > 0 && spec.devices.empty()) {
      as = spec.memory_bytes;
      w += "memory limited as address space (RLIMIT_AS); ";
    } else if (spec.memory_bytes > 0) {
      w += "memory NOT limited (RLIMIT_AS breaks CUDA initialisation); ";
    }
    if (spec.cpus > 0) w += fmt::format("CPU time NOT capped at {} CPUs; ", spec.cpus);
    w += "processes that leave the process group survive until the sandbox's namespace ends";
    result.warnings.push_back(w);
  }

  // The CPUs the run may use, checked here so that a CPU this process may not
  // use is an error naming it rather than a failed exec.
  std::unique_ptr<cpu_set_t, void (*)(cpu_set_t*)> affinity(nullptr, [](cpu_set_t* p) { CPU_FREE(p); });
  const std::size_t affinity_size = CPU_ALLOC_SIZE(kMaxCpu + 1);
  if (!spec.cpu_affinity.empty()) {
    auto allowed = allowed_cpus();
    std::vector<int> missing;
    for (int c : spec.cpu_affinity)
      if (!std::binary_search(allowed.begin(), allowed.end(), c)) missing.push_back(c);
    if (!missing.empty())
      return fail("sandbox: CPUs " + format_cpu_list(missing) + " of the run's CPU set (" +
                  format_cpu_list(spec.cpu_affinity) + ") are not ones this process may run on (" +
                  format_cpu_list(allowed) + "): name CPUs from that list, or run without pinning");
    affinity.reset(CPU_ALLOC(kMaxCpu + 1));
    if (!affinity) return fail("sandbox: cannot allocate a CPU set");
    CPU_ZERO_S(affinity_size, affinity.get());
    for (int c : spec.cpu_affinity) CPU_SET_S(static_cast<std::size_t>(c), affinity_size, affinity.get());
  }

  // Descriptors for the child.
  Fd dev_null(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (dev_null.get() < 0) return fail(std::string("cannot open /dev/null: ") + std::strerror(errno));
  auto out = make_pipe();
  auto err = make_pipe();
  auto go = make_pipe();
  auto exec_err = make_pipe();
  auto status = make_pipe();
  for (auto* p : {&out, &err, &go, &exec_err, &status})
    if (!*p) return tl::unexpected(p->error());
  Fd seccomp, passwd, group;
  std::vector<int> keep(spec.pass_fds.begin(), spec.pass_fds.end());
  std::vector<std::string> args;
  if (options.sandboxed) {
    auto sc = build_seccomp_bpf_fd();
    if (!sc) return tl::unexpected(sc.error());
    seccomp = Fd(*sc);
    std::string user = "kzoo:x:" + std::to_string(run_uid) + ":" + std::to_string(run_gid) +
                       ":kzoo sandbox:/tmp:/usr/sbin/nologin\n";
    std::string grp = "kzoo:x:" + std::to_string(run_gid) + ":\n";
    auto pw = memfd_with(user, "kzoo-passwd");
    auto gr = memfd_with(grp, "kzoo-group");
    if (!pw) return tl::unexpected(pw.error());
    if (!gr) return tl::unexpected(gr.error());
    passwd = std::move(*pw);
    group = std::move(*gr);
    BwrapFds fds{seccomp.get(), status->second.get(), passwd.get(), group.get()};
    keep.insert(keep.end(), {fds.seccomp, fds.json_status, fds.passwd, fds.group});
    args = bwrap_argv(spec, options.bwrap, fds);
  } else {
    args = spec.argv;
  }
  std::sort(keep.begin(), keep.end());
  keep.erase(std::unique(keep.begin(), keep.end()), keep.end());

  std::vector<std::string> env;
  if (!options.sandboxed)
    for (const auto& [k, v] : spec.env) env.push_back(k + "=" + v);
  auto argv_c = c_strings(args);
  auto envp_c = c_strings(env);
  ChildPlan plan{args[0].c_str(), argv_c.data(), envp_c.data(),
                 options.sandboxed ? nullptr : spec.workdir.c_str(),
                 dev_null.get(), out->second.get(), err->second.get(), go->first.get(),
                 exec_err->second.get(), keep.data(), static_cast<int>(keep.size()),
                 root, run_uid, run_gid, nproc, as, affinity.get(), affinity_size};

  pid_t pid = ::fork();
  if (pid < 0) return fail(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) child_main(plan);
  impl->pid = pid;

  // Parent. Close the child's ends so EOF means "every writer is gone".
  out->second.reset();
  err->second.reset();
  go->first.reset();
  exec_err->second.reset();
  status->second.reset();

  if (cgroup) {
    if (auto r = cgroup->add(pid); !r) {
      impl->kill_everything();
      ::waitpid(pid, nullptr, 0);
      impl->reaped = true;
      return fail("sandbox: cannot place the run in its cgroup: " + r.error().message);
    }
  }
  char one = 1;
  (void)!::write(go->second.get(), &one, 1);
  go->second.reset();
  int exec_errno = 0;
  if (::read(exec_err->first.get(), &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    ::waitpid(pid, nullptr, 0);
    impl->reaped = true;
    return fail("cannot start " + args[0] + ": " + std::strerror(exec_errno));
  }
  for (int fd : {out->first.get(), err->first.get()}) ::fcntl(fd, F_SETFL, O_NONBLOCK);
  impl->out_r = out->first.release();
  impl->err_r = err->first.release();
  impl->status_r = status->first.release();
  impl->pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  return StartedSandbox(std::move(impl));
}

Result<SandboxResult> StartedSandbox::wait(std::chrono::milliseconds wall_limit) {
  if (!impl_ || impl_->reaped) return fail("sandbox: this run was already waited for");
  Impl& in = *impl_;
  const SandboxSpec& spec = in.spec;
  const SandboxOptions& options = in.options;
  SandboxResult& result = in.result;
  std::optional<Cgroup>& cgroup = in.cgroup;
  const pid_t pid = in.pid;
  auto kill_everything = [&] { in.kill_everything(); };
  const auto started = Clock::now();
  auto on_stdout = [&](std::string_view s) {
    size_t room = spec.stdout_cap - std::min(spec.stdout_cap, result.stdout_data.size());
    if (s.size() > room) result.stdout_truncated = true;
    result.stdout_data.append(s.substr(0, room));
  };
  auto on_stderr = [&](std::string_view s) {
    if (options.on_stderr) options.on_stderr(s);
    result.stderr_tail.append(s);
    if (result.stderr_tail.size() > 2 * spec.stderr_cap + 65536) {
      result.stderr_tail.erase(0, result.stderr_tail.size() - spec.stderr_cap);
      result.stderr_truncated = true;
    }
  };

  const int pidfd = in.pidfd;
  const auto deadline = started + wall_limit;
  bool out_open = true, err_open = true, exited = false;
  int wstatus = 0;
  std::optional<Clock::time_point> grace_until;  // after exit: drain, then stop waiting
  while (out_open || err_open || !exited) {
    auto now = Clock::now();
    const bool stop_now = !exited && options.should_stop && options.should_stop();
    if (stop_now) result.stopped = true;
    if (!exited && (now >= deadline || stop_now)) {
      result.timed_out = !stop_now;
      kill_everything();
      ::waitpid(pid, &wstatus, 0);
      exited = true;
      grace_until = Clock::now() + std::chrono::seconds(2);
    }
    if (grace_until && Clock::now() >= *grace_until) {
      result.warnings.push_back("output pipes still open 2 s after the program ended; stopped reading");
      break;
    }
    pollfd fds[3];
    int n = 0;
    if (out_open) fds[n++] = {in.out_r, POLLIN, 0};
    if (err_open) fds[n++] = {in.err_r, POLLIN, 0};
    if (!exited && pidfd >= 0) fds[n++] = {pidfd, POLLIN, 0};
    auto limit = grace_until ? *grace_until : deadline;
    auto wait_ms = std::chrono::duration_cast<std::chrono::milliseconds>(limit - Clock::now()).count() + 1;
    if (pidfd < 0 && !exited) wait_ms = std::min<long long>(wait_ms, 50);
    int rc = ::poll(fds, n, static_cast<int>(std::clamp<long long>(wait_ms, 0, 1000)));
    if (rc < 0 && errno != EINTR) break;
    for (int i = 0; i < n && rc > 0; ++i) {
      if (!fds[i].revents) continue;
      if (fds[i].fd == in.out_r) out_open = drain(fds[i].fd, on_stdout);
      if (fds[i].fd == in.err_r) err_open = drain(fds[i].fd, on_stderr);
    }
    if (!exited) {
      // Seen exited but not yet reaped: whatever it left behind (daemons,
      // background jobs) is killed first, then it is reaped.
      siginfo_t si{};
      if (::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) {
        kill_everything();
        ::waitpid(pid, &wstatus, 0);
        exited = true;
        grace_until = Clock::now() + std::chrono::seconds(2);
      }
    }
  }
  if (!exited) {
    kill_everything();  // the loop gave up reading: nothing of the run may outlive it
    ::waitpid(pid, &wstatus, 0);
  }
  in.reaped = true;
  result.wall = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - started);
  if (result.stderr_tail.size() > spec.stderr_cap) {
    result.stderr_tail.erase(0, result.stderr_tail.size() - spec.stderr_cap);
    result.stderr_truncated = true;
  }

  if (WIFEXITED(wstatus)) {
    result.exit_code = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    result.signal = WTERMSIG(wstatus);
  }
  if (cgroup) {
    auto usage = cgroup->usage();
    result.oom = usage.oom;
    result.peak_memory_bytes = usage.peak_memory_bytes;
    if (auto r = cgroup->remove(); !r) result.warnings.push_back(r.error().message);
    cgroup.reset();
  }
  if (options.sandboxed) {
    // bwrap's monitor (pid 1 of the sandbox, which the program cannot kill)
    // writes {"exit-code": N} when the program ends. Without it, and unless we
    // or the OOM killer ended the run, the sandbox never came up: the exit
    // status and stderr are bwrap's own, not the program's.
    std::string status_text;
    ::fcntl(in.status_r, F_SETFL, O_NONBLOCK);
    drain(in.status_r, [&](std::string_view s) { status_text.append(s); });
    if (status_text.find("\"exit-code\"") == std::string::npos && !result.timed_out && !result.stopped && !result.oom)
      return fail("sandbox setup failed (bwrap exit status " + std::to_string(result.exit_code) +
                  "): " + result.stderr_tail);
    // bwrap reports a child killed by signal N as exit status 128+N.
    if (result.signal == 0 && result.exit_code > 128 && result.exit_code < 128 + 65) {
      result.signal = result.exit_code - 128;
      result.exit_code = -1;
    }
  }
  if (result.signal != 0) result.exit_code = -1;
  return std::move(result);
}

}  // namespace kzoo::runner
