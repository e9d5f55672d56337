// The partition a check asks Slurm for (partition.hpp): read from the
// board's rules, turned into sbatch options, and refused when the rules
// contradict themselves.
#include "kzoo/slurm/partition.hpp"

#include <gtest/gtest.h>

#include "kzoo/board/rules.hpp"

namespace kzoo::slurm {
namespace {

using nlohmann::json;

TEST(Partition, TheDemoRulesAskForTheSeedsMainPartition) {
  json rules = board::demo_rules({"h200/norm/softmax/bf16/softmax_eager"}, "cpu");
  auto p = checks_partition(rules["benchmark"]);
  ASSERT_TRUE(p && *p) << (p ? "none" : p.error().message);
  EXPECT_EQ((*p)->name, "main");
  EXPECT_EQ((*p)->time_limit_s, 3600);
  EXPECT_EQ((*p)->default_time_s, 600);
  EXPECT_EQ((*p)->cpus, 4);
  EXPECT_EQ((*p)->memory_mb, 8192);
  EXPECT_EQ((*p)->gpus, 0);
  EXPECT_EQ(sbatch_options(**p), (std::vector<std::string>{"--partition=main", "--time=0-00:10:00",
                                                           "--cpus-per-task=4", "--mem=8192M"}));
  auto gpu = board::demo_rules({"h200/norm/softmax/bf16/softmax_eager"}, "h200");
  auto g = checks_partition(gpu["benchmark"]);
  ASSERT_TRUE(g && *g);
  EXPECT_EQ(sbatch_options(**g).back(), "--gres=gpu:1");
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
  EXPECT_EQ(slurm_duration(90061), "1-01:01:01");
  json b = {{"partitions",
             {{{"name", "main"}, {"time_limit", "00:10:00"}, {"default_time", "00:20:00"}, {"cpus", 1}, {"memory_mb", 1}, {"gpus", 0}}}}};
  auto p = checks_partition(b);
  ASSERT_FALSE(p);
  EXPECT_NE(p.error().message.find("default_time"), std::string::npos) << p.error().message;
}

}  // namespace
}  // namespace kzoo::slurm
