#include "kzoo/util/failpoint.hpp"

#include <csignal>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace kzoo::util {

void failpoint(std::string_view name) {
  static const std::string armed = [] {
    const char* v = std::getenv("KZOO_FAILPOINT");
    return std::string(v ? v : "");
  }();
  if (armed.empty() || armed != name) return;
  std::string line = "kzoo: failpoint " + std::string(name) + " reached: SIGKILL\n";
  (void)!::write(2, line.data(), line.size());
  ::kill(::getpid(), SIGKILL);
  std::abort();  // not reached: SIGKILL cannot be caught
}

}  // namespace kzoo::util
