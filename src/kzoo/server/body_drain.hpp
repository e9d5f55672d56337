// A request body over its route's cap is still read, and thrown away, to its
// end before the refusal is sent (within bounds). Closing a socket that holds
// unread bytes makes the kernel answer with a reset (RFC 1122 4.2.2.13): a
// client still sending -- git pushing a pack chunked, curl without "Expect:
// 100-continue" -- then fails on its next write ("Send failure: Connection
// reset by peer") or loses the answer it had not read yet, and never learns
// that the body was too large or by how much. Reading on costs bandwidth the
// client spends anyway; the bounds below stop a client that would use it to
// hold a server thread: past drain_limit(cap) bytes in all, or kDrainTime
// after the cap was crossed, the server stops reading and closes (a reset
// then, but the client has sent several times what it was told to).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace kzoo::server {

using DrainClock = std::chrono::steady_clock;

// How long a body over its cap is read on, from the moment it crossed it.
inline constexpr std::chrono::seconds kDrainTime{10};
// Bodies over their cap are read on to at least this many bytes in all.
inline constexpr std::uint64_t kDrainFloor = 32ull << 20;

// How many bytes of a body capped at `cap` are read in all before the server
// gives up on reaching its end: four times the cap, at least kDrainFloor.
std::uint64_t drain_limit(std::uint64_t cap);

// Counts a streamed body against its cap and says what to do with each piece
// as it arrives.
class BodyBudget {
 public:
  enum class Take {
    keep,     // within the cap: store it
    discard,  // over the cap: read on and throw it away, so the refusal is read
    stop,     // over the cap past the drain's bounds, or past the deadline: stop reading
  };

  // `deadline`: when the whole request must have arrived (upload_deadline_s).
  BodyBudget(std::uint64_t cap, DrainClock::time_point deadline);

  Take take(std::size_t n, DrainClock::time_point now = DrainClock::now());

  std::uint64_t cap() const { return cap_; }
  std::uint64_t seen() const { return seen_; }  // bytes taken so far, discarded ones included
  bool over() const { return over_; }           // the body crossed the cap
  bool late() const { return late_; }           // the deadline passed before the body crossed the cap
  bool cut() const { return cut_; }             // reading stopped over the cap: the end was never seen

 private:
  std::uint64_t cap_;
  std::uint64_t limit_;
  DrainClock::time_point deadline_;
  DrainClock::time_point drain_until_{};
  std::uint64_t seen_ = 0;
  bool over_ = false, late_ = false, cut_ = false;
};

}  // namespace kzoo::server
