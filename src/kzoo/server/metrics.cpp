#include "kzoo/server/metrics.hpp"

#include <fmt/format.h>

namespace kzoo::server {

void Metrics::count_request(const std::string& route, const std::string& method, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{route, method, status}];
}

void Metrics::count_upload_bytes(std::uint64_t n) {
  std::lock_guard lock(mu_);
  upload_bytes_ += n;
}

void Metrics::count_submission(const std::string& outcome) {
  std::lock_guard lock(mu_);
  ++submissions_[outcome];
}

std::string escape_label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string Metrics::render(const Gauges& g) const {
  std::string o;
  std::lock_guard lock(mu_);
  o += "# HELP kzoo_http_requests_total HTTP requests answered, by route template, method and status.\n";
  o += "# TYPE kzoo_http_requests_total counter\n";
  for (const auto& [k, n] : requests_)
    o += fmt::format("kzoo_http_requests_total{{route=\"{}\",method=\"{}\",status=\"{}\"}} {}\n",
                     escape_label(std::get<0>(k)), escape_label(std::get<1>(k)), std::get<2>(k), n);
  o += "# HELP kzoo_submissions_total Submission uploads by outcome (queued, rejected, refused).\n";
  o += "# TYPE kzoo_submissions_total counter\n";
  for (const char* outcome : {"queued", "rejected", "refused"}) {
    auto it = submissions_.find(outcome);
    o += fmt::format("kzoo_submissions_total{{outcome=\"{}\"}} {}\n", outcome,
                     it == submissions_.end() ? 0 : it->second);
  }
  o += "# HELP kzoo_upload_bytes_total Bytes of package files received.\n";
  o += "# TYPE kzoo_upload_bytes_total counter\n";
  o += fmt::format("kzoo_upload_bytes_total {}\n", upload_bytes_);
  o += "# HELP kzoo_jobs Jobs in the state database, by state.\n";
  o += "# TYPE kzoo_jobs gauge\n";
  for (const auto& [state, n] : g.jobs_by_state)
    o += fmt::format("kzoo_jobs{{state=\"{}\"}} {}\n", escape_label(state), n);
  o += "# HELP kzoo_queue_depth Jobs waiting for a worker.\n";
  o += "# TYPE kzoo_queue_depth gauge\n";
  o += fmt::format("kzoo_queue_depth {}\n", g.queue_depth);
  return o;
}

}  // namespace kzoo::server
