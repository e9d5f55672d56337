// Keeps a claimed job's lease alive while it is graded: every lease/3 s, on
// its own transport handle (transports are one per thread), until destroyed.
// Remembers when the store refuses (the lease was lost: someone else holds
// the job now, or it was cancelled), so the grader commits nothing more.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "kzoo/jobs/transport.hpp"

namespace kzoo::jobs {

class Heartbeat {
 public:
  Heartbeat(JobTransport& t, std::int64_t job, std::string worker, int lease_seconds,
            std::function<void(std::string)> log);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;
  bool lost() const { return lost_.load(); }

 private:
  void loop(JobTransport& t, std::int64_t job, const std::string& worker, int lease,
            const std::function<void(std::string)>& log);
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> lost_{false};
  std::thread thread_;
};

}  // namespace kzoo::jobs
