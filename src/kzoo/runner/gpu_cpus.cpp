#include "kzoo/runner/gpu_cpus.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <sched.h>

#include "kzoo/runner/cpu_list.hpp"
#include "kzoo/util/read_file.hpp"

namespace kzoo::runner {
namespace fs = std::filesystem;
namespace {

// sysfs and procfs files of a few lines.
Result<std::string> read_small(const std::string& path) { return util::read_file_capped(path, 64u << 10); }

// "Device Minor:     3" in the driver's information file.
Result<int> device_minor(const std::string& info_path) {
  auto text = read_small(info_path);
  if (!text) return tl::unexpected(text.error());
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Device Minor:", 0) != 0) continue;
    auto digits = line.substr(line.find(':') + 1);
    digits.erase(0, digits.find_first_not_of(" \t"));
    while (!digits.empty() && (digits.back() == ' ' || digits.back() == '\r')) digits.pop_back();
    if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos) break;
    return std::stoi(digits);
  }
  return fail(info_path + " has no \"Device Minor: N\" line");
}

std::vector<int> intersect(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// `cpus` grouped into cores: hyperthreads of one core together, cores in the
// order of their lowest CPU. A CPU whose siblings cannot be read is a core alone.
std::vector<std::vector<int>> cores_of(const std::vector<int>& cpus, const std::string& root) {
  std::map<int, std::vector<int>> by_first;
  for (int c : cpus) {
    std::vector<int> core{c};
    auto text = read_small(root + "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/thread_siblings_list");
    if (text)
      if (auto sib = parse_cpu_list(*text); sib && !sib->empty()) core = intersect(*sib, cpus);
    if (core.empty()) core = {c};
    by_first[core.front()] = core;
  }
  std::vector<std::vector<int>> out;
  for (auto& [first, core] : by_first) out.push_back(std::move(core));
  return out;
}

}  // namespace

std::vector<int> allowed_cpus() {
  std::vector<int> out;
  cpu_set_t* set = CPU_ALLOC(kMaxCpu + 1);
  if (!set) return out;
  const std::size_t size = CPU_ALLOC_SIZE(kMaxCpu + 1);
  CPU_ZERO_S(size, set);
  if (::sched_getaffinity(0, size, set) == 0)
    for (int c = 0; c <= kMaxCpu; ++c)
      if (CPU_ISSET_S(c, size, set)) out.push_back(c);
  CPU_FREE(set);
  return out;
}

Result<GpuCpuShares> gpu_cpu_shares(const std::vector<int>& allowed_in, const std::string& root) {
  std::vector<int> allowed = allowed_in;
  std::sort(allowed.begin(), allowed.end());
  const std::string gpus_dir = root + "/proc/driver/nvidia/gpus";
  std::error_code ec;
  if (!fs::is_directory(gpus_dir, ec)) return fail(gpus_dir + " does not exist: the NVIDIA driver lists no GPUs here");
  // GPU index -> its local CPUs (within `allowed`).
  std::map<int, std::vector<int>> local;
  for (const auto& e : fs::directory_iterator(gpus_dir, ec)) {
    const std::string address = e.path().filename().string();
    auto minor = device_minor(e.path().string() + "/information");
    if (!minor) return tl::unexpected(minor.error());
    std::string pci = address;
    std::transform(pci.begin(), pci.end(), pci.begin(), [](unsigned char c) { return std::tolower(c); });
    const std::string list_path = root + "/sys/bus/pci/devices/" + pci + "/local_cpulist";
    auto text = read_small(list_path);
    if (!text) return fail("GPU " + std::to_string(*minor) + " (" + address + "): " + text.error().message);
    auto cpus = parse_cpu_list(*text);
    if (!cpus) return fail(list_path + ": " + cpus.error().message);
    auto usable = intersect(*cpus, allowed);
    if (usable.empty())
      return fail("GPU " + std::to_string(*minor) + " (" + address + "): none of its local CPUs (" +
                  format_cpu_list(*cpus) + ") is one this process may use (" + format_cpu_list(allowed) + ")");
    if (local.count(*minor)) return fail(gpus_dir + " lists GPU " + std::to_string(*minor) + " twice");
    local[*minor] = std::move(usable);
  }
  if (ec) return fail("cannot list " + gpus_dir + ": " + ec.message());
  if (local.empty()) return fail(gpus_dir + " lists no GPU");

  // GPUs with the same local CPUs share them; each takes a run of whole cores,
  // in GPU order.
  std::map<std::vector<int>, std::vector<int>> groups;
  for (const auto& [gpu, cpus] : local) groups[cpus].push_back(gpu);
  GpuCpuShares out;
  for (const auto& [cpus, gpus] : groups) {
    auto cores = cores_of(cpus, root);
    const std::size_t k = gpus.size(), n = cores.size();
    if (n < k) {
      out.notes.push_back(fmt::format("GPUs {} share CPUs {}: fewer cores ({}) than GPUs, so each job may run on all of them",
                                      fmt::join(gpus, ","), format_cpu_list(cpus), n));
      for (int g : gpus) out.cpus[g] = cpus;
      continue;
    }
    for (std::size_t i = 0; i < k; ++i) {
      std::vector<int> share;
      for (std::size_t c = i * n / k; c < (i + 1) * n / k; ++c) share.insert(share.end(), cores[c].begin(), cores[c].end());
      std::sort(share.begin(), share.end());
      out.cpus[gpus[i]] = std::move(share);
    }
  }
  return out;
}

}  // namespace kzoo::runner
