#include "kzoo/local/task_env.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kzoo::local {
namespace {

using ::testing::HasSubstr;
using nlohmann::json;
namespace fs = std::filesystem;

json task(json environment) { return json{{"name", "t"}, {"environment", std::move(environment)}}; }

DeviceFacts gpu(int n, std::string cap, std::string name = "NVIDIA H200") {
  return DeviceFacts{"cuda", n, std::move(name), std::move(cap)};
}

TEST(TaskEnvironment, AGpuThatHasWhatTheTaskAsksIsFine) {
  auto c = check_task_environment(task({{"gpus", 1}, {"min_compute_capability", "9.0"}, {"offline", true}}), "t.json",
                                  gpu(1, "9.0"));
  EXPECT_TRUE(c.refusals.empty());
  EXPECT_TRUE(c.notes.empty());
  // 10.0 is above 9.0: capabilities compare as numbers, not text.
  EXPECT_TRUE(check_task_environment(task({{"min_compute_capability", "9.0"}}), "t.json", gpu(1, "10.0")).refusals.empty());
}

TEST(TaskEnvironment, AnOlderGpuIsRefusedNamingTheFieldTheGpuAndTheWayOut) {
  auto c = check_task_environment(task({{"min_compute_capability", "9.0"}}), "tasks/t/task.json",
                                  gpu(1, "8.0", "NVIDIA A100-SXM4-80GB"));
  ASSERT_EQ(c.refusals.size(), 1u);
  EXPECT_THAT(c.refusals[0], HasSubstr("tasks/t/task.json"));
  EXPECT_THAT(c.refusals[0], HasSubstr("environment.min_compute_capability"));
  EXPECT_THAT(c.refusals[0], HasSubstr("NVIDIA A100-SXM4-80GB is 8.0"));
  EXPECT_THAT(c.refusals[0], HasSubstr("submit it to the service"));
  // The schema's default is 9.0: a task that says nothing still asks for it.
  EXPECT_EQ(check_task_environment(task(json::object()), "t.json", gpu(1, "8.9")).refusals.size(), 1u);
}

TEST(TaskEnvironment, TooFewGpusAreRefused) {
  auto c = check_task_environment(task({{"gpus", 2}}), "t.json", gpu(1, "9.0"));
  ASSERT_EQ(c.refusals.size(), 1u);
  EXPECT_THAT(c.refusals[0], HasSubstr("asks for 2 GPUs (environment.gpus), this machine shows 1"));
}

TEST(TaskEnvironment, SaysHowManyGpusOfOneNodeARunTakes) {
  EXPECT_EQ(check_task_environment(task({{"gpus", 4}}), "t.json", gpu(8, "9.0")).gpus, 4);
  EXPECT_EQ(check_task_environment(task(json::object()), "t.json", gpu(8, "9.0")).gpus, 1) << "one when it names none";
  EXPECT_EQ(check_task_environment(task({{"gpus", 2}}), "t.json", DeviceFacts{}).gpus, 2) << "said on the CPU too";
}

TEST(TaskEnvironment, ATaskThatNeedsTheNetworkIsRefusedEverywhere) {
  for (const auto& d : {DeviceFacts{}, gpu(1, "9.0")}) {
    auto c = check_task_environment(task({{"offline", false}}), "t.json", d);
    ASSERT_EQ(c.refusals.size(), 1u);
    EXPECT_THAT(c.refusals[0], HasSubstr("environment.offline is false"));
  }
}

TEST(TaskEnvironment, ACpuRunOfAGpuTaskIsAllowedAndSaysWhatItCannotShow) {
  auto c = check_task_environment(task({{"gpus", 1}, {"min_compute_capability", "9.0"}}), "t.json", DeviceFacts{});
  EXPECT_TRUE(c.refusals.empty());
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_THAT(c.notes[0], HasSubstr("graded on the CPU"));
  EXPECT_THAT(c.notes[0], HasSubstr("compute capability 9.0"));
}

TEST(TaskEnvironment, AMalformedCapabilityIsRefused) {
  auto c = check_task_environment(task({{"min_compute_capability", "sm_90"}}), "t.json", DeviceFacts{});
  ASSERT_EQ(c.refusals.size(), 1u);
  EXPECT_THAT(c.refusals[0], HasSubstr("\"sm_90\" is not MAJOR.MINOR"));
}

// The driver is asked through $KZOO_NVIDIA_SMI, as for the worker: the lowest
// capability among the GPUs is the machine's.
TEST(TaskEnvironment, ProbingReadsEveryGpuAndKeepsTheLowestCapability) {
  fs::path smi = fs::path(::testing::TempDir()) / "fake-nvidia-smi";
  std::ofstream(smi) << "#!/bin/sh\necho 'NVIDIA H200, 9.0'\necho 'NVIDIA A100-SXM4-80GB, 8.0'\n";
  fs::permissions(smi, fs::perms::owner_all);
  ::setenv("KZOO_NVIDIA_SMI", smi.c_str(), 1);
  auto f = probe_device("cuda");
  ::unsetenv("KZOO_NVIDIA_SMI");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(f->gpus, 2);
  EXPECT_EQ(f->gpu_name, "NVIDIA H200");
  EXPECT_EQ(f->compute_capability, "8.0");
  auto cpu = probe_device("cpu");
  ASSERT_TRUE(cpu);
  EXPECT_EQ(cpu->gpus, 0);
  ::setenv("KZOO_NVIDIA_SMI", "/nonexistent/nvidia-smi", 1);
  auto none = probe_device("cuda");
  ::unsetenv("KZOO_NVIDIA_SMI");
  ASSERT_FALSE(none);
  EXPECT_THAT(none.error().message, HasSubstr("did not report a GPU"));
}

}  // namespace
}  // namespace kzoo::local

namespace kzoo::local {
namespace {

TEST(RequiredCapability, CapabilitiesAndArchFeaturesReadAsTenths) {
  EXPECT_EQ(capability_tenths("9.0"), 90);
  EXPECT_EQ(capability_tenths("10.0"), 100);
  EXPECT_EQ(capability_tenths("8.9"), 89);
  EXPECT_EQ(capability_tenths("sm_90a"), 90);
  EXPECT_EQ(capability_tenths("sm_89"), 89);
  EXPECT_EQ(capability_tenths("sm_100a"), 100);
  for (const char* bad : {"", "9", "9.10", "sm_9", "sm_90ab", "compute_90", "9.0 "})
    EXPECT_EQ(capability_tenths(bad), std::nullopt) << bad;
}

TEST(RequiredCapability, AJobNeedsTheLargerOfTheTasksCapabilityAndThePackagesArchFeature) {
  const nlohmann::json task = {{"environment", {{"min_compute_capability", "8.0"}}}};
  EXPECT_EQ(required_capability(task, nullptr), 80);
  EXPECT_EQ(required_capability(task, {{"min_arch_feature", "sm_90a"}}), 90);
  EXPECT_EQ(required_capability(nlohmann::json::object(), nullptr), 90) << "the schema's default, 9.0";
  EXPECT_EQ(required_capability(nullptr, {{"min_arch_feature", "sm_100a"}}), 100);
  EXPECT_EQ(required_capability(nullptr, nullptr), 0) << "nothing known: any runner";
}

TEST(RequiredGpus, AJobTakesTheTasksGpusOfOneNodeAndOneWhenItNamesNone) {
  EXPECT_EQ(required_gpus({{"environment", {{"gpus", 4}}}}), 4);
  EXPECT_EQ(required_gpus({{"environment", {{"min_compute_capability", "9.0"}}}}), 1) << "the judge's one GPU";
  EXPECT_EQ(required_gpus(nullptr), 1) << "a task the server cannot find";
  EXPECT_EQ(required_gpus({{"environment", {{"gpus", 0}}}}), 1) << "as check_task_environment reads it";
  EXPECT_EQ(required_gpus({{"environment", {{"gpus", "2"}}}}), 1) << "not an integer: as check_task_environment reads it";
  const nlohmann::json task = {{"environment", {{"gpus", 2}}}};
  EXPECT_EQ(check_task_environment(task, "task.json", DeviceFacts{}).gpus, required_gpus(task))
      << "what the claim filters on is what the worker's own check takes";
}

}  // namespace
}  // namespace kzoo::local
