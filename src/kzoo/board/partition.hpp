// The compute partition the board's checks run on (scienceslack.json
// `partitions`, named by the first check's `partition`; seed board page:
// "main, time limit 01:00:00, default 00:10:00, 4 CPUs, 8192 MB, 0 GPUs"),
// and the limits it puts on one check wherever it runs: a Slurm allocation
// (slurm/partition.hpp asks for it) or a worker's sandbox (jobs/grade_job).
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kzoo/util/result.hpp"

namespace kzoo::board {

struct Partition {
  std::string name = "main";
  int time_limit_s = 3600;    // the longest a job may run there
  int default_time_s = 600;   // what a job gets when it asks for none
  int cpus = 1;
  long long memory_mb = 0;    // 0: no limit of the rules' (the runner's own applies)
  int gpus = 0;
};

// "H:MM:SS" (the rules' form) in seconds; an error naming `what` otherwise.
Result<int> parse_duration(const std::string& text, const std::string& what);

// The partition the board's checks run on: the first check's `partition`,
// looked up in `partitions`; the first partition when the check names none.
// nullopt when the rules declare no partitions (then nothing is capped).
// `benchmark` is the rules document's "benchmark" object.
Result<std::optional<Partition>> checks_partition(const nlohmann::json& benchmark);

// The partition called `name` (sbatch --partition); the checks' partition
// when `name` is empty. nullopt when the rules declare no partitions; an
// error listing the declared ones when none is called `name`.
Result<std::optional<Partition>> named_partition(const nlohmann::json& benchmark, const std::string& name);

// What one check may use: the partition's over the runner's own. A check asks
// for no time, so it gets the partition's default time (as sbatch would give
// it); memory and CPUs are the partition's, never more than the runner allows.
struct CheckLimits {
  std::chrono::seconds timeout{0};
  std::uint64_t memory_bytes = 0;  // 0: the runner's default
  int cpus = 0;                    // 0: no CPU cap
  nlohmann::json to_json() const;
};
CheckLimits check_limits(const std::optional<Partition>& p, std::chrono::seconds runner_timeout,
                         std::uint64_t runner_memory_bytes);

}  // namespace kzoo::board
