// The service's counters, exposed at GET /metrics in the Prometheus text
// format (version 0.0.4). Hand-written: prometheus-cpp is not packaged in
// Debian 12. Thread-safe: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace kzoo::server {

class Metrics {
 public:
  void count_request(const std::string& route, const std::string& method, int status);
  void count_upload_bytes(std::uint64_t n);
  // The outcome of one POST /api/submissions: "queued", "rejected" (package
  // violations, recorded) or "refused" (request errors, nothing recorded).
  void count_submission(const std::string& outcome);

  // Gauges read from the state database when the page is rendered.
  struct Gauges {
    std::map<std::string, std::int64_t> jobs_by_state;  // state -> count
    std::int64_t queue_depth = 0;
  };
  std::string render(const Gauges& g) const;

 private:
  mutable std::mutex mu_;
  std::map<std::tuple<std::string, std::string, int>, std::uint64_t> requests_;
  std::map<std::string, std::uint64_t> submissions_;
  std::uint64_t upload_bytes_ = 0;
};

// A label value escaped for the exposition format (\\, \", \n).
std::string escape_label(const std::string& v);

}  // namespace kzoo::server
