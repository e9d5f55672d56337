#include "kzoo/util/failpoint.hpp"

#include <csignal>
#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace kzoo::util {
namespace {

// Runs failpoint(reached) in a forked child with KZOO_FAILPOINT=armed (set
// before the child's first call, which caches it). Returns the wait status.
int run_child(const char* armed, const char* reached) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (armed) ::setenv("KZOO_FAILPOINT", armed, 1); else ::unsetenv("KZOO_FAILPOINT");
    failpoint(reached);
    ::_exit(7);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

TEST(Failpoint, TheArmedNameKillsTheProcessWithSigkill) {
  int st = run_child("repo.accept.before-ref", "repo.accept.before-ref");
  ASSERT_TRUE(WIFSIGNALED(st));
  EXPECT_EQ(WTERMSIG(st), SIGKILL);
}

TEST(Failpoint, AnyOtherNameOrNoneArmedReturns) {
  for (auto [armed, reached] : {std::pair<const char*, const char*>{"worker.before-complete", "repo.accept.before-ref"},
                                {nullptr, "worker.before-complete"},
                                {"", "worker.before-complete"},
                                {"worker.before", "worker.before-complete"}}) {
    int st = run_child(armed, reached);
    ASSERT_TRUE(WIFEXITED(st)) << (armed ? armed : "(unset)");
    EXPECT_EQ(WEXITSTATUS(st), 7);
  }
}

}  // namespace
}  // namespace kzoo::util
