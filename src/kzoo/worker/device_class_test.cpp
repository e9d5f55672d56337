// The device class of a worker's results is read from the device, never assumed.
#include "kzoo/worker/device_class.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "kzoo/format/json_text.hpp"
#include "kzoo/runner/test_support.hpp"
#include "kzoo/server/data_dir.hpp"
#include "kzoo/store/open_state.hpp"
#include "kzoo/worker/worker.hpp"

namespace kzoo::worker {
namespace {

using nlohmann::json;
using runner::testing::TempDir;

json catalog_table() {
  const std::string path = std::string(KZOO_SOURCE_DIR) + "/catalog/device_classes.json";
  auto j = format::parse_json(runner::testing::read_file(path), path);
  EXPECT_TRUE(j.has_value());
  return j ? *j : json();
}

// KZOO_NVIDIA_SMI set to a script printing `line` (exit `code`) for the scope's life.
class FakeSmi {
 public:
  FakeSmi(const std::string& line, int code = 0) {
    path_ = dir_ / "nvidia-smi";
    runner::testing::write_file(path_, "#!/bin/sh\nprintf '%s\\n' '" + line + "'\nexit " + std::to_string(code) + "\n");
    ::chmod(path_.c_str(), 0755);
    ::setenv("KZOO_NVIDIA_SMI", path_.c_str(), 1);
  }
  ~FakeSmi() { ::unsetenv("KZOO_NVIDIA_SMI"); }

 private:
  TempDir dir_;
  std::string path_;
};

TEST(DeviceClass, TheGpusNameFromTheDriverPicksItsClass) {
  FakeSmi smi("NVIDIA H200, 550.54.15");
  auto g = probe_gpu();
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->name, "NVIDIA H200");
  EXPECT_EQ(g->driver, "550.54.15");
  auto dc = pick_device_class("cuda", "", *g, catalog_table(), "device_classes.json");
  ASSERT_TRUE(dc) << dc.error().message;
  EXPECT_EQ(*dc, "h200");
}

TEST(DeviceClass, TheCatalogsPatternsTellTheKnownGpusApart) {
  const json t = catalog_table();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"NVIDIA H200", "h200"},           {"NVIDIA H200 NVL", "h200"}, {"NVIDIA H100 80GB HBM3", "h100"},
      {"NVIDIA H100 SXM5 80GB", "h100"}, {"NVIDIA H100 PCIe", ""},     {"NVIDIA A100-SXM4-80GB", ""}};
  for (const auto& [name, want] : cases) {
    auto hits = classes_matching(t, name);
    if (want.empty()) EXPECT_TRUE(hits.empty()) << name;
    else EXPECT_EQ(hits, std::vector<std::string>{want}) << name;
  }
}

TEST(DeviceClass, AGpuNoClassMatchesRefusesUnlessTheOperatorNamesTheClass) {
  GpuInfo a100{"NVIDIA A100-SXM4-80GB", "550.54.15"};
  auto refused = pick_device_class("cuda", "", a100, catalog_table(), "device_classes.json");
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("A100"), std::string::npos) << refused.error().message;
  EXPECT_NE(refused.error().message.find("--device-class"), std::string::npos) << refused.error().message;
  auto named = pick_device_class("cuda", "h100", a100, catalog_table(), "device_classes.json");
  ASSERT_TRUE(named) << named.error().message;
  EXPECT_EQ(*named, "h100");
  EXPECT_FALSE(pick_device_class("cuda", "", std::nullopt, catalog_table(), "x"));
}

TEST(DeviceClass, ANamedClassMayNotContradictTheGpuOrBeUnknown) {
  GpuInfo h200{"NVIDIA H200", ""};
  auto r = pick_device_class("cuda", "h100", h200, catalog_table(), "device_classes.json");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("contradicts"), std::string::npos) << r.error().message;
  EXPECT_FALSE(pick_device_class("cuda", "b200", h200, catalog_table(), "x"));
  EXPECT_FALSE(pick_device_class("cuda", "cpu", h200, catalog_table(), "x"));
}

TEST(DeviceClass, ACpuWorkerIsClassCpu) {
  auto dc = pick_device_class("cpu", "", std::nullopt, catalog_table(), "x");
  ASSERT_TRUE(dc);
  EXPECT_EQ(*dc, "cpu");
  auto r = pick_device_class("cpu", "h200", std::nullopt, catalog_table(), "x");
  ASSERT_FALSE(r) << "a CPU worker must not file its figures as h200";
}

TEST(DeviceClass, AMissingOrFailingNvidiaSmiIsAnError) {
  {
    FakeSmi smi("NVIDIA-SMI has failed", 9);
    EXPECT_FALSE(probe_gpu());
  }
  ::setenv("KZOO_NVIDIA_SMI", "/nonexistent/nvidia-smi", 1);
  EXPECT_FALSE(probe_gpu());
  ::unsetenv("KZOO_NVIDIA_SMI");
}

TEST(DeviceClass, AWorkerOnAnUnknownGpuRefusesToStart) {
  FakeSmi smi("NVIDIA A100-SXM4-80GB, 550.54.15");
  TempDir d;
  WorkerOptions o;
  o.data_dir = d.path();
  o.catalog_dir = std::string(KZOO_SOURCE_DIR) + "/catalog";
  o.device = "cuda";
  auto w = Worker::open(o);
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("refusing to start"), std::string::npos) << w.error().message;
}

// A CUDA worker claims only jobs its device can run, so it must know its
// compute capability: read from the driver, or it does not start.
TEST(DeviceClass, ACudaWorkerReadsItsComputeCapabilityOrRefusesToStart) {
  TempDir d;
  auto data = server::init_data_dir(d.path() + "/data", std::string(KZOO_SOURCE_DIR) + "/catalog/kernel_data",
                                    server::ServerConfig{}, "cpu");
  ASSERT_TRUE(data) << data.error().message;
  WorkerOptions o;
  o.data_dir = data->root;
  o.catalog_dir = std::string(KZOO_SOURCE_DIR) + "/catalog";
  o.device = "cuda";
  {
    FakeSmi smi("NVIDIA H200, 9.0");  // name,driver and name,compute_cap alike
    auto w = Worker::open(o);
    ASSERT_TRUE(w) << w.error().message;
    EXPECT_EQ((*w)->options().compute_capability, 90);
  }
  {
    FakeSmi smi("NVIDIA H200, 550.54.15");  // a driver too old to report compute_cap
    auto w = Worker::open(o);
    ASSERT_FALSE(w);
    EXPECT_NE(w.error().message.find("compute capability"), std::string::npos) << w.error().message;
    EXPECT_NE(w.error().message.find("--device cpu"), std::string::npos) << w.error().message;
  }
}

// Its claim says the GPUs of its node too: a job whose task asks for more is
// left queued for a node that has them (the worker would only fail it), and
// says which worker left it and what that worker had.
TEST(DeviceClass, ACudaWorkerLeavesAJobNeedingMoreGpusThanItsNodeHas) {
  TempDir d;
  auto data = server::init_data_dir(d.path() + "/data", std::string(KZOO_SOURCE_DIR) + "/catalog/kernel_data",
                                    server::ServerConfig{}, "cpu");
  ASSERT_TRUE(data) << data.error().message;
  auto db = store::open_state(data->state_url());
  ASSERT_TRUE(db) << db.error().message;
  auto s = (*db)->create_submission({"h200/softmax", "ann", "", "/u/x", std::string(64, 'a')});
  ASSERT_TRUE(s) << s.error().message;
  auto two = (*db)->enqueue(s->id, 3, false, {.compute_capability = 90, .gpus = 2});
  ASSERT_TRUE(two) << two.error().message;
  WorkerOptions o;
  o.data_dir = data->root;
  o.catalog_dir = std::string(KZOO_SOURCE_DIR) + "/catalog";
  o.device = "cuda";
  o.worker_id = "node-a/gpu0";
  o.gpus = {0};
  FakeSmi smi("NVIDIA H200, 9.0");
  auto w = Worker::open(o);
  ASSERT_TRUE(w) << w.error().message;
  auto r = (*w)->run_once();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_FALSE(*r) << "one GPU cannot run a job of two";
  auto left = (*db)->get_job(two->id);
  ASSERT_TRUE(left) << left.error().message;
  EXPECT_EQ(left->state, store::State::queued);
  EXPECT_EQ(left->passed_over.rfind("node-a/gpu0 (1 GPU) at ", 0), 0u) << left->passed_over;
}

}  // namespace
}  // namespace kzoo::worker
