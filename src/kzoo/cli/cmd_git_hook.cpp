// `kzoo git-proc-receive`: the proc-receive hook `kzoo serve` installs for
// pushes over HTTP (gitserve/proc_receive.hpp, docs/GIT.md). Hidden from
// --help: git runs it, never a person. It has no authority of its own; it
// relays git's commands to the server thread that authenticated the push, on
// the socket named by KZOO_GIT_CALLBACK_FD, and git's answer back.
#include <cstdlib>
#include <string>

#include "kzoo/cli/command.hpp"
#include "kzoo/gitserve/proc_receive.hpp"

namespace cmd_git_hook {  // per command: a unity build joins commands (CMakeLists.txt)

const bool registered = kzoo::cli::register_command(
    "git-proc-receive", "", [](CLI::App& sub) -> kzoo::cli::Runner {
      sub.group("");  // hidden: git's hook, not a verb
      return [] {
        int fd = -1;
        if (const char* v = std::getenv(kzoo::gitserve::kCallbackFdEnv)) {
          const std::string s = v;
          if (!s.empty() && s.size() < 4 && s.find_first_not_of("0123456789") == std::string::npos) fd = std::stoi(s);
        }
        return kzoo::gitserve::run_proc_receive(0, 1, fd, 2);
      };
    });

}  // namespace
