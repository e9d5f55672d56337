// What a user's batch job asks for (sbatch's #SBATCH options, as the
// /slurm.sh wrapper passes them: --time, --cpus-per-task, --mem,
// --gres=gpu:N, --partition), settled against the partition it runs on the
// way Slurm settles them: no --time gives the partition's default time, a
// time over the partition's limit is refused (Slurm: "Requested time limit
// is invalid"), as are more CPUs, memory or GPUs than the partition has.
// Pure functions: the server checks a submission with them before anything
// is stored, and tests hold the forms to Slurm's.
#pragma once

#include <string>

#include <tl/expected.hpp>

#include "kzoo/board/partition.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::board {

// The options' text as given; empty: not given.
struct BatchAsk {
  std::string time, cpus, mem, gpus;
};

struct BatchLimits {
  int time_s = 0;
  int cpus = 1;
  long long memory_mb = 0;
  int gpus = 0;
};

// Which option is wrong ("--time"), and the message: the value, the rule or
// the partition's maximum, and the fix.
struct BatchRefusal {
  std::string option;
  std::string message;
};

// Slurm's --time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S, in seconds.
Result<int> parse_slurm_time(const std::string& text);
// Slurm's --mem: a whole number with an optional unit K, M (the default), G or T; in MB (rounded up).
Result<long long> parse_slurm_mem(const std::string& text);
// "H:MM:SS", or "D-HH:MM:SS" past a day, as squeue and sacct print times.
std::string slurm_duration(long long seconds);

// The seed's partition ("main, time limit 01:00:00, default 00:10:00, 4
// CPUs, 8192 MB, 0 GPUs"), for a project whose rules declare none.
Partition seed_partition();

// The limits the job runs under: given options within the partition,
// absent ones its defaults (the default time, 1 CPU as Slurm gives, the
// partition's memory, no GPUs).
tl::expected<BatchLimits, BatchRefusal> settle_batch(const BatchAsk& ask, const Partition& p);

}  // namespace kzoo::board
