// Each GPU's jobs get whole cores of the GPU's own NUMA node, never a core
// another GPU's jobs run on. The trees below are made up in the layout the
// NVIDIA driver and sysfs use.
#include "kzoo/runner/gpu_cpus.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kzoo/runner/cpu_list.hpp"
#include "kzoo/runner/test_support.hpp"

namespace kzoo::runner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::TempDir;
using testing::write_file;

struct Node {
  TempDir root;
  void gpu(int minor, const std::string& address, const std::string& cpulist) {
    write_file(root / ("proc/driver/nvidia/gpus/" + address + "/information"),
               "Model: \t\t NVIDIA H200\nIRQ:   \t\t 140\nGPU UUID: \t GPU-0\nDevice Minor: \t " + std::to_string(minor) +
                   "\nBus Location: \t " + address + "\n");
    std::string lower = address;
    for (auto& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    write_file(root / ("sys/bus/pci/devices/" + lower + "/local_cpulist"), cpulist + "\n");
  }
  // CPU c and c + `smt` are one core, for c < smt.
  void hyperthreads(int smt) {
    for (int c = 0; c < smt; ++c)
      for (int t : {c, c + smt})
        write_file(root / ("sys/devices/system/cpu/cpu" + std::to_string(t) + "/topology/thread_siblings_list"),
                   std::to_string(c) + "," + std::to_string(c + smt) + "\n");
  }
};

std::vector<int> range(int lo, int hi) {
  std::vector<int> v;
  for (int c = lo; c <= hi; ++c) v.push_back(c);
  return v;
}

TEST(GpuCpus, GpusOfOneNumaNodeSplitItsCoresAndEachKeepsBothHyperthreadsOfACore) {
  // Two sockets of 8 cores, hyperthreads numbered +16; GPUs 0,1 on socket 0 and 2,3 on socket 1.
  Node n;
  n.hyperthreads(16);
  n.gpu(0, "0000:19:00.0", "0-7,16-23");
  n.gpu(1, "0000:3B:00.0", "0-7,16-23");
  n.gpu(2, "0000:9A:00.0", "8-15,24-31");
  n.gpu(3, "0000:BA:00.0", "8-15,24-31");
  auto s = gpu_cpu_shares(range(0, 31), n.root.path());
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_EQ(format_cpu_list(s->cpus.at(0)), "0-3,16-19");
  EXPECT_EQ(format_cpu_list(s->cpus.at(1)), "4-7,20-23");
  EXPECT_EQ(format_cpu_list(s->cpus.at(2)), "8-11,24-27");
  EXPECT_EQ(format_cpu_list(s->cpus.at(3)), "12-15,28-31");
  EXPECT_THAT(s->notes, IsEmpty());
}

TEST(GpuCpus, TheShareIsTheSameWhicheverWorkerAsksAndOnlyTheCpusThisProcessMayUse) {
  Node n;
  n.gpu(0, "0000:19:00.0", "0-5");
  n.gpu(1, "0000:3b:00.0", "0-5");
  // No topology files: each CPU is a core of its own. CPU 5 is not ours (a cpuset).
  auto s = gpu_cpu_shares(range(0, 4), n.root.path());
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_THAT(s->cpus.at(0), ElementsAre(0, 1));
  EXPECT_THAT(s->cpus.at(1), ElementsAre(2, 3, 4));
}

TEST(GpuCpus, FewerCoresThanGpusGivesEachTheWholeNodeAndSaysSo) {
  Node n;
  n.gpu(0, "0000:19:00.0", "0");
  n.gpu(1, "0000:3b:00.0", "0");
  auto s = gpu_cpu_shares(range(0, 3), n.root.path());
  ASSERT_TRUE(s) << s.error().message;
  EXPECT_THAT(s->cpus.at(0), ElementsAre(0));
  EXPECT_THAT(s->cpus.at(1), ElementsAre(0));
  ASSERT_EQ(s->notes.size(), 1u);
  EXPECT_THAT(s->notes[0], HasSubstr("GPUs 0,1 share CPUs 0"));
}

TEST(GpuCpus, WhatCannotBeReadIsAnErrorNamingTheFileAndNothingIsPinned) {
  Node none;
  EXPECT_THAT(gpu_cpu_shares(range(0, 3), none.root.path()).error().message,
              HasSubstr("proc/driver/nvidia/gpus does not exist"));

  Node no_minor;
  write_file(no_minor.root / "proc/driver/nvidia/gpus/0000:19:00.0/information", "Model: H200\n");
  EXPECT_THAT(gpu_cpu_shares(range(0, 3), no_minor.root.path()).error().message, HasSubstr("no \"Device Minor: N\" line"));

  Node no_list;
  no_list.gpu(0, "0000:19:00.0", "0-3");
  std::filesystem::remove(no_list.root / "sys/bus/pci/devices/0000:19:00.0/local_cpulist");
  EXPECT_THAT(gpu_cpu_shares(range(0, 3), no_list.root.path()).error().message,
              HasSubstr("GPU 0 (0000:19:00.0): cannot read"));

  Node garbage;
  garbage.gpu(0, "0000:19:00.0", "zero");
  EXPECT_THAT(gpu_cpu_shares(range(0, 3), garbage.root.path()).error().message, HasSubstr("\"zero\" is not a CPU"));

  Node elsewhere;
  elsewhere.gpu(0, "0000:19:00.0", "8-15");
  EXPECT_THAT(gpu_cpu_shares(range(0, 3), elsewhere.root.path()).error().message,
              HasSubstr("none of its local CPUs (8-15) is one this process may use (0-3)"));
}

TEST(GpuCpus, ThisProcessMayUseAtLeastOneCpu) { EXPECT_FALSE(allowed_cpus().empty()); }

}  // namespace
}  // namespace kzoo::runner
