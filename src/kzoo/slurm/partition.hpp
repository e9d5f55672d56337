// The sbatch options that ask Slurm for exactly the partition the board's
// checks run on (board/partition.hpp): partition, time, CPUs, memory and GPUs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kzoo/board/partition.hpp"

namespace kzoo::slurm {

using board::Partition;

// Seconds as Slurm's "D-HH:MM:SS".
std::string slurm_duration(int seconds);

// The sbatch options for one check on `p`, asking for the default time and
// `gpus` GPUs (default: the partition's own per-check count).
std::vector<std::string> sbatch_options(const Partition& p, std::optional<int> gpus = std::nullopt);

}  // namespace kzoo::slurm
