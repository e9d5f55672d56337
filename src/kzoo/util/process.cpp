#include "kzoo/util/process.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

extern char** environ;

namespace kzoo {

Result<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& o) {
  if (argv.empty()) return fail("run_process: no program");
  std::vector<char*> a, e;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  if (o.env) {
    for (const auto& s : *o.env) e.push_back(const_cast<char*>(s.c_str()));
    e.push_back(nullptr);
  }
  int fds[2] = {-1, -1};
  if (o.capture_stdout && ::pipe2(fds, O_CLOEXEC) != 0) return fail(std::string("pipe2: ") + std::strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (o.capture_stdout) posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  else posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  if (o.stderr_to_stdout && o.capture_stdout) posix_spawn_file_actions_adddup2(&fa, fds[1], STDERR_FILENO);
  else if (o.quiet_stderr) posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  if (!o.stdin_path.empty()) posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, o.stdin_path.c_str(), O_RDONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, a[0], &fa, nullptr, a.data(), o.env ? e.data() : environ);
  posix_spawn_file_actions_destroy(&fa);
  ProcessResult r;
  if (o.capture_stdout) {
    ::close(fds[1]);
    if (rc == 0) {
      char buf[65536];
      for (;;) {
        ssize_t n = ::read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (r.out.size() < o.stdout_cap)
          r.out.append(buf, std::min(static_cast<std::size_t>(n), o.stdout_cap - r.out.size()));
      }
    }
    ::close(fds[0]);
  }
  if (rc != 0) return fail("cannot run " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return fail(std::string("waitpid: ") + std::strerror(errno));
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 2;
  return r;
}

}  // namespace kzoo
