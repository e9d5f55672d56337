// What a streamed body's budget (body_drain.hpp) says about each piece: kept
// within the cap, read on and thrown away past it so the refusal is read,
// and given up on past the drain's bounds or the request's deadline.
#include "kzoo/server/body_drain.hpp"

#include <gtest/gtest.h>

namespace kzoo::server {
namespace {

using Take = BodyBudget::Take;
using std::chrono::seconds;

const DrainClock::time_point t0{};

TEST(DrainLimit, IsFourTimesTheCapButNeverBelowTheFloor) {
  EXPECT_EQ(drain_limit(100ull << 20), 400ull << 20);
  EXPECT_EQ(drain_limit(1), kDrainFloor);
  EXPECT_EQ(drain_limit(UINT64_MAX), UINT64_MAX) << "no overflow";
}

TEST(BodyBudget, BytesWithinTheCapAreKept) {
  BodyBudget b(100, t0 + seconds(60));
  EXPECT_EQ(b.take(60, t0), Take::keep);
  EXPECT_EQ(b.take(40, t0), Take::keep) << "exactly the cap is within it";
  EXPECT_FALSE(b.over());
  EXPECT_EQ(b.seen(), 100u);
}

TEST(BodyBudget, PastTheCapTheRestIsReadAndThrownAwayToTheEnd) {
  BodyBudget b(100, t0 + seconds(60));
  EXPECT_EQ(b.take(100, t0), Take::keep);
  EXPECT_EQ(b.take(1, t0), Take::discard) << "the piece that crosses the cap is not stored";
  for (int i = 0; i < 100; ++i) EXPECT_EQ(b.take(1000, t0 + seconds(1)), Take::discard);
  EXPECT_TRUE(b.over());
  EXPECT_FALSE(b.cut()) << "a body read to its end is not cut";
  EXPECT_EQ(b.seen(), 100u + 1u + 100'000u) << "the size a refusal names";
}

TEST(BodyBudget, ReadingStopsPastTheDrainLimit) {
  const std::uint64_t cap = 20ull << 20;  // drain limit: 80 MiB
  BodyBudget b(cap, t0 + seconds(600));
  EXPECT_EQ(b.take(cap, t0), Take::keep);
  EXPECT_EQ(b.take(drain_limit(cap) - cap, t0), Take::discard);
  EXPECT_EQ(b.take(1, t0), Take::stop);
  EXPECT_TRUE(b.cut());
  EXPECT_EQ(b.take(1, t0), Take::stop) << "once stopped, stopped";
}

TEST(BodyBudget, ReadingStopsOnceTheDrainHasTakenItsTime) {
  BodyBudget b(100, t0 + seconds(600));
  EXPECT_EQ(b.take(101, t0 + seconds(5)), Take::discard);
  EXPECT_EQ(b.take(1, t0 + seconds(5) + kDrainTime), Take::discard);
  EXPECT_EQ(b.take(1, t0 + seconds(6) + kDrainTime), Take::stop);
  EXPECT_TRUE(b.over());
  EXPECT_TRUE(b.cut());
}

TEST(BodyBudget, TheDrainNeverOutlivesTheRequestsDeadline) {
  BodyBudget b(100, t0 + seconds(3));
  EXPECT_EQ(b.take(101, t0 + seconds(2)), Take::discard);
  EXPECT_EQ(b.take(1, t0 + seconds(4)), Take::stop);
  EXPECT_TRUE(b.cut());
}

TEST(BodyBudget, ABodyStillWithinTheCapAtTheDeadlineIsLateNotOver) {
  BodyBudget b(100, t0 + seconds(3));
  EXPECT_EQ(b.take(10, t0), Take::keep);
  EXPECT_EQ(b.take(10, t0 + seconds(4)), Take::stop);
  EXPECT_TRUE(b.late());
  EXPECT_FALSE(b.over());
}

}  // namespace
}  // namespace kzoo::server
