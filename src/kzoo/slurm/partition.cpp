#include "kzoo/slurm/partition.hpp"

#include <fmt/format.h>

namespace kzoo::slurm {

std::string slurm_duration(int seconds) {
  const int d = seconds / 86400, h = seconds / 3600 % 24, m = seconds / 60 % 60, s = seconds % 60;
  return fmt::format("{}-{:02}:{:02}:{:02}", d, h, m, s);
}

std::vector<std::string> sbatch_options(const Partition& p, std::optional<int> gpus) {
  std::vector<std::string> o{"--partition=" + p.name, "--time=" + slurm_duration(p.default_time_s)};
  if (p.cpus > 0) o.push_back("--cpus-per-task=" + std::to_string(p.cpus));
  if (p.memory_mb > 0) o.push_back("--mem=" + std::to_string(p.memory_mb) + "M");
  if (const int n = gpus.value_or(p.gpus); n > 0) o.push_back("--gres=gpu:" + std::to_string(n));
  return o;
}

}  // namespace kzoo::slurm
