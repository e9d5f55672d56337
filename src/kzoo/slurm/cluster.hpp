// The Slurm client commands as kzoo uses them (Slurm 22.05, LIBNOTES): sbatch
// to submit, squeue to follow, scancel to stop, and scontrol for how a job
// ended -- without accounting sacct knows nothing, and scontrol forgets a job
// MinJobAge after it ends, so callers record what they learn. The cluster is
// the one SLURM_CONF (or the default configuration) names.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kzoo/util/result.hpp"

namespace kzoo::slurm {

struct BatchState {
  std::string state;   // PENDING, RUNNING, COMPLETING, ...
  std::string reason;  // why it waits (Resources, Priority, ...), or "None"
};

struct BatchEnd {
  std::string state;  // COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, ...
  int exit_code = 0;  // the batch script's
  int signal = 0;     // the signal that ended it, 0: none
  std::string reason;
};

// Submits `script` with `options`; returns the job id.
Result<std::string> sbatch(const std::vector<std::string>& options, const std::string& script);
// The jobs of `ids` Slurm still lists (pending, running, completing).
Result<std::map<std::string, BatchState>> squeue(const std::vector<std::string>& ids);
Result<void> scancel(const std::string& id);
// How job `id` ended; nullopt while it has not, or once Slurm forgot it.
Result<std::optional<BatchEnd>> job_end(const std::string& id);

// The fields of one `scontrol show job -o` line (KEY=VALUE words).
std::map<std::string, std::string> scontrol_fields(const std::string& line);

}  // namespace kzoo::slurm
