#include "kzoo/server/body_drain.hpp"

#include <algorithm>
#include <limits>

namespace kzoo::server {

std::uint64_t drain_limit(std::uint64_t cap) {
  const std::uint64_t four = cap > std::numeric_limits<std::uint64_t>::max() / 4
                                 ? std::numeric_limits<std::uint64_t>::max()
                                 : cap * 4;
  return std::max(four, kDrainFloor);
}

BodyBudget::BodyBudget(std::uint64_t cap, DrainClock::time_point deadline)
    : cap_(cap), limit_(drain_limit(cap)), deadline_(deadline) {}

BodyBudget::Take BodyBudget::take(std::size_t n, DrainClock::time_point now) {
  if (cut_ || late_) return Take::stop;
  seen_ += n;
  if (!over_) {
    if (now > deadline_) {
      late_ = true;
      return Take::stop;
    }
    if (seen_ <= cap_) return Take::keep;
    over_ = true;
    // The drain never outlives the request's own deadline.
    drain_until_ = std::min(now + kDrainTime, deadline_);
  }
  if (seen_ > limit_ || now > drain_until_) {
    cut_ = true;
    return Take::stop;
  }
  return Take::discard;
}

}  // namespace kzoo::server
