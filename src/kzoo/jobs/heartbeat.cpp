#include "kzoo/jobs/heartbeat.hpp"

#include <chrono>

#include <fmt/format.h>

namespace kzoo::jobs {

Heartbeat::Heartbeat(JobTransport& t, std::int64_t job, std::string worker, int lease,
                     std::function<void(std::string)> log)
    : thread_([=, this, &t] { loop(t, job, worker, lease, log); }) {}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> g(m_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Heartbeat::loop(JobTransport& t, std::int64_t job, const std::string& worker, int lease,
                     const std::function<void(std::string)>& log) {
  auto db = t.another();  // this thread's own handle
  if (!db) {
    log("heartbeat: cannot open " + t.describe() + ": " + db.error().message);
    return;
  }
  auto period = std::chrono::milliseconds(std::max(200, lease * 1000 / 3));
  std::unique_lock<std::mutex> lk(m_);
  while (!cv_.wait_for(lk, period, [&] { return stop_; })) {
    auto r = (*db)->heartbeat(job, worker, lease);
    if (!r && (r.error().kind == store::StateError::not_holder || r.error().kind == store::StateError::wrong_state)) {
      lost_ = true;
      log(fmt::format("job {}: lease lost ({})", job, r.error().message));
      return;
    }
    if (!r) log(fmt::format("job {}: heartbeat failed, will retry: {}", job, r.error().message));
  }
}

}  // namespace kzoo::jobs
