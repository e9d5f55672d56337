// The compute partition a check runs on, from the board's rules
// (scienceslack.json `partitions`, named by the first check's `partition`),
// and the sbatch options that ask Slurm for exactly it: partition, time,
// CPUs, memory and GPUs (seed board page: "main, time limit 01:00:00,
// default 00:10:00, 4 CPUs, 8192 MB, 0 GPUs").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/util/result.hpp"

namespace kzoo::slurm {

struct Partition {
  std::string name = "main";
  int time_limit_s = 3600;    // the longest a job may run there
  int default_time_s = 600;   // what a job gets when it asks for none
  int cpus = 1;
  long long memory_mb = 0;    // 0: Slurm's default
  int gpus = 0;
};

// "H:MM:SS" (the rules' form) in seconds; an error naming `what` otherwise.
Result<int> parse_duration(const std::string& text, const std::string& what);
// Seconds as Slurm's "D-HH:MM:SS".
std::string slurm_duration(int seconds);

// The partition the board's checks run on: the first check's `partition`,
// looked up in `partitions`; the first partition when the check names none.
// nullopt when the rules declare no partitions (then nothing is capped).
// `benchmark` is the rules document's "benchmark" object.
Result<std::optional<Partition>> checks_partition(const nlohmann::json& benchmark);

// The sbatch options for one check on `p`, asking for the default time.
std::vector<std::string> sbatch_options(const Partition& p);

}  // namespace kzoo::slurm
