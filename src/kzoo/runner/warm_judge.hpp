// The judge started before its job (docs/WORKER.md, "A judge up before the
// job"). Of an A/B verdict on an H200, 3.2-5.0 s were the judge's own `import
// torch` and CUDA start, before its clock; a worker that starts the next job's
// judge when a job ends hides them from the next verdict.
//
// How: a skeleton W (workdir.hpp: empty directories and an empty task file,
// which the job fills in place, so the binds made now show its files), and the
// sandbox benchmark.py would get, started now on it with
// `python3 -m kzoo_judge.warm`. That imports torch, brings up CUDA, starts the
// children (the submission's and the incumbent's, on their still empty
// folders; none reads anything before the judge sends it work) and blocks on a
// control socket. go() sends the job's environment and seed on it; the warm
// process then runs .kernel_package/benchmark.py as __main__ with the verdict
// channel it was started with, and the wall-clock limit counts from go.
//
// Trust is unchanged: nothing of the submission exists in W before the job is
// laid out, the build step runs in its own sandbox as before, and the seed
// exists only from go. A warm judge serves one job, then ends.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kzoo/package/package_tree.hpp"
#include "kzoo/runner/grade.hpp"
#include "kzoo/runner/sandbox.hpp"
#include "kzoo/runner/workdir.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::runner {

// The warm process's exit status when it refuses the job it was handed (the
// judge's files changed since it started, the message does not parse): nothing
// of the job ran, and the runner runs benchmark.py cold instead.
inline constexpr int kWarmRefusedStatus = 4;

class WarmJudge {
 public:
  // A skeleton W in a fresh temporary directory, and the warm judge started on
  // it in the sandbox harness_setup() gives for `options`, with the
  // incumbent's folder bound read-only as an A/B job binds it. With `ab` it
  // starts the A/B's three children, else the submission's alone (a job of the
  // other kind still runs there: the judge starts what it lacks, ends the rest).
  static Result<std::unique_ptr<WarmJudge>> start(const GradeOptions& options, bool ab);
  ~WarmJudge();  // kills it if it still runs, and removes its directory
  WarmJudge(const WarmJudge&) = delete;
  WarmJudge& operator=(const WarmJudge&) = delete;

  const Workdir& skeleton() const { return skeleton_; }
  std::chrono::steady_clock::time_point started_at() const { return started_at_; }
  bool running() const { return sandbox_.running(); }

  // Why a harness step over `w` in `spec` with `options` cannot run here ("" if
  // it can): another W, other devices, limits, CPUs or interpreter, a
  // read-only bind it lacks, or it has ended.
  std::string unfit(const Workdir& w, const SandboxSpec& spec, const SandboxOptions& options) const;

  // Hands it the job: `env` (the step's complete environment) and `seed` on
  // the control socket, then waits up to `timeout` as run_harness_step does.
  // Fails, with nothing of the job run, when it ended before or refused it.
  Result<HarnessRun> go(const std::vector<std::pair<std::string, std::string>>& env, std::string_view seed,
                        std::chrono::seconds timeout);

 private:
  WarmJudge(std::string dir, Workdir skeleton, SandboxSpec spec, SandboxOptions options, StartedSandbox sandbox,
            int control, int verdict);
  std::string dir_;
  Workdir skeleton_;
  SandboxSpec spec_;
  SandboxOptions options_;
  StartedSandbox sandbox_;
  int control_ = -1;  // our end of the control socket
  int verdict_ = -1;  // the verdict channel's read end
  bool used_ = false;
  std::chrono::steady_clock::time_point started_at_;
};

// W for a run: the skeleton of `warm` filled with the job (fill_workdir) when
// there is one, else a fresh W at `fresh_dir` (lay_out_workdir).
Result<Workdir> lay_out_run(const WarmJudge* warm, const std::string& fresh_dir, const package::PackageTree& harness,
                            const package::PackageTree& submission, std::string_view task_json);

// The incumbent's source (`src`, its src/ files) at W/.kzoo/incumbent, read-only
// in the sandbox (the submission runs first in W and must not edit what it is
// compared with), and the judge told where (KZOO_OPTIONS incumbent_src).
Result<void> add_incumbent(const Workdir& w, const package::PackageTree& src, GradeOptions& g);

// Whether to start the judge ahead (`--warm-judge`): auto is on for a GPU,
// where `import torch` and the CUDA context cost seconds, off on the CPU,
// where it would hold a few idle interpreters per worker for a second saved.
enum class WarmMode { auto_, on, off };
Result<WarmMode> parse_warm_mode(std::string_view text);
bool warm_wanted(WarmMode mode, const std::string& device);

// A worker slot's judge started ahead: when a job's run ends, the next job's
// judge is started in the sandbox that run had; the next job takes it. One at a
// time, thread-safe (a slot's heartbeat never touches it, but say so).
class WarmSlot {
 public:
  // A warm judge older than this is ended rather than used: a long-idle
  // interpreter and CUDA context are restarted, not trusted to be current.
  static constexpr std::chrono::minutes kMaxAge{60};

  explicit WarmSlot(std::function<void(std::string_view)> log = {});
  ~WarmSlot();
  // The judge started ahead, taken (nullptr: none, or it ended or aged; those
  // are dropped). grade_workdir decides whether it fits the run.
  std::unique_ptr<WarmJudge> take();
  // Starts one for the next run graded like `options` (an A/B when `ab`), unless
  // one is up. A start that fails is logged; the next run then starts cold.
  void prepare(const GradeOptions& options, bool ab);
  // Ends the one that is up (a batch job needs the GPU's memory).
  void clear();

 private:
  std::function<void(std::string_view)> log_;
  std::mutex m_;
  std::unique_ptr<WarmJudge> warm_;
};

}  // namespace kzoo::runner
