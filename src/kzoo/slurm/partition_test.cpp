// The sbatch options a check asks Slurm for (partition.hpp): exactly the
// partition the board's rules name (board/partition.hpp), at its default time.
#include "kzoo/slurm/partition.hpp"

#include <gtest/gtest.h>

#include "kzoo/board/rules.hpp"

namespace kzoo::slurm {
namespace {

TEST(Sbatch, TheDemoRulesAskForTheSeedsMainPartition) {
  auto rules = board::demo_rules({"h200/norm/softmax/bf16/softmax_eager"}, "cpu");
  auto p = board::checks_partition(rules["benchmark"]);
  ASSERT_TRUE(p && *p) << (p ? "none" : p.error().message);
  EXPECT_EQ(sbatch_options(**p), (std::vector<std::string>{"--partition=main", "--time=0-00:10:00",
                                                           "--cpus-per-task=4", "--mem=8192M"}));
  auto gpu = board::demo_rules({"h200/norm/softmax/bf16/softmax_eager"}, "h200");
  auto g = board::checks_partition(gpu["benchmark"]);
  ASSERT_TRUE(g && *g);
  EXPECT_EQ(sbatch_options(**g).back(), "--gres=gpu:1");
}

TEST(Sbatch, DurationsAreSlurmsDaysHoursMinutesSeconds) {
  EXPECT_EQ(slurm_duration(90061), "1-01:01:01");
  EXPECT_EQ(slurm_duration(600), "0-00:10:00");
}

}  // namespace
}  // namespace kzoo::slurm
