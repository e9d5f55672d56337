// iso8601_utc: the one way kzoo writes a time.
#include "kzoo/util/iso_time.hpp"

#include <gtest/gtest.h>

namespace kzoo {
namespace {

TEST(Iso8601Utc, WritesSecondsOrMillisecondsInUtc) {
  EXPECT_EQ(iso8601_utc(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(iso8601_utc(1'764'561'832'120), "2025-12-01T04:03:52Z");
  EXPECT_EQ(iso8601_utc(1'764'561'832'120, true), "2025-12-01T04:03:52.120Z");
  EXPECT_EQ(iso8601_utc(999, true), "1970-01-01T00:00:00.999Z");
}

TEST(Iso8601Utc, TimesBefore1970RoundDown) {
  EXPECT_EQ(iso8601_utc(-1, true), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(iso8601_utc(-1000), "1969-12-31T23:59:59Z");
}

}  // namespace
}  // namespace kzoo
