// `kzoo serve`: the HTTP API over one data directory (data_dir.hpp).
//
// Routes (documented in openapi.json, embedded; a test checks every route
// below is in it):
//   POST /api/submissions            multipart upload -> 202 queued | 4xx
//   GET  /api/submissions/{id}       state, verdict, per-case metrics, reasons, jobs
//   GET  /api/kernels                kernels at HEAD with summary and bench metrics
//   GET  /api/kernels/{kernel_id}    desc, bench_result and git history (ids hold slashes)
//   GET  /api/jobs/{id}/log          the job's stderr evidence (refs/jobs/<id>)
//   GET  /healthz, GET /metrics, GET /api/openapi.json
// Every error is JSON: {"error": {"code", "message", "field"}} (plus
// "violations" when a package was refused), with a matching HTTP status.
//
// Hostile clients: bodies are capped per route from Content-Length before
// anything is read; Transfer-Encoding (411) and Content-Encoding (415) are
// refused before the body is read, since cpp-httplib 0.11 checks its payload
// cap against Content-Length only; uploads stream to a file (never held in
// memory); a whole upload has a deadline besides the per-read timeout.
// Connections are held by an event-driven front door (front_door.hpp) until
// their request head is complete, within a deadline, so slow or idle clients
// hold no thread; connections are capped in total and per client address.
//
// Submissions: a request whose fields are wrong (400) or whose kernel does
// not exist (422 unknown_kernel) records nothing. A package that breaks a
// tarball or package rule is recorded as a submission in state `rejected`
// with every violation as a reason (422, with the id), and its bytes are
// deleted; a valid one is stored as uploads/<sha256>-<n>.tar.gz, recorded and
// queued (202). At start, submissions left in `received` by a killed server
// are rejected ("interrupted") and ".incoming-*" files deleted.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kzoo/server/config.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::server {

struct Route {
  std::string method;    // "GET", "POST"
  std::string path;      // OpenAPI template, e.g. "/api/kernels/{kernel_id}"
  std::string pattern;   // the regex httplib matches the request path against
};

// Every route the service registers.
const std::vector<Route>& routes();

// The OpenAPI 3 document served at /api/openapi.json (src/kzoo/server/openapi.json).
std::string_view openapi_json();
// The template of GET /slurm.sh (src/kzoo/server/slurm.sh; batch_api.cpp fills in the URL and token).
std::string_view slurm_sh();

class Service {
 public:
  // Opens (initialising it from cfg.catalog when absent or empty) the data
  // directory, takes its serve lock, cleans what a killed server left.
  static Result<std::unique_ptr<Service>> open(const ServerConfig& cfg);
  ~Service();

  // Binds cfg.listen_host:listen_port (0 = a free port); returns the port.
  Result<int> bind();
  // Serves until stop(); false if the listener failed.
  bool run();
  // Stops accepting, lets requests in flight finish. Any thread.
  void stop();
  // One line for the operator: the connection caps and timeouts in force
  // (after bind(): the total cap may be lowered to fit the fd limit).
  std::string limits_note() const;

  const std::string& data_dir() const;

 private:
  struct Impl;
  explicit Service(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kzoo::server
