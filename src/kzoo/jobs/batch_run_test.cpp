// Which GPUs a batch job runs on (batch_run.hpp, batch_job_gpus): on a node
// whose GPUs are a pool (`kzoo worker --gpus 0,1,...`) a batch job takes as many
// as it asked for from that pool, as a grade job does, so the two never share a
// GPU; elsewhere it runs on the worker's own GPUs.
#include "kzoo/jobs/batch_run.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace kzoo::jobs {
namespace {

GradeJobOptions pooled(std::vector<int> gpus) {
  GradeJobOptions o;
  o.device = "cuda";
  o.gpus = {gpus.front()};  // the slot's name, as cmd_worker sets it
  o.gpu_pool = std::make_shared<GpuPool>(std::move(gpus));
  return o;
}

TEST(BatchJobGpus, OnAPooledNodeTheJobTakesAllItAskedForAndGivesThemBack) {
  auto o = pooled({0, 1, 2, 3});
  {
    GpuPool::Lease lease;
    auto g = batch_job_gpus(o, 2, lease);
    ASSERT_TRUE(g) << g.error().message;
    EXPECT_EQ(*g, (std::vector<int>{0, 1})) << "two GPUs, not the slot's one";
    EXPECT_EQ(lease.gpus(), *g) << "held for as long as the script runs";
    EXPECT_EQ(o.gpu_pool->free_count(), 2u);
  }
  EXPECT_EQ(o.gpu_pool->free_count(), 4u) << "back to the pool when the job ends";
}

TEST(BatchJobGpus, NeverAGpuAGradeJobOfTheNodeHolds) {
  auto o = pooled({0, 1, 2});
  // A grade job on another slot took GPU 0 (grade_job.cpp takes its lease the same way).
  GpuPool::Lease grade = o.gpu_pool->take(1);
  ASSERT_EQ(grade.gpus(), (std::vector<int>{0}));
  GpuPool::Lease lease;
  auto g = batch_job_gpus(o, 2, lease);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(*g, (std::vector<int>{1, 2}));
}

TEST(BatchJobGpus, MoreThanTheNodeHasIsRefusedNamingTheFix) {
  auto o = pooled({0, 1});
  GpuPool::Lease lease;
  auto g = batch_job_gpus(o, 3, lease);
  ASSERT_FALSE(g);
  EXPECT_NE(g.error().message.find("asks for 3 GPUs"), std::string::npos) << g.error().message;
  EXPECT_NE(g.error().message.find("--gpus naming 3 or more"), std::string::npos) << g.error().message;
  EXPECT_TRUE(lease.gpus().empty());
  EXPECT_EQ(o.gpu_pool->free_count(), 2u) << "nothing taken";
}

TEST(BatchJobGpus, WithoutAPoolTheWorkersOwnGpus) {
  GradeJobOptions o;
  o.device = "cuda";
  o.gpus = {3};
  GpuPool::Lease lease;
  auto g = batch_job_gpus(o, 1, lease);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(*g, (std::vector<int>{3}));
  EXPECT_TRUE(lease.gpus().empty()) << "no pool, no lease";

  auto two = batch_job_gpus(o, 2, lease);
  EXPECT_FALSE(two) << "a worker of one GPU cannot run a job of two";

  o.gpus.clear();  // every GPU the machine shows
  o.gpu_count = 8;
  auto all = batch_job_gpus(o, 4, lease);
  ASSERT_TRUE(all) << all.error().message;
  EXPECT_TRUE(all->empty()) << "empty: the sandbox binds every GPU node";
}

TEST(BatchJobGpus, AJobThatAskedForNoGpuGetsNone) {
  auto o = pooled({0, 1});
  GpuPool::Lease lease;
  auto g = batch_job_gpus(o, 0, lease);
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->empty());
  EXPECT_EQ(o.gpu_pool->free_count(), 2u);
}

}  // namespace
}  // namespace kzoo::jobs
