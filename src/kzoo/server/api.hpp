// Internals of the service shared by its translation units: the request
// handlers and what they need (configuration, repository, a pool of state
// database connections, metrics, the kernel list cache). Not a public header.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "kzoo/server/config.hpp"
#include "kzoo/server/data_dir.hpp"
#include "kzoo/server/metrics.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/state_db.hpp"

namespace kzoo::server {

// One StateDb connection per request in flight (a connection is one thread's,
// state_db.hpp); connections are reused, at most one per server thread.
class DbPool {
 public:
  explicit DbPool(std::string path) : path_(std::move(path)) {}
  class Lease {
   public:
    Lease(DbPool* pool, std::unique_ptr<store::StateDb> db) : pool_(pool), db_(std::move(db)) {}
    Lease(Lease&&) = default;
    ~Lease() {
      if (db_) pool_->put(std::move(db_));
    }
    store::StateDb* operator->() { return db_.get(); }

   private:
    DbPool* pool_;
    std::unique_ptr<store::StateDb> db_;
  };
  store::StateResult<Lease> get();

 private:
  void put(std::unique_ptr<store::StateDb> db);
  std::string path_;
  std::mutex mu_;
  std::vector<std::unique_ptr<store::StateDb>> free_;
};

// The answer of GET /api/kernels for one HEAD, rebuilt when HEAD moves.
struct KernelIndex {
  std::string head;
  std::set<std::string> ids;
  std::string body;  // the JSON response
};

struct Api {
  ServerConfig cfg;
  DataPaths paths;
  store::KernelRepo repo;
  DbPool db;
  Metrics metrics;

  std::mutex index_mu;
  std::shared_ptr<const KernelIndex> index;
  // The kernel list at the current HEAD (cached per HEAD commit).
  Result<std::shared_ptr<const KernelIndex>> kernels();

  void post_submission(const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader);
  void get_submission(const httplib::Request& req, httplib::Response& res);
  void get_kernels(const httplib::Request& req, httplib::Response& res);
  void get_kernel(const httplib::Request& req, httplib::Response& res);
  void get_job_log(const httplib::Request& req, httplib::Response& res);
  void get_metrics(const httplib::Request& req, httplib::Response& res);
  // The board (board_api.cpp): JSON and pages.
  void get_board(const httplib::Request& req, httplib::Response& res);
  void get_board_version(const httplib::Request& req, httplib::Response& res);
  void get_routes(const httplib::Request& req, httplib::Response& res);
  void post_baselines(const httplib::Request& req, httplib::Response& res);
  void page_board(const httplib::Request& req, httplib::Response& res);
  void page_board_version(const httplib::Request& req, httplib::Response& res);
  void page_kernel(const httplib::Request& req, httplib::Response& res);
  void page_submission(const httplib::Request& req, httplib::Response& res);

  // Rejects submissions left `received` by a killed server; deletes stray uploads.
  Result<int> recover();
};

// {"error": {"code", "message", "field"}} (+ extra keys inside "error").
void send_error(httplib::Response& res, int status, const std::string& code, const std::string& message,
                const std::string& field = "", const nlohmann::json& extra = nullptr);
void send_json(httplib::Response& res, int status, const nlohmann::json& doc);
// StateError kind -> HTTP status (not_found 404, wrong_state/not_holder 409,
// invalid 400, busy 503, io 500).
int http_status(const store::StateError& e);
std::string iso8601(store::UnixMs ms);

}  // namespace kzoo::server
