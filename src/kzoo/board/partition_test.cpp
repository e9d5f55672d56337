// The partition the board's checks run on (partition.hpp), read from the
// rules and refused when they contradict themselves, and the limits it puts
// on one check over a runner's own.
#include "kzoo/board/partition.hpp"

#include <gtest/gtest.h>

#include "kzoo/board/rules.hpp"

namespace kzoo::board {
namespace {

using nlohmann::json;
using std::chrono::seconds;

TEST(Partition, TheDemoRulesNameTheSeedsMainPartition) {
  json rules = demo_rules({"h200/norm/softmax/bf16/softmax_eager"}, "cpu");
  auto p = checks_partition(rules["benchmark"]);
  ASSERT_TRUE(p && *p) << (p ? "none" : p.error().message);
  EXPECT_EQ((*p)->name, "main");
  EXPECT_EQ((*p)->time_limit_s, 3600);
  EXPECT_EQ((*p)->default_time_s, 600);
  EXPECT_EQ((*p)->cpus, 4);
  EXPECT_EQ((*p)->memory_mb, 8192);
  EXPECT_EQ((*p)->gpus, 0);
  auto g = checks_partition(demo_rules({"h200/norm/softmax/bf16/softmax_eager"}, "h200")["benchmark"]);
  ASSERT_TRUE(g && *g);
  EXPECT_EQ((*g)->gpus, 1);
}

TEST(Partition, TheCheckNamesItsPartitionAndAnUndeclaredOneIsRefused) {
  json b = {{"checks", {{{"name", "verify"}, {"partition", "big"}}}},
            {"partitions",
             {{{"name", "main"}, {"time_limit", "01:00:00"}, {"cpus", 4}, {"memory_mb", 8192}, {"gpus", 0}},
              {{"name", "big"}, {"time_limit", "2:30:00"}, {"cpus", 16}, {"memory_mb", 65536.5}, {"gpus", 8}}}}};
  auto p = checks_partition(b);
  ASSERT_TRUE(p && *p);
  EXPECT_EQ((*p)->name, "big");
  EXPECT_EQ((*p)->default_time_s, 9000) << "no default_time: the limit";
  EXPECT_EQ((*p)->memory_mb, 65537) << "rounded up: never less than the rules give";
  b["checks"][0]["partition"] = "nowhere";
  auto bad = checks_partition(b);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("\"nowhere\""), std::string::npos) << bad.error().message;
  EXPECT_FALSE(*checks_partition(json{{"checks", json::array()}})) << "no partitions: nothing capped";
}

TEST(Partition, DurationsAreHoursMinutesSecondsAndADefaultOverTheLimitIsRefused) {
  EXPECT_EQ(*parse_duration("00:10:00", "t"), 600);
  EXPECT_EQ(*parse_duration("100:00:01", "t"), 360001);
  for (std::string bad : {"10:00", "1:60:00", "x", "-1:00:00", "1:00:00 "}) EXPECT_FALSE(parse_duration(bad, "t")) << bad;
  json b = {{"partitions",
             {{{"name", "main"}, {"time_limit", "00:10:00"}, {"default_time", "00:20:00"}, {"cpus", 1}, {"memory_mb", 1}, {"gpus", 0}}}}};
  auto p = checks_partition(b);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("default_time"), std::string::npos) << p.error().message;
}

TEST(CheckLimits, ACheckGetsThePartitionsDefaultTimeItsMemoryAndItsCpusNeverMoreThanTheRunnerAllows) {
  Partition main;  // the seed's: limit 1 h, default 10 min, 4 CPUs, 8192 MB
  main.time_limit_s = 3600;
  main.default_time_s = 600;
  main.cpus = 4;
  main.memory_mb = 8192;
  auto l = check_limits(main, seconds(1800), 0);
  EXPECT_EQ(l.timeout, seconds(600)) << "a check asks for no time: the default applies, as sbatch gives it";
  EXPECT_EQ(l.memory_bytes, 8192ull << 20);
  EXPECT_EQ(l.cpus, 4);
  // The runner's own limits win where they are lower.
  auto tight = check_limits(main, seconds(120), 1ull << 30);
  EXPECT_EQ(tight.timeout, seconds(120));
  EXPECT_EQ(tight.memory_bytes, 1ull << 30);
  // No partitions in the rules: the runner's limits, no CPU cap.
  auto none = check_limits(std::nullopt, seconds(1800), 0);
  EXPECT_EQ(none.timeout, seconds(1800));
  EXPECT_EQ(none.memory_bytes, 0u);
  EXPECT_EQ(none.cpus, 0);
  EXPECT_EQ(l.to_json(), (json{{"timeout_s", 600}, {"memory_bytes", 8192ull << 20}, {"cpus", 4}}));
}

}  // namespace
}  // namespace kzoo::board
