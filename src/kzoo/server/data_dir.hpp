// The service's data directory:
//
//   DIR/kernel_data.git   the bare kernel_data repository (store::KernelRepo)
//   DIR/state.db          submissions and jobs (SQLite, WAL; -wal/-shm beside it)
//   DIR/uploads/          accepted-for-grading tarballs, "<submission-id>.tar.gz";
//                         ".incoming-*" files are uploads in progress
//   DIR/kzoo.json         the configuration `kzoo init` wrote (defaults)
//   DIR/serve.lock        held (flock) by the one `kzoo serve` using DIR
//
// One server per data directory: it owns the uploads and the submissions
// still in state `received` (being validated). Workers (`kzoo worker`) may
// share the directory; they never take serve.lock.
#pragma once

#include <string>

#include "kzoo/server/config.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::server {

struct DataPaths {
  std::string root;
  std::string repo() const { return root + "/kernel_data.git"; }
  std::string state_db() const { return root + "/state.db"; }
  std::string uploads() const { return root + "/uploads"; }
  std::string config() const { return root + "/kzoo.json"; }
  std::string lock() const { return root + "/serve.lock"; }
};

// True when `dir` holds a data directory (kernel_data.git and state.db).
bool is_data_dir(const std::string& dir);

// Creates a data directory at `dir` (absent or empty) from the catalog's
// kernel_data root: repository, state database, uploads/, kzoo.json with
// `cfg`'s settings. Refuses a directory that has anything in it. Unless the
// catalog brings a scienceslack.json, the board's demo rules are committed and
// tagged `checks`, ranking `board_device_class` ("auto": h200 when the machine
// has an NVIDIA device node, else "cpu"; docs/BOARD.md).
Result<DataPaths> init_data_dir(const std::string& dir, const std::string& catalog, const ServerConfig& cfg,
                                const std::string& board_device_class = "auto");

// An exclusive lock on DIR/serve.lock, released when destroyed (or when the
// process dies: flock locks do not outlive their holder).
class ServeLock {
 public:
  static Result<ServeLock> acquire(const DataPaths& paths);
  ServeLock(ServeLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  ServeLock& operator=(ServeLock&&) = delete;
  ~ServeLock();

 private:
  explicit ServeLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace kzoo::server
