// A node's GPUs shared by its job slots (gpu_pool.hpp): a job gets all the
// GPUs its task asks for at once, never a GPU another job holds, and a job of
// several GPUs is not starved by single ones.
#include "kzoo/jobs/gpu_pool.hpp"
#include "kzoo/jobs/grade_job.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

namespace kzoo::jobs {
namespace {

using namespace std::chrono_literals;

// Polls `cond` for up to 10 s: threads in these tests signal nothing else.
template <class F>
bool eventually(F cond) {
  for (int i = 0; i < 10'000; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return cond();
}

TEST(GpuPool, LendsTheLowestFreeIndicesAndTakesThemBackWhenTheLeaseEnds) {
  GpuPool pool({3, 1, 0, 2, 1});
  EXPECT_EQ(pool.all(), (std::vector<int>{0, 1, 2, 3})) << "sorted, each GPU once";
  {
    auto a = pool.take(1);
    auto b = pool.take(2);
    EXPECT_EQ(a.gpus(), (std::vector<int>{0}));
    EXPECT_EQ(b.gpus(), (std::vector<int>{1, 2}));
    EXPECT_EQ(pool.free_count(), 1u);
    GpuPool::Lease moved = std::move(b);
    EXPECT_EQ(moved.gpus(), (std::vector<int>{1, 2}));
    EXPECT_EQ(pool.free_count(), 1u) << "moving a lease returns nothing";
  }
  EXPECT_EQ(pool.free_count(), 4u);
}

TEST(GpuPool, ARequestNoNodeCanMeetGetsNothingAtOnce) {
  GpuPool pool({0, 1});
  EXPECT_TRUE(pool.take(3).gpus().empty());
  EXPECT_TRUE(pool.take(0).gpus().empty());
  EXPECT_EQ(pool.free_count(), 2u);
}

TEST(GpuPool, AJobOfSeveralGpusWaitingGoesBeforeALaterSingleOne) {
  GpuPool pool({0, 1});
  auto first = pool.take(1);  // a one-GPU job is running on GPU 0
  std::vector<int> big_got, small_got;
  std::atomic<bool> small_done{false};
  std::thread big([&] {
    auto l = pool.take(2);
    big_got = l.gpus();
    std::this_thread::sleep_for(20ms);
  });
  ASSERT_TRUE(eventually([&] { return pool.waiting() == 1; }));
  std::thread small([&] {
    auto l = pool.take(1);
    small_got = l.gpus();
    small_done = true;
  });
  ASSERT_TRUE(eventually([&] { return pool.waiting() == 2; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(small_done) << "GPU 1 is free, but the two-GPU job waiting for it came first";
  first = GpuPool::Lease();
  big.join();
  small.join();
  EXPECT_EQ(big_got, (std::vector<int>{0, 1}));
  EXPECT_EQ(small_got.size(), 1u);
  EXPECT_EQ(pool.free_count(), 2u);
}

TEST(GpuPool, ManyJobsOfMixedSizesNeverShareAGpuAndAllFinish) {
  GpuPool pool({0, 1, 2, 3});
  std::vector<std::atomic<int>> holders(4);
  std::atomic<int> overlaps{0}, done{0};
  std::vector<std::thread> slots;
  for (int t = 0; t < 8; ++t)
    slots.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < 150; ++i) {
        auto lease = pool.take(1 + rng() % 4);
        for (int g : lease.gpus())
          if (holders[g].fetch_add(1) != 0) ++overlaps;
        std::this_thread::yield();
        for (int g : lease.gpus()) holders[g].fetch_sub(1);
        ++done;
      }
    });
  for (auto& s : slots) s.join();
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(done.load(), 8 * 150) << "no deadlock: every job got its GPUs";
  EXPECT_EQ(pool.free_count(), 4u);
}

// A job runs on the CPUs of the GPUs it took (runner/gpu_cpus.hpp), all of
// them; a GPU without a share leaves the whole job unpinned rather than
// squeezed onto the others' cores.
TEST(GpuPool, AJobRunsOnTheCpusOfTheGpusItTook) {
  GradeJobOptions o;
  EXPECT_TRUE(o.cpus_for({0}).empty());
  o.gpu_cpus = {{0, {0, 1, 16, 17}}, {1, {2, 3, 18, 19}}, {2, {8, 9}}};
  EXPECT_EQ(o.cpus_for({1}), (std::vector<int>{2, 3, 18, 19}));
  EXPECT_EQ(o.cpus_for({0, 1}), (std::vector<int>{0, 1, 2, 3, 16, 17, 18, 19}));
  EXPECT_TRUE(o.cpus_for({2, 5}).empty());
  EXPECT_TRUE(o.cpus_for({}).empty());
}

}  // namespace
}  // namespace kzoo::jobs
