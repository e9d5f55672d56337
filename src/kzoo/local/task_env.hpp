// A task's `environment` (the KBench schema: gpus, min_compute_capability,
// offline) against the device a local run would use. Every field is honoured
// or the run is refused with a message naming the field and the fix; none is
// silently ignored. A CPU run of a GPU task is allowed (it is how CI and a
// laptop check correctness) and says what it cannot show.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/util/result.hpp"

namespace kzoo::local {

struct DeviceFacts {
  std::string device = "cpu";  // cpu | cuda
  int gpus = 0;                // visible GPUs
  std::string gpu_name;        // the first one's, as the driver reports it
  std::optional<std::string> compute_capability;  // the lowest among them, "9.0"
};

// For cuda, asks the driver (`nvidia-smi --query-gpu=name,compute_cap
// --format=csv,noheader`; the program is $KZOO_NVIDIA_SMI when set, as for
// the worker). Fails naming the program when it reports no GPU.
Result<DeviceFacts> probe_device(const std::string& device);

struct EnvironmentCheck {
  std::vector<std::string> refusals;  // the run must not happen
  std::vector<std::string> notes;     // it may, and the result should say this
  int gpus = 1;                       // environment.gpus: the GPUs of one node a run takes
};

// A compute capability as tenths: "9.0" -> 90, "10.0" -> 100, and an arch
// feature as desc.yaml's min_arch_feature names it, "sm_90a" -> 90, "sm_89" ->
// 89, "sm_100a" -> 100; nullopt for anything else.
std::optional<int> capability_tenths(const std::string& s);

// What a package's jobs require of a GPU runner, in tenths: the larger of the
// task's environment.min_compute_capability (the schema's default 9.0 when the
// task is known and says nothing) and desc.yaml's min_arch_feature. 0 when
// neither is known. `task` and `desc` may be null.
int required_capability(const nlohmann::json& task, const nlohmann::json& desc);

// The GPUs of one node a task's jobs take: its environment.gpus, read as
// check_task_environment reads it (1 when the task names none, is not known,
// or names fewer than one: the judge runs on one GPU).
int required_gpus(const nlohmann::json& task);

// `task` is the task document; `file` names it in messages.
EnvironmentCheck check_task_environment(const nlohmann::json& task, const std::string& file, const DeviceFacts& device);

}  // namespace kzoo::local
