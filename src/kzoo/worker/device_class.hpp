// Which device class a worker's results belong to, read from the device
// rather than assumed (catalog/device_classes.json, `gpu_names`).
//
// A CUDA worker asks the driver for its GPU's name (nvidia-smi; the program
// is KZOO_NVIDIA_SMI when set, which tests use) and takes the one class whose
// `gpu_names` patterns match it: "NVIDIA H200" -> h200, "NVIDIA H100 80GB
// HBM3" -> h100. Where none matches it refuses to start unless the operator
// names the class (`kzoo worker --device-class`); a name that contradicts a
// match is refused too. A CPU worker is class `cpu`. The class travels to the
// judge (KZOO_DEVICE_CLASS), which records it in every result; a result
// enters a kernel's bench_result.yaml only when it is the kernel's arch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/util/result.hpp"

namespace kzoo::worker {

struct GpuInfo {
  std::string name;    // e.g. "NVIDIA H200"
  std::string driver;  // e.g. "550.54.15"
};

// The first GPU as the driver reports it (`nvidia-smi --query-gpu=name,driver_version
// --format=csv,noheader`). Fails when the program is missing or reports no GPU.
Result<GpuInfo> probe_gpu();

// The classes of `table` (device_classes.json) whose gpu_names match `gpu_name`.
std::vector<std::string> classes_matching(const nlohmann::json& table, const std::string& gpu_name);

// The device class of a worker on `device` ("cpu" | "cuda"); `requested` is
// --device-class (may be empty); `gpu` what probe_gpu found (nullopt: nothing).
// `where` names the table in messages.
Result<std::string> pick_device_class(const std::string& device, const std::string& requested,
                                      const std::optional<GpuInfo>& gpu, const nlohmann::json& table,
                                      const std::string& where);

}  // namespace kzoo::worker
