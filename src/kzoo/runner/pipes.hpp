// Pipes between the runner and a sandboxed harness step: the seed's (written
// now, then closed) and the verdict channel (read once every writer is gone).
#pragma once

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "kzoo/util/result.hpp"

namespace kzoo::runner {

struct Pipe {
  int r = -1, w = -1;
  Pipe() = default;
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  ~Pipe() {
    if (r >= 0) ::close(r);
    if (w >= 0) ::close(w);
  }
};

inline Result<void> open_pipe(Pipe& p) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return fail(std::string("pipe2 failed: ") + std::strerror(errno));
  p.r = fds[0];
  p.w = fds[1];
  return ok();
}

// Whatever is in the pipe once every writer is gone (the run is over and all its
// processes were killed), up to `cap` bytes; the rest is discarded.
inline std::string drain_pipe(int fd, std::size_t cap) {
  std::string out;
  char buf[4096];
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() < cap) out.append(buf, std::min<std::size_t>(static_cast<std::size_t>(n), cap - out.size()));
  }
  return out;
}

}  // namespace kzoo::runner
