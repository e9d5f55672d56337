// The service's data directory:
//
//   DIR/kernel_data.git   the bare kernel_data repository (store::KernelRepo)
//   DIR/state.db          submissions and jobs (SQLite, WAL; -wal/-shm beside it),
//                         unless kzoo.json's `state` names a PostgreSQL database
//   DIR/uploads/          accepted-for-grading tarballs, "<submission-id>.tar.gz";
//                         ".incoming-*" files are uploads in progress
//   DIR/kzoo.json         the configuration `kzoo init` wrote (defaults)
//   DIR/serve.lock        held (flock) by the one `kzoo serve` using DIR (SQLite state)
//   DIR/serve-<id>.lock   held by server <id> (PostgreSQL state: several servers)
//
// With SQLite, one server per data directory: it owns the uploads and the
// submissions still in state `received` (being validated). With PostgreSQL,
// several servers share the directory (on shared storage) and each owns the
// uploads it is receiving (".incoming-<id>-*") and the submissions it
// received (received_by = its id); one server per id. Workers (`kzoo worker`)
// may share the directory; they never take a serve lock.
#pragma once

#include <string>

#include "kzoo/server/config.hpp"
#include "kzoo/store/open_state.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::server {

struct DataPaths {
  explicit DataPaths(std::string root_dir, std::string state_url = "")
      : root(std::move(root_dir)), state(std::move(state_url)) {}
  std::string root;
  std::string repo() const { return root + "/kernel_data.git"; }
  std::string state_db() const { return root + "/state.db"; }
  std::string state;  // the configured state URL; empty: sqlite:DIR/state.db
  std::string state_url() const { return state.empty() ? store::default_state_url(root) : state; }
  std::string uploads() const { return root + "/uploads"; }
  std::string config() const { return root + "/kzoo.json"; }
  std::string lock() const { return root + "/serve.lock"; }
};

// True when `dir` holds a data directory (kernel_data.git, and state.db or
// the kzoo.json that names its state).
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
  // DIR/serve.lock for a SQLite state; DIR/serve-<server_id>.lock for a
  // PostgreSQL one, which several servers share.
  static Result<ServeLock> acquire(const DataPaths& paths, const std::string& server_id);
  ServeLock(ServeLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  ServeLock& operator=(ServeLock&&) = delete;
  ~ServeLock();

 private:
  explicit ServeLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace kzoo::server
