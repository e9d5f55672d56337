// A fixed thread pool for cpp-httplib whose queue of accepted connections is
// bounded (httplib's own ThreadPool queue grows without limit, LIBNOTES).
// TaskQueue::enqueue cannot refuse a connection (the task owns the socket), so
// a full queue blocks the accept loop instead: new connections then wait in
// the kernel's listen backlog, and past that the kernel refuses them. Memory
// stays bounded by threads + max_queued connections under any load.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include <httplib.h>

namespace kzoo::server {

class BoundedTaskQueue : public httplib::TaskQueue {
 public:
  BoundedTaskQueue(std::size_t threads, std::size_t max_queued) : max_queued_(max_queued) {
    for (std::size_t i = 0; i < threads; ++i) workers_.emplace_back([this] { work(); });
  }
  ~BoundedTaskQueue() override {
    if (!workers_.empty()) shutdown();
  }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock lock(mu_);
    not_full_.wait(lock, [&] { return jobs_.size() < max_queued_ || stopping_; });
    jobs_.push_back(std::move(fn));
    not_empty_.notify_one();
  }

  // Runs what is queued, then joins the threads.
  void shutdown() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    not_empty_.notify_all();
    not_full_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mu_);
        not_empty_.wait(lock, [&] { return !jobs_.empty() || stopping_; });
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
        not_full_.notify_one();
      }
      fn();
    }
  }

  std::size_t max_queued_;
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
};

}  // namespace kzoo::server
