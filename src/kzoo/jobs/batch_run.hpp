// Running one claimed batch job (store/batch.hpp; docs/BATCH.md): a user's
// own script, as Slurm would run it, in the worker's bubblewrap sandbox.
//
//   1. its submit directory (the tarball sbatch sent: `git archive HEAD` of
//      the clone) laid out as the sandbox's workdir, writable, and the cwd;
//   2. `bash <script>` there, with stdout and stderr in slurm-<id>.out as
//      Slurm writes them, no network, under the limits the job was granted
//      from its partition (board/batch_request.hpp): the wall-clock limit
//      (TIMEOUT, with Slurm's "DUE TO TIME LIMIT" line appended), memory and
//      CPU time through the run's cgroup as grade_job caps a check, its GPUs
//      when it asked for some on a CUDA worker; SLURM_* variables set;
//   3. scancel while it runs: the store says so (its heartbeat or a poll
//      every second), everything in the sandbox is killed, nothing recorded;
//   4. the submit directory read back (the tarball rules' caps; an oversized
//      slurm-<id>.out keeps its head and tail) and handed to the transport,
//      which commits it to refs/jobs/<id> on the job's base commit and ends
//      the job with how the script ended (COMPLETED, FAILED, TIMEOUT,
//      OUT_OF_MEMORY). The server judges that commit as a push.
// A sandbox that cannot start is the runner's trouble: the job is handed
// back (retry) for another attempt, as grade_job does.
#pragma once

#include "kzoo/jobs/grade_job.hpp"

namespace kzoo::jobs {

// Runs `job` (kind batch), which options.worker_id holds through `t`, and
// ends it. Never throws. JobReport::outcome: accepted for COMPLETED,
// rejected for the script's own ends, failed when the runner failed.
JobReport run_batch_job(JobTransport& t, const store::Job& job, const GradeJobOptions& options);

// The GPUs (nvidia-smi indices) a batch job that asked for `need` of them runs
// on. With the node's pool (`kzoo worker --gpus 0,1,...`) they are taken from it
// into `lease`, waiting while other jobs hold them, so that a batch job never
// shares a GPU with a grade or another batch job; without, the worker's own
// `gpus` (empty: every GPU the machine shows). An error when this worker cannot
// give that many (the claim filter keeps such jobs from it; a worker restarted
// with fewer GPUs can still hold one).
Result<std::vector<int>> batch_job_gpus(const GradeJobOptions& options, int need, GpuPool::Lease& lease);

// What a batch script's environment holds beside PATH, HOME and LANG (tests read it).
std::vector<std::pair<std::string, std::string>> batch_environment(const store::BatchJob& b,
                                                                    const std::string& node);

}  // namespace kzoo::jobs
