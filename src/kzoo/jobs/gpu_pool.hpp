// The GPUs of one node, shared by the job slots of `kzoo worker --gpus 0,1,...`
// (cli/cmd_worker.cpp run_per_gpu): a job takes as many as its task's
// environment.gpus asks (1 when it names none) before its sandbox starts, all
// from this node, and gives them back when it ends.
//
// No job ever holds some GPUs while it waits for more (it takes all of its
// GPUs at once), so jobs cannot deadlock each other. A job of several GPUs
// that is waiting goes before every later request, single ones included:
// otherwise a stream of one-GPU jobs would keep a multi-GPU job from ever
// seeing enough free at once. Requests are served in arrival order.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace kzoo::jobs {

class GpuPool {
 public:
  // `gpus`: the node's GPU indices as nvidia-smi numbers them (--gpus).
  explicit GpuPool(std::vector<int> gpus);

  // GPUs lent to one job; back to the pool when destroyed.
  class Lease {
   public:
    Lease() = default;
    Lease(Lease&& o) noexcept : pool_(o.pool_), gpus_(std::move(o.gpus_)) { o.pool_ = nullptr; }
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { give_back(); }
    const std::vector<int>& gpus() const { return gpus_; }  // ascending

   private:
    friend class GpuPool;
    void give_back();
    GpuPool* pool_ = nullptr;
    std::vector<int> gpus_;
  };

  std::size_t size() const { return all_.size(); }
  const std::vector<int>& all() const { return all_; }

  // Waits for `n` GPUs (1 <= n <= size(), else an empty lease at once) and
  // lends them, the lowest free indices first.
  Lease take(std::size_t n);

  // How many GPUs are free now, and how many requests wait (for logs and tests).
  std::size_t free_count() const;
  std::size_t waiting() const;

 private:
  void put_back(const std::vector<int>& gpus);

  const std::vector<int> all_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int> free_;            // ascending
  std::deque<std::uint64_t> line_;   // tickets of waiting requests, oldest first
  std::uint64_t next_ticket_ = 0;
};

}  // namespace kzoo::jobs
