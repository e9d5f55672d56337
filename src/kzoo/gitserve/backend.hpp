// Running git's own smart-HTTP server, Debian's git-http-backend, as a CGI
// program for one request (git-http-backend(1)): kzoo does not speak git's
// wire protocol itself. The request body (already de-chunked and inflated by
// the HTTP layer, and capped there) comes from a file; the response goes to
// an unlinked file, read back once the program has ended. For a push, one
// end of a socket pair is passed down as fd 3 (KZOO_GIT_CALLBACK_FD): the
// proc-receive hook (proc_receive.hpp) sends its one question on it and the
// calling thread answers it with `on_push` while the program runs.
//
// The program runs in a process group of its own and is killed as a group at
// `deadline_s`. It gets a minimal environment: no system or global git
// configuration, only the `config` entries given (GIT_CONFIG_COUNT), so no
// file a pusher controls can add hooks or settings.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kzoo/util/result.hpp"

namespace kzoo::gitserve {

inline constexpr const char* kHttpBackend = "/usr/lib/git-core/git-http-backend";

struct BackendRequest {
  std::string method;        // GET | POST
  std::string project_root;  // GIT_PROJECT_ROOT: the directory holding the repository
  std::string path_info;     // "/kernel_data.git/info/refs", ".../git-upload-pack", ".../git-receive-pack"
  std::string query;         // "service=git-upload-pack"
  std::string content_type;
  int body_fd = -1;          // the request body, read from offset 0 (-1: none)
  std::uint64_t body_bytes = 0;
  std::string git_protocol;  // the Git-Protocol header ("version=2")
  std::string remote_user;   // the authenticated user ("" for anonymous reads)
  std::string remote_addr;
  std::string scratch_dir;   // where the response is spooled (unlinked at once)
  std::vector<std::pair<std::string, std::string>> config;  // git config for this run only
  std::vector<std::string> env;                              // extra "K=V"
  int deadline_s = 120;
};

struct BackendResponse {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;  // CGI headers other than Status
  int body_fd = -1;          // the spooled output (unlinked; the caller closes it)
  std::uint64_t body_offset = 0, body_size = 0;
  std::string stderr_text;   // the first 64 KiB
  int exit_status = 0;       // 128 + signal when killed
  bool timed_out = false;
};

// Given the hook's question (one JSON line), returns the answer line.
using PushCallback = std::function<std::string(const std::string& question)>;

// An unlinked temporary file in `dir` (O_CLOEXEC), read and written by descriptor.
Result<int> spool_file(const std::string& dir);

// Fails only when the program cannot be started or its output is not CGI.
Result<BackendResponse> run_backend(const BackendRequest& req, const PushCallback* on_push);

}  // namespace kzoo::gitserve
