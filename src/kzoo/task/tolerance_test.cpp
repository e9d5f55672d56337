#include "kzoo/task/tolerance.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kzoo::task {
namespace {

using ::testing::HasSubstr;

TEST(ToleranceRule, TheRangeIsTwiceTheFloorToATenthOfTheDrop) {
  auto r = tolerance_range(1e-4, 1.0);
  EXPECT_DOUBLE_EQ(r.low, 2e-4);
  EXPECT_DOUBLE_EQ(r.high, 0.1);
  EXPECT_FALSE(r.empty());
  EXPECT_TRUE(r.contains(0.01));
  EXPECT_FALSE(r.contains(2e-4));  // open at both ends
  EXPECT_FALSE(r.contains(0.1));
}

TEST(ToleranceRule, ADropThatMatchesTheReferenceLeavesNoRange) {
  EXPECT_TRUE(tolerance_range(1e-7, 0.0).empty());
  EXPECT_TRUE(tolerance_range(1e-3, 1e-2).empty());  // 2E = 2e-3 is not below D/10 = 1e-3
}

TEST(ToleranceRule, AValueInsideTheRangeHasNoFindings) {
  EXPECT_TRUE(check_tolerance(0.01, 1e-4, 1.0).empty());
}

TEST(ToleranceRule, EachBoundBrokenIsOneFindingNamingTheBoundAndTheFix) {
  auto low = check_tolerance(1e-4, 1e-4, 1.0);
  ASSERT_EQ(low.size(), 1u);
  EXPECT_EQ(low[0].rule, "tolerance-floor");
  EXPECT_THAT(low[0].detail, HasSubstr("raise it above 0.0002"));
  auto high = check_tolerance(0.5, 1e-4, 1.0);
  ASSERT_EQ(high.size(), 1u);
  EXPECT_EQ(high[0].rule, "tolerance-drop");
  EXPECT_THAT(high[0].detail, HasSubstr("0.1"));
  EXPECT_EQ(check_tolerance(0.01, 0.01, 0.01).size(), 2u);
}

TEST(ToleranceRule, AStricterRuleNarrowsTheRange) {
  ToleranceRule strict{4, 100};
  auto r = tolerance_range(1e-4, 1.0, strict);
  EXPECT_DOUBLE_EQ(r.low, 4e-4);
  EXPECT_DOUBLE_EQ(r.high, 0.01);
}

}  // namespace
}  // namespace kzoo::task
