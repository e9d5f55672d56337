// sbatch's options settled against the seed's partition (batch_request.hpp):
// Slurm's time and memory forms, the default time when none is asked, and
// every refusal naming the option, the partition's maximum and the fix.
#include "kzoo/board/batch_request.hpp"

#include <gtest/gtest.h>

namespace kzoo::board {
namespace {

TEST(BatchRequest, SlurmsTimeFormsReadAsSlurmReadsThem) {
  EXPECT_EQ(*parse_slurm_time("10"), 600);          // minutes
  EXPECT_EQ(*parse_slurm_time("10:30"), 630);       // MM:SS
  EXPECT_EQ(*parse_slurm_time("01:00:00"), 3600);   // HH:MM:SS
  EXPECT_EQ(*parse_slurm_time("1-02"), 93600);      // D-HH
  EXPECT_EQ(*parse_slurm_time("1-00:00:05"), 86405);
  for (const char* bad : {"", "abc", "1:2:3:4", "-5", "10m", "0", "UNLIMITED"})
    EXPECT_FALSE(parse_slurm_time(bad)) << bad;
  EXPECT_EQ(slurm_duration(3600), "01:00:00");
  EXPECT_EQ(slurm_duration(86405), "1-00:00:05");
}

TEST(BatchRequest, MemoryIsMegabytesUnlessAUnitSaysOtherwise) {
  EXPECT_EQ(*parse_slurm_mem("4096"), 4096);
  EXPECT_EQ(*parse_slurm_mem("4G"), 4096);
  EXPECT_EQ(*parse_slurm_mem("512M"), 512);
  EXPECT_EQ(*parse_slurm_mem("1500K"), 2);
  EXPECT_FALSE(parse_slurm_mem("lots"));
  EXPECT_FALSE(parse_slurm_mem("0"));
}

TEST(BatchRequest, NoTimeIsThePartitionsDefaultAndTheRestItsOwn) {
  auto l = settle_batch({}, seed_partition());
  ASSERT_TRUE(l);
  EXPECT_EQ(l->time_s, 600);
  EXPECT_EQ(l->cpus, 1);
  EXPECT_EQ(l->memory_mb, 8192);
  EXPECT_EQ(l->gpus, 0);
  auto asked = settle_batch({"00:20:00", "4", "2G", ""}, seed_partition());
  ASSERT_TRUE(asked);
  EXPECT_EQ(asked->time_s, 1200);
  EXPECT_EQ(asked->cpus, 4);
  EXPECT_EQ(asked->memory_mb, 2048);
}

TEST(BatchRequest, OverThePartitionIsRefusedNamingTheOptionTheMaximumAndTheFix) {
  auto t = settle_batch({"02:00:00"}, seed_partition());
  ASSERT_FALSE(t);
  EXPECT_EQ(t.error().option, "--time");
  EXPECT_NE(t.error().message.find("time limit of 01:00:00"), std::string::npos) << t.error().message;
  EXPECT_NE(t.error().message.find("#SBATCH --time=01:00:00"), std::string::npos) << t.error().message;
  auto c = settle_batch({"", "8"}, seed_partition());
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().option, "--cpus-per-task");
  EXPECT_NE(c.error().message.find("4 CPUs"), std::string::npos);
  auto m = settle_batch({"", "", "16G"}, seed_partition());
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().option, "--mem");
  EXPECT_NE(m.error().message.find("8192 MB"), std::string::npos);
  auto g = settle_batch({"", "", "", "1"}, seed_partition());
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().option, "--gres");
  EXPECT_NE(g.error().message.find("no GPUs"), std::string::npos);
  EXPECT_EQ(settle_batch({"", "0"}, seed_partition()).error().option, "--cpus-per-task");
}

}  // namespace
}  // namespace kzoo::board
