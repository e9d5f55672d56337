// How the Slurm runner sizes its allocations (dispatcher.hpp, plan_fill): one
// pending batch job per claimable job, each asking for the GPUs its job needs
// when that is more than the partition gives a check. No Slurm here: the
// cluster tests (cluster_test.cpp) run the dispatcher against a real one.
#include "kzoo/slurm/dispatcher.hpp"

#include <gtest/gtest.h>

namespace kzoo::slurm {
namespace {

using Queued = std::map<int, std::int64_t>;
using Pending = std::map<std::string, int>;
using Sizes = std::vector<int>;
using Ids = std::vector<std::string>;

TEST(AllocationGpus, ThePartitionsUnlessTheJobNeedsMoreAndNoneOnACpuBoard) {
  EXPECT_EQ(allocation_gpus(1, 1), 1);
  EXPECT_EQ(allocation_gpus(0, 1), 1) << "a batch job asking for none still runs where checks run";
  EXPECT_EQ(allocation_gpus(4, 1), 4);
  EXPECT_EQ(allocation_gpus(1, 2), 2);
  EXPECT_EQ(allocation_gpus(4, 0), 0) << "a CPU board checks on the CPU: the job's GPU count means nothing there";
}

TEST(PlanFill, OneBatchJobPerQueuedJobUpToMaxBatch) {
  auto plan = plan_fill(Queued{{1, 3}}, Pending{}, 0, 2, 0);
  EXPECT_EQ(plan.submit, (Sizes{0, 0})) << "a CPU board: no GPUs asked; 3 queued, at most 2 out";
  EXPECT_TRUE(plan.cancel.empty());
  plan = plan_fill(Queued{{1, 3}}, Pending{{"7", 0}}, 2, 4, 0);
  EXPECT_EQ(plan.submit, (Sizes{0, 0})) << "one of the three has its batch job pending already";
}

TEST(PlanFill, AJobNeedingMoreGpusThanTheChecksGetHasAnAllocationOfItsSize) {
  auto plan = plan_fill(Queued{{1, 2}, {4, 1}}, Pending{}, 0, 8, 1);
  EXPECT_EQ(plan.submit, (Sizes{1, 4, 1}));
  plan = plan_fill(Queued{{1, 2}, {4, 1}}, Pending{{"10", 1}, {"11", 1}}, 2, 8, 1);
  EXPECT_EQ(plan.submit, (Sizes{4})) << "the single-GPU jobs have theirs: only the 4-GPU job is short";
}

TEST(PlanFill, ALargerJobIsNotKeptBehindEverySmallOneByMaxBatch) {
  auto plan = plan_fill(Queued{{1, 10}, {2, 1}}, Pending{}, 0, 2, 1);
  EXPECT_EQ(plan.submit, (Sizes{1, 2})) << "round-robin over the sizes short of a batch job";
}

TEST(PlanFill, PendingBatchJobsNoQueuedJobNeedsAreCancelledNewestFirst) {
  auto plan = plan_fill(Queued{{1, 1}}, Pending{{"9", 1}, {"12", 1}, {"10", 1}}, 3, 4, 1);
  EXPECT_EQ(plan.cancel, (Ids{"12", "10"})) << "numerically newest first; the oldest stays";
  EXPECT_TRUE(plan.submit.empty());
  plan = plan_fill(Queued{}, Pending{{"3", 4}}, 1, 4, 1);
  EXPECT_EQ(plan.cancel, (Ids{"3"})) << "the 4-GPU job it was for was cancelled or claimed";
}

TEST(PlanFill, ASmallAllocationIsNeverCountedAsALargeOnesAndTheReverse) {
  // One 4-GPU job queued and a 1-GPU batch job pending (for a job since claimed):
  // the 1-GPU one is cancelled and a 4-GPU one submitted in the same step.
  auto plan = plan_fill(Queued{{4, 1}}, Pending{{"20", 1}}, 1, 1, 1);
  EXPECT_EQ(plan.cancel, (Ids{"20"}));
  EXPECT_EQ(plan.submit, (Sizes{4})) << "the cancelled one's place under --max-batch 1 is free";
}

TEST(PlanFill, NothingIsSubmittedPastMaxBatchWithRunningOnesCounted) {
  auto plan = plan_fill(Queued{{1, 5}}, Pending{}, 4, 4, 1);
  EXPECT_TRUE(plan.submit.empty()) << "four running already";
}

}  // namespace
}  // namespace kzoo::slurm
