// Running one batch job in the sandbox (batch_run.hpp).
#include "kzoo/jobs/batch_run.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "kzoo/jobs/heartbeat.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/runner/sandbox.hpp"
#include "kzoo/util/iso_time.hpp"
#include "kzoo/util/temp_dir.hpp"

namespace kzoo::jobs {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The output file keeps at most this much: its head and its tail, so that it
// fits the tarball rules' per-file cap when the submit directory comes back.
constexpr std::size_t kOutputKeep = 1u << 20;
// A file the script writes is capped (bash `ulimit -f`, KiB): a runaway
// writer fails with "File size limit exceeded" instead of filling the disk.
constexpr long kFileSizeLimitKiB = 256 * 1024;

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf[0] ? buf : "localhost";
}

// slurm-<id>.out beyond kOutputKeep: its first and last halves, marked.
void trim_output(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec || size <= kOutputKeep) return;
  std::ifstream in(path, std::ios::binary);
  std::string head(kOutputKeep / 2, '\0'), tail(kOutputKeep / 2, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  in.seekg(static_cast<std::streamoff>(size - tail.size()));
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  in.close();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << head << fmt::format("\n[kzoo: {} bytes of output left out here; the output kept is its first and last {} "
                             "bytes]\n",
                             size - kOutputKeep, kOutputKeep / 2)
      << tail;
}

void append_line(const std::string& path, const std::string& line) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << line << "\n";
}

struct Ended {
  store::BatchEnd end;
  bool cancelled = false;  // the store cancelled it: nothing more to record
  bool retry = false;      // the runner's trouble: hand it back
  std::string reason;
};

class BatchRun {
 public:
  BatchRun(JobTransport& t, const store::Job& job, const GradeJobOptions& o, const Heartbeat& hb)
      : t_(t), job_(job), o_(o), hb_(hb) {}

  // Everything up to the end; the caller records it.
  Ended run(std::optional<package::PackageTree>& back) {
    auto b = t_.batch(job_.id);
    if (!b) return infra("cannot read the batch job: " + b.error().message, false);
    b_ = *b;
    // 0755: the sandbox uid must reach the workdir.
    auto scratch = TempDirectory::make("kzoo-batch-" + std::to_string(job_.id) + "-");
    if (!scratch) return infra(scratch.error().message, true);
    auto file = t_.batch_file(b_, scratch->path());
    if (!file) return infra("cannot fetch the submit directory: " + file.error().message, true);
    auto tar = package::read_tree_tarball(*file, package::repository_limits());
    if (!tar) return infra("cannot read the submit directory: " + tar.error().message, true);
    if (!tar->violations.empty())
      return infra("the stored submit directory breaks the tarball rules: " + to_string(tar->violations.front()), false);
    const std::string w = scratch->path() + "/submit";
    if (auto r = package::write_tree(tar->tree, w); !r) return infra("cannot lay out the submit directory: " + r.error().message, true);

    // The script as sbatch copied it, outside the submit directory (Slurm
    // runs its spool copy), read-only inside.
    const std::string job_dir = scratch->path() + "/job";
    fs::create_directories(job_dir);
    {
      std::ofstream script(job_dir + "/script", std::ios::binary);
      script << b_.script_text;
      if (!script) return infra("cannot write the script to " + job_dir, true);
    }
    fs::permissions(job_dir + "/script", fs::perms(0644));
    const std::string out_name = fmt::format("slurm-{}.out", job_.id);
    runner::SandboxSpec spec;
    // bash writes slurm-<id>.out itself, inside the sandbox, as Slurm's step does; every file is capped.
    spec.argv = {"/bin/bash", "-c", fmt::format("ulimit -f {}; exec >\"$0\" 2>&1 </dev/null; exec /bin/bash \"$1\"",
                                                kFileSizeLimitKiB),
                 out_name, ""};
    spec.workdir = w;
    spec.ro_binds.push_back({job_dir, "/kzoo/job"});
    spec.env = batch_environment(b_, host_name());
    spec.wall_limit = std::chrono::seconds(b_.time_s);
    spec.memory_bytes = static_cast<std::uint64_t>(b_.memory_mb) << 20;
    if (o_.memory_bytes && o_.memory_bytes < spec.memory_bytes) spec.memory_bytes = o_.memory_bytes;
    spec.cpus = b_.cpus;
    spec.max_pids = 4096;
    GpuPool::Lease lease;  // with the node's pool: this job's GPUs until the script ends
    if (b_.gpus > 0) {
      if (o_.device != "cuda") return infra(fmt::format("the job asks for {} GPUs and this runner has none", b_.gpus), false);
      if (o_.gpu_pool && o_.gpu_pool->free_count() < static_cast<std::size_t>(b_.gpus))
        say(fmt::format("job {}: waiting for {} of this node's {} GPUs", job_.id, b_.gpus, o_.gpu_pool->size()));
      auto gpus = batch_job_gpus(o_, b_.gpus, lease);
      // Handed back: a node with that many GPUs can run it (this one no longer claims it).
      if (!gpus) return infra(gpus.error().message, true);
      if (o_.gpu_pool) say(fmt::format("job {}: on GPU {}", job_.id, fmt::join(*gpus, ",")));
      auto nodes = runner::gpu_device_nodes_for(*gpus);
      if (!nodes) return infra(nodes.error().message, true);
      spec.devices = std::move(*nodes);
      spec.cpu_affinity = o_.cpus_for(*gpus);
    }
    runner::SandboxOptions so;
    so.sandboxed = o_.sandboxed;
    spec.argv.back() = runner::visible_path(spec, so, job_dir + "/script");  // /kzoo/job/script inside
    auto watch = t_.another();
    so.should_stop = [&, last = std::chrono::steady_clock::time_point{}]() mutable {
      if (hb_.lost()) return true;
      // scancel reaches a running job within a second, not a heartbeat's period.
      const auto now = std::chrono::steady_clock::now();
      if (!watch || now - last < std::chrono::seconds(1)) return false;
      last = now;
      auto j = (*watch)->batch(job_.id);
      return j && j->job.state != store::State::running;
    };
    say(fmt::format("job {}: batch script {} of {} ({}, {} CPUs, {} MB, time limit {} s)", job_.id, b_.script, b_.owner,
                    b_.partition, b_.cpus, b_.memory_mb, b_.time_s));
    auto r = runner::run_sandbox(spec, so);
    if (!r) return infra("the sandbox could not start: " + r.error().message, true);
    if (r->stopped) {
      Ended e;
      e.cancelled = true;
      e.reason = "cancelled while running (scancel), or its lease was taken back";
      return e;
    }
    Ended e;
    e.end.elapsed_ms = r->wall.count();
    e.end.exit_code = r->exit_code;
    e.end.exit_signal = r->signal;
    const std::string out_path = w + "/" + out_name;
    if (r->timed_out) {
      e.end.end_state = "TIMEOUT";
      append_line(out_path, fmt::format("slurmstepd: error: *** JOB {} ON {} CANCELLED AT {} DUE TO TIME LIMIT ***",
                                        job_.id, host_name(), iso8601_utc(store::system_now_ms()).substr(0, 19)));
    } else if (r->oom) {
      e.end.end_state = "OUT_OF_MEMORY";
      append_line(out_path, fmt::format("slurmstepd: error: Detected 1 oom-kill event(s) in StepId={}.batch. Some of "
                                        "your processes may have been killed by the cgroup out-of-memory handler.",
                                        job_.id));
    } else {
      e.end.end_state = r->exit_code == 0 && r->signal == 0 ? "COMPLETED" : "FAILED";
    }
    if (e.end.end_state != "COMPLETED" && e.end.exit_code == 0 && e.end.exit_signal == 0) e.end.exit_code = -1;
    if (e.end.exit_code < 0 && r->signal) e.end.exit_code = 0;  // sacct shows 0:<signal> for a killed script
    e.end.result = json{{"worker", o_.worker_id}, {"limits", {{"time_s", b_.time_s}, {"cpus", b_.cpus},
                                                              {"memory_bytes", spec.memory_bytes}}},
                        {"sandbox", r->limits}, {"warnings", r->warnings}};
    // The submit directory as the job left it (what it cannot hold is named in the result).
    trim_output(out_path);
    auto left = package::read_package_dir(w, package::repository_limits());
    if (left) {
      back = std::move(left->tree);
      if (!left->violations.empty()) e.end.result["left_out"] = to_json(left->violations);
    } else {
      e.end.result["left_out"] = json::array({left.error().message});
    }
    return e;
  }

  const store::BatchJob& batch() const { return b_; }

 private:
  Ended infra(std::string why, bool retry) {
    Ended e;
    e.retry = retry;
    e.reason = std::move(why);
    e.end.end_state = "NODE_FAIL";
    e.end.exit_code = -1;
    return e;
  }
  void say(const std::string& line) const {
    if (o_.log) o_.log(line);
  }

  JobTransport& t_;
  const store::Job& job_;
  const GradeJobOptions& o_;
  const Heartbeat& hb_;
  store::BatchJob b_;
};

}  // namespace

Result<std::vector<int>> batch_job_gpus(const GradeJobOptions& o, int need, GpuPool::Lease& lease) {
  if (need <= 0) return std::vector<int>{};
  const int have = o.node_gpus();
  if (have > 0 && need > have)
    return fail(fmt::format("the job asks for {} GPUs of one node and this worker has {} (--gpus): run it on a worker "
                            "started with --gpus naming {} or more",
                            need, have, need));
  if (!o.gpu_pool) return o.gpus;
  lease = o.gpu_pool->take(static_cast<std::size_t>(need));
  return lease.gpus();
}

std::vector<std::pair<std::string, std::string>> batch_environment(const store::BatchJob& b, const std::string& node) {
  const std::string dir = runner::kSandboxWorkdir;
  return {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
          {"HOME", "/tmp"},
          {"TMPDIR", "/tmp"},
          {"LANG", "C.UTF-8"},
          {"USER", b.owner},
          {"SLURM_JOB_ID", std::to_string(b.job.id)},
          {"SLURM_JOBID", std::to_string(b.job.id)},
          {"SLURM_JOB_NAME", b.name},
          {"SLURM_JOB_USER", b.owner},
          {"SLURM_JOB_PARTITION", b.partition},
          {"SLURM_CPUS_PER_TASK", std::to_string(b.cpus)},
          {"SLURM_CPUS_ON_NODE", std::to_string(b.cpus)},
          {"SLURM_MEM_PER_NODE", std::to_string(b.memory_mb)},
          {"SLURM_JOB_NUM_NODES", "1"},
          {"SLURM_JOB_NODELIST", node},
          {"SLURMD_NODENAME", node},
          {"SLURM_SUBMIT_DIR", dir},
          {"SLURM_JOB_GPUS", b.gpus > 0 ? std::to_string(b.gpus) : ""},
          {"OMP_NUM_THREADS", std::to_string(b.cpus)}};
}

JobReport run_batch_job(JobTransport& t, const store::Job& job, const GradeJobOptions& o) {
  JobReport rep;
  rep.job_id = job.id;
  auto say = [&](const std::string& line) {
    if (o.log) o.log(line);
  };
  say(fmt::format("job {}: claimed (batch, attempt {}/{})", job.id, job.attempts, job.max_attempts));
  Heartbeat hb(t, job.id, o.worker_id, o.lease_seconds, say);
  Ended e;
  std::optional<package::PackageTree> back;
  try {
    BatchRun run(t, job, o, hb);
    e = run.run(back);
  } catch (const std::exception& ex) {
    e = Ended{};
    e.end.end_state = "NODE_FAIL";
    e.end.exit_code = -1;
    e.reason = std::string("internal error: ") + ex.what();
  }
  if (e.cancelled) {
    say(fmt::format("job {}: stopped: {}", job.id, e.reason));
    return rep;  // the store ended it; completed stays false
  }
  if (!e.reason.empty()) {
    rep.reasons = {e.reason};
    if (e.retry) {
      auto r = t.retry(job.id, o.worker_id, {e.reason}, json{{"error", e.reason}});
      rep.retried = r.has_value();
      rep.completed = r.has_value();
      say(fmt::format("job {}: handed back: {}", job.id, e.reason));
      return rep;
    }
    e.end.result = json{{"error", e.reason}};
  }
  auto done = t.finish_batch(job.id, o.worker_id, e.end, back);
  if (!done) {
    say(fmt::format("job {}: the store refused its end: {}", job.id, done.error().message));
    return rep;
  }
  rep.completed = true;
  rep.evidence_commit = done->result_commit;
  rep.outcome = e.end.end_state == "COMPLETED" ? store::Outcome::accepted
                : e.end.end_state == "NODE_FAIL" ? store::Outcome::failed
                                                 : store::Outcome::rejected;
  say(fmt::format("job {}: {} (exit code {}:{}, {} ms){}", job.id, e.end.end_state, e.end.exit_code,
                  e.end.exit_signal, e.end.elapsed_ms,
                  done->result_commit.empty() ? "" : ", result " + done->result_commit.substr(0, 12)));
  return rep;
}

}  // namespace kzoo::jobs
