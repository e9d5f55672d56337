#include "kzoo/task/calibrate.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace kzoo::task {

namespace fs = std::filesystem;

namespace {

std::string judge_dir_of(const CalibrateOptions& o) {
  return o.judge_dir.empty() ? std::string(KZOO_SOURCE_DIR) + "/judge" : o.judge_dir;
}

// The current environment with PYTHONPATH led by the judge directory.
std::vector<std::string> child_env(const std::string& judge_dir) {
  std::vector<std::string> env;
  std::string pythonpath = judge_dir;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    if (kv.rfind("PYTHONPATH=", 0) == 0) {
      std::string old = kv.substr(11);
      if (!old.empty()) pythonpath += ":" + old;
      continue;
    }
    env.push_back(std::move(kv));
  }
  env.push_back("PYTHONPATH=" + pythonpath);
  env.push_back("PYTHONDONTWRITEBYTECODE=1");  // keep the source tree clean
  return env;
}

// Runs argv with env; stdout/stderr inherited unless `quiet` (then /dev/null).
Result<int> spawn_wait(const std::vector<std::string>& argv, const std::vector<std::string>& env, bool quiet) {
  std::vector<char*> a, e;
  for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  for (const auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
  e.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (quiet) {
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  }
  pid_t pid = 0;
  int rc = posix_spawn(&pid, a[0], &fa, nullptr, a.data(), e.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return fail("cannot run " + argv[0] + ": " + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return fail(std::string("waitpid: ") + std::strerror(errno));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 2;
}

}  // namespace

std::vector<std::string> calibrate_argv(const CalibrateOptions& o) {
  std::vector<std::string> argv = {o.python, "-m", "kzoo_judge", "calibrate", "--task-dir", o.task_dir,
                                   "--device", o.device};
  if (o.write) argv.push_back("--write");
  return argv;
}

Result<int> run_calibrate(const CalibrateOptions& o) {
  std::error_code ec;
  if (o.device != "cpu" && o.device != "cuda") {
    return fail("--device must be cpu or cuda, not \"" + o.device + "\"");
  }
  if (!fs::is_directory(o.task_dir, ec)) {
    return fail(o.task_dir + ": not a directory; give the task's folder (catalog/tasks/<name>)");
  }
  for (const char* f : {"task.json", "independent.py", "drop.py"}) {
    if (!fs::is_regular_file(fs::path(o.task_dir) / f, ec)) {
      return fail(o.task_dir + ": " + f + " is missing; calibration compares the reference with independent.py "
                  "(defines independent(*inputs)) and drop.py (defines drop(*inputs)), see docs/TASKS.md");
    }
  }
  if (access(o.python.c_str(), X_OK) != 0) {
    return fail(o.python + " is not an executable Python; install Debian's python3 and python3-torch "
                "(scripts/install-deps.sh) or pass --python");
  }
  const std::string judge = judge_dir_of(o);
  if (!fs::is_regular_file(fs::path(judge) / "kzoo_judge" / "__init__.py", ec)) {
    return fail(judge + "/kzoo_judge is missing: the judge package is not there; pass --judge-dir");
  }
  const auto env = child_env(judge);
  auto torch = spawn_wait({o.python, "-c", "import torch"}, env, true);
  if (!torch) return tl::unexpected(torch.error());
  if (*torch != 0) {
    return fail(o.python + " cannot import torch; install python3-torch (Debian) or pass --python pointing to an "
                "interpreter that has it");
  }
  auto judge_ok = spawn_wait({o.python, "-c", "import kzoo_judge"}, env, true);
  if (!judge_ok) return tl::unexpected(judge_ok.error());
  if (*judge_ok != 0) {
    return fail(judge + "/kzoo_judge does not import with " + o.python + " (run `PYTHONPATH=" + judge + " " +
                o.python + " -c 'import kzoo_judge'` to see why)");
  }
  return spawn_wait(calibrate_argv(o), env, false);
}

}  // namespace kzoo::task
