// The CPU list format as sysfs writes it and taskset reads it.
#include "kzoo/runner/cpu_list.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kzoo::runner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(CpuList, SysfsListsReadAsAscendingCpus) {
  EXPECT_THAT(*parse_cpu_list("0-3,8,10-11\n"), ElementsAre(0, 1, 2, 3, 8, 10, 11));
  EXPECT_THAT(*parse_cpu_list("5"), ElementsAre(5));
  EXPECT_THAT(*parse_cpu_list("9,2-3,2"), ElementsAre(2, 3, 9));
  EXPECT_THAT(*parse_cpu_list(""), IsEmpty());
  EXPECT_THAT(*parse_cpu_list("\n"), IsEmpty());
}

TEST(CpuList, AnythingElseIsRefusedNamingTheItem) {
  for (const char* bad : {"0-31:2", "a", "1,,2", "3-1", "-1", "1-", "0-8192", "1 ,2", ",", "1\n\n"}) {
    auto r = parse_cpu_list(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_THAT(r.error().message, HasSubstr("\"")) << bad;
  }
  EXPECT_THAT(parse_cpu_list("0-3,x").error().message, HasSubstr("\"x\" is not a CPU"));
  EXPECT_THAT(parse_cpu_list("7-2").error().message, HasSubstr("runs backwards"));
}

TEST(CpuList, FormatsAsTheShortestList) {
  EXPECT_EQ(format_cpu_list({3, 0, 1, 2, 8, 10, 11, 8}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(format_cpu_list({kMaxCpu}), std::to_string(kMaxCpu));
}

}  // namespace
}  // namespace kzoo::runner
