#include "kzoo/jobs/gpu_pool.hpp"

#include <algorithm>

namespace kzoo::jobs {

GpuPool::GpuPool(std::vector<int> gpus) : all_([&] {
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  return gpus;
}()), free_(all_) {}

GpuPool::Lease& GpuPool::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    give_back();
    pool_ = o.pool_;
    gpus_ = std::move(o.gpus_);
    o.pool_ = nullptr;
  }
  return *this;
}

void GpuPool::Lease::give_back() {
  if (pool_ && !gpus_.empty()) pool_->put_back(gpus_);
  pool_ = nullptr;
  gpus_.clear();
}

GpuPool::Lease GpuPool::take(std::size_t n) {
  Lease lease;
  if (n == 0 || n > all_.size()) return lease;
  std::unique_lock lock(mu_);
  const std::uint64_t ticket = next_ticket_++;
  line_.push_back(ticket);
  // Only the head of the line may take: a later request never overtakes one
  // that is waiting for more GPUs than are free.
  cv_.wait(lock, [&] { return line_.front() == ticket && free_.size() >= n; });
  line_.pop_front();
  lease.pool_ = this;
  lease.gpus_.assign(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(n));
  free_.erase(free_.begin(), free_.begin() + static_cast<std::ptrdiff_t>(n));
  lock.unlock();
  cv_.notify_all();  // the next in line may be served by what is still free
  return lease;
}

void GpuPool::put_back(const std::vector<int>& gpus) {
  {
    std::lock_guard lock(mu_);
    free_.insert(free_.end(), gpus.begin(), gpus.end());
    std::sort(free_.begin(), free_.end());
  }
  cv_.notify_all();
}

std::size_t GpuPool::free_count() const {
  std::lock_guard lock(mu_);
  return free_.size();
}

std::size_t GpuPool::waiting() const {
  std::lock_guard lock(mu_);
  return line_.size();
}

}  // namespace kzoo::jobs
