// git-http-backend as a CGI program (backend.hpp).
#include "kzoo/gitserve/backend.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "kzoo/gitserve/proc_receive.hpp"

namespace kzoo::gitserve {
namespace {

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

std::string read_some(int fd, std::size_t cap) {
  std::string out;
  char buf[8192];
  ::lseek(fd, 0, SEEK_SET);
  while (out.size() < cap) {
    ssize_t r = ::read(fd, buf, std::min(sizeof buf, cap - out.size()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.append(buf, static_cast<std::size_t>(r));
  }
  return out;
}

int exit_of(int ws) { return WIFEXITED(ws) ? WEXITSTATUS(ws) : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : 1; }

}  // namespace

Result<int> spool_file(const std::string& dir) {
  std::string path = dir + "/.git-spool-XXXXXX";
  int fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) return fail(fmt::format("cannot create a spool file in {}: {}", dir, std::strerror(errno)));
  ::unlink(path.c_str());  // gone with the descriptor, even after a crash
  return fd;
}

Result<BackendResponse> run_backend(const BackendRequest& req, const PushCallback* on_push) {
  Fd in(req.body_fd >= 0 ? ::fcntl(req.body_fd, F_DUPFD_CLOEXEC, 3) : ::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (in.fd < 0) return fail(fmt::format("cannot open the request body: {}", std::strerror(errno)));
  ::lseek(in.fd, 0, SEEK_SET);
  auto out_fd = spool_file(req.scratch_dir);
  if (!out_fd) return tl::unexpected(out_fd.error());
  Fd out(*out_fd);
  auto err_fd = spool_file(req.scratch_dir);
  if (!err_fd) return tl::unexpected(err_fd.error());
  Fd err(*err_fd);
  Fd ours, theirs;
  if (on_push) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
      return fail(fmt::format("socketpair: {}", std::strerror(errno)));
    ours.fd = sv[0];
    theirs.fd = sv[1];
  }

  // Everything the child needs is built before fork(): after it, in a
  // threaded server, only async-signal-safe calls are allowed.
  std::vector<std::string> env = {
      "PATH=/usr/bin:/bin",
      "LANG=C",
      "HOME=" + req.scratch_dir,
      "GIT_CONFIG_NOSYSTEM=1",
      "GIT_CONFIG_GLOBAL=/dev/null",
      "GIT_TERMINAL_PROMPT=0",
      "GIT_PROJECT_ROOT=" + req.project_root,
      "GIT_HTTP_EXPORT_ALL=1",
      "GATEWAY_INTERFACE=CGI/1.1",
      "SERVER_PROTOCOL=HTTP/1.1",
      "REQUEST_METHOD=" + req.method,
      "PATH_INFO=" + req.path_info,
      "QUERY_STRING=" + req.query,
      "REMOTE_ADDR=" + req.remote_addr,
  };
  if (!req.content_type.empty()) env.push_back("CONTENT_TYPE=" + req.content_type);
  if (req.method == "POST") env.push_back(fmt::format("CONTENT_LENGTH={}", req.body_bytes));
  if (!req.git_protocol.empty()) env.push_back("GIT_PROTOCOL=" + req.git_protocol);
  if (!req.remote_user.empty()) env.push_back("REMOTE_USER=" + req.remote_user);
  env.push_back(fmt::format("GIT_CONFIG_COUNT={}", req.config.size()));
  for (std::size_t i = 0; i < req.config.size(); ++i) {
    env.push_back(fmt::format("GIT_CONFIG_KEY_{}={}", i, req.config[i].first));
    env.push_back(fmt::format("GIT_CONFIG_VALUE_{}={}", i, req.config[i].second));
  }
  if (on_push) env.push_back(std::string(kCallbackFdEnv) + "=3");
  for (const auto& e : req.env) env.push_back(e);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string prog = kHttpBackend;
  char* argv[] = {prog.data(), nullptr};

  pid_t pid = ::fork();
  if (pid < 0) return fail(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    ::setpgid(0, 0);
    if (::dup2(in.fd, 0) < 0 || ::dup2(out.fd, 1) < 0 || ::dup2(err.fd, 2) < 0) ::_exit(126);
    if (theirs.fd >= 0) {
      if (theirs.fd == 3) ::fcntl(3, F_SETFD, 0);
      else if (::dup2(theirs.fd, 3) < 0) ::_exit(126);
    }
    // Nothing else of the server's (client sockets, the database) reaches git.
    ::syscall(SYS_close_range, theirs.fd >= 0 ? 4u : 3u, ~0u, 0u);
    ::execve(prog.c_str(), argv, envp.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here: no race with the kill below
  if (theirs.fd >= 0) ::close(theirs.release());

  BackendResponse res;
  const long long deadline = monotonic_ms() + static_cast<long long>(req.deadline_s) * 1000;
  int ws = 0;
  bool exited = false;
  bool asked = false;
  while (!exited) {
    if (monotonic_ms() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &ws, 0);
      res.timed_out = true;
      exited = true;
      break;
    }
    if (ours.fd >= 0) {
      pollfd p{ours.fd, POLLIN, 0};
      int r = ::poll(&p, 1, 100);
      if (r > 0) {
        auto line = read_line(ours.fd, kMaxCallbackLine, deadline);
        if (!line || asked) {
          // The hook closed its end (or broke the one-question protocol): done with it.
          ::close(ours.release());
        } else {
          asked = true;
          std::string answer = (*on_push)(*line);
          (void)write_all(ours.fd, answer + "\n");
        }
      }
    } else {
      ::usleep(20000);
    }
    // Seen exited but not reaped yet (WNOWAIT): the group id cannot be reused
    // before the kill below reaches whatever the program left behind in it.
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &ws, 0);
      exited = true;
    }
  }
  res.exit_status = exit_of(ws);
  res.stderr_text = read_some(err.fd, 64u << 10);

  // The CGI head: "Name: value" lines, then an empty line.
  std::string head = read_some(out.fd, 64u << 10);
  std::size_t end = head.find("\r\n\r\n"), skip = 4;
  if (std::size_t e2 = head.find("\n\n"); e2 != std::string::npos && (end == std::string::npos || e2 < end)) {
    end = e2;
    skip = 2;
  }
  if (end == std::string::npos) {
    if (res.timed_out) return res;  // the caller answers the timeout
    return fail(fmt::format("git-http-backend exited {} without a CGI head: {}", res.exit_status,
                            res.stderr_text.substr(0, 400)));
  }
  std::size_t pos = 0;
  while (pos < end) {
    std::size_t nl = head.find('\n', pos);
    if (nl == std::string::npos || nl > end) nl = end;
    std::string line = head.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    pos = nl + 1;
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon), value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.erase(0, 1);
    if (name == "Status") res.status = std::atoi(value.c_str());
    else res.headers.emplace_back(name, value);
  }
  res.body_offset = end + skip;
  off_t size = ::lseek(out.fd, 0, SEEK_END);
  res.body_size = size > static_cast<off_t>(res.body_offset) ? static_cast<std::uint64_t>(size) - res.body_offset : 0;
  res.body_fd = out.release();
  return res;
}

}  // namespace kzoo::gitserve
