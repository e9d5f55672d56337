#include "kzoo/local/task_env.hpp"

#include <algorithm>
#include <cstdlib>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "kzoo/util/process.hpp"

namespace kzoo::local {

using nlohmann::json;

namespace {

std::string trim(std::string s) {
  auto a = s.find_first_not_of(" \t\r\n");
  auto b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// "9.0" -> {9, 0}; nullopt unless MAJOR.MINOR.
std::optional<std::pair<int, int>> capability(const std::string& s) {
  static const std::regex kCap("^([0-9]{1,3})\\.([0-9]{1,3})$");
  std::smatch m;
  if (!std::regex_match(s, m, kCap)) return std::nullopt;
  return std::pair{std::stoi(m[1]), std::stoi(m[2])};
}

}  // namespace

std::optional<int> capability_tenths(const std::string& s) {
  if (auto c = capability(s); c && c->second < 10) return c->first * 10 + c->second;
  static const std::regex kArch("^sm_([0-9]{2,3})[a-z]?$");
  std::smatch m;
  if (std::regex_match(s, m, kArch)) return std::stoi(m[1]);
  return std::nullopt;
}

int required_capability(const json& task, const json& desc) {
  int need = 0;
  if (task.is_object()) {
    const json env = task.contains("environment") && task["environment"].is_object() ? task["environment"] : json::object();
    const json cap = env.value("min_compute_capability", json("9.0"));
    if (cap.is_string())
      if (auto t = capability_tenths(cap.get<std::string>())) need = std::max(need, *t);
  }
  if (desc.is_object() && desc.contains("min_arch_feature") && desc["min_arch_feature"].is_string())
    if (auto t = capability_tenths(desc["min_arch_feature"].get<std::string>())) need = std::max(need, *t);
  return need;
}

int required_gpus(const json& task) {
  const json env = task.is_object() && task.contains("environment") && task["environment"].is_object()
                       ? task["environment"]
                       : json::object();
  const json gpus = env.value("gpus", json(1));
  return gpus.is_number_integer() ? std::max(gpus.get<int>(), 1) : 1;
}

Result<DeviceFacts> probe_device(const std::string& device) {
  DeviceFacts f;
  f.device = device;
  if (device != "cuda") return f;
  const char* env = std::getenv("KZOO_NVIDIA_SMI");
  const std::string program = env && *env ? env : "nvidia-smi";
  ProcessOptions o;
  o.quiet_stderr = true;
  o.stdout_cap = 65536;
  auto ran = run_process({program, "--query-gpu=name,compute_cap", "--format=csv,noheader"}, o);
  if (!ran || ran->status != 0)
    return fail(program + " did not report a GPU (is the NVIDIA driver installed?): --device cuda needs one");
  const std::string& out = ran->out;
  std::istringstream lines(out);
  std::string line;
  std::optional<std::pair<int, int>> lowest;
  while (std::getline(lines, line)) {
    line = trim(line);
    if (line.empty()) continue;
    auto comma = line.rfind(',');
    std::string name = trim(line.substr(0, comma));
    std::string cap = comma == std::string::npos ? "" : trim(line.substr(comma + 1));
    if (f.gpus++ == 0) f.gpu_name = name;
    auto c = capability(cap);
    if (!c) return fail(fmt::format("{} reported compute capability \"{}\" for {}: a driver older than 510 cannot "
                                    "say it; update the driver",
                                    program, cap, name));
    if (!lowest || *c < *lowest) {
      lowest = c;
      f.compute_capability = cap;
    }
  }
  if (f.gpus == 0) return fail(program + " reported no GPU: --device cuda needs one");
  return f;
}

EnvironmentCheck check_task_environment(const json& task, const std::string& file, const DeviceFacts& d) {
  EnvironmentCheck out;
  const json env = task.is_object() && task.contains("environment") && task["environment"].is_object()
                       ? task["environment"]
                       : json::object();
  // The schema's defaults: offline true, min_compute_capability "9.0"; gpus has none, one GPU is what the judge uses.
  const json offline = env.value("offline", json(true));
  const int gpus = env.value("gpus", json(1)).is_number_integer() ? env.value("gpus", json(1)).get<int>() : 1;
  const json cap_field = env.value("min_compute_capability", json("9.0"));
  const std::string min_cap = cap_field.is_string() ? cap_field.get<std::string>() : cap_field.dump();
  out.gpus = required_gpus(task);

  if (offline != json(true))
    out.refusals.push_back(fmt::format(
        "{}: environment.offline is {}, but kzoo runs every kernel in a sandbox without network: a task kzoo "
        "grades must work offline; set \"offline\": true (the schema's default)",
        file, offline.dump()));
  auto needed = capability(min_cap);
  if (!needed)
    out.refusals.push_back(fmt::format("{}: environment.min_compute_capability \"{}\" is not MAJOR.MINOR (e.g. "
                                       "\"9.0\"); fix the task",
                                       file, min_cap));
  if (d.device != "cuda") {
    out.notes.push_back(fmt::format(
        "graded on the CPU: the task asks for {} GPU(s) of compute capability {} or more ({} environment); this run "
        "shows correctness and CPU timings only, the service's GPU runners grade the rest",
        gpus, min_cap, file));
    return out;
  }
  if (gpus > d.gpus)
    out.refusals.push_back(fmt::format("{}: the task asks for {} GPUs (environment.gpus), this machine shows {}: grade "
                                       "it on a machine with {}, or submit it to the service",
                                       file, gpus, d.gpus, gpus));
  if (needed) {
    auto have = d.compute_capability ? capability(*d.compute_capability) : std::nullopt;
    if (!have)
      out.refusals.push_back(fmt::format("cannot tell this machine's compute capability, and the task needs {} "
                                         "(environment.min_compute_capability of {})",
                                         min_cap, file));
    else if (*have < *needed)
      out.refusals.push_back(fmt::format(
          "{}: the task needs compute capability {} or more (environment.min_compute_capability); this machine's "
          "{} is {}: grade it on a newer GPU, or submit it to the service, whose runners have one",
          file, min_cap, d.gpu_name.empty() ? "GPU" : d.gpu_name, *d.compute_capability));
  }
  return out;
}

}  // namespace kzoo::local
