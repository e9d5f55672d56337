#include "kzoo/worker/worker.hpp"

#include "kzoo/local/task_env.hpp"

#include <thread>

#include <fmt/format.h>
#include <unistd.h>

#include "kzoo/format/json_text.hpp"
#include "kzoo/jobs/batch_run.hpp"
#include "kzoo/jobs/direct.hpp"
#include "kzoo/runner/grade.hpp"
#include "kzoo/util/read_file.hpp"
#include "kzoo/worker/api_transport.hpp"
#include "kzoo/worker/device_class.hpp"

namespace kzoo::worker {
using nlohmann::json;

namespace {

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf[0] ? buf : "localhost";
}

}  // namespace

Worker::Worker(WorkerOptions o, std::unique_ptr<JobTransport> t) : o_(std::move(o)), t_(std::move(t)) {}
Worker::~Worker() = default;

// Reads the GPU's name (cuda) and picks o.device_class from the catalog's device_classes.json.
Result<void> resolve_device_class(WorkerOptions& o) {
  const std::string path = o.catalog_dir + "/device_classes.json";
  json table = json::object();
  if (auto text = util::read_file_capped(path, 1u << 20); text) {
    auto parsed = format::parse_json(*text, path);
    if (!parsed) return fail(to_string(parsed.error()));
    table = *parsed;
  } else if (o.device == "cuda") {
    return fail("cannot read " + path + ": a CUDA worker picks its device class there (" + text.error().message + ")");
  }
  std::optional<GpuInfo> gpu;
  if (o.device == "cuda") {
    auto g = probe_gpu();
    if (g) gpu = *g;
  }
  auto dc = pick_device_class(o.device, o.device_class, gpu, table, path);
  if (!dc) return tl::unexpected(dc.error());
  o.device_class = *dc;
  o.gpu_name = gpu ? gpu->name : "";
  if (o.device == "cuda" && !o.compute_capability) {
    // The lowest capability among the visible GPUs: a job that needs more is
    // left for a runner that has it (JobQueue::claim_job).
    auto facts = local::probe_device("cuda");
    if (facts && facts->compute_capability) o.compute_capability = local::capability_tenths(*facts->compute_capability);
    if (facts) o.gpu_count = facts->gpus;
    if (!o.compute_capability)
      return fail("cannot read this GPU's compute capability (nvidia-smi --query-gpu=compute_cap): a CUDA worker "
                  "needs it to claim only jobs its device can run; update the NVIDIA driver (compute_cap needs 510 or "
                  "later) or run the worker with --device cpu");
  }
  return ok();
}

namespace {
// What any worker checks and settles before it reaches for its work: a
// worker on an unknown GPU refuses to start whatever its transport.
Result<void> prepare(WorkerOptions& o) {
  if (o.device != "cpu" && o.device != "cuda") return fail("unknown device '" + o.device + "': use cpu or cuda");
  if (o.lease_seconds < 3 || o.lease_seconds > 86400) return fail("--lease must be between 3 and 86400 seconds");
  if (o.worker_id.empty()) o.worker_id = host_name() + ":" + std::to_string(::getpid());
  if (auto r = resolve_device_class(o); !r) return r;
  // The runner tells the judge its device class from this process's
  // KZOO_DEVICE_CLASS; a worker runs one device, so the class is set once.
  if (::setenv("KZOO_DEVICE_CLASS", o.device_class.c_str(), 1) != 0) return fail("setenv KZOO_DEVICE_CLASS failed");
  if (runner::warm_wanted(o.warm, o.device) && !o.gpu_pool && !o.warm_slot)
    o.warm_slot = std::make_shared<runner::WarmSlot>(o.log);
  return ok();
}

// The judge's modules compiled before the first claim (runner/bytecode_cache.hpp): on a
// fresh runner the warm-up (every module of torch on the H200's venv, which ships none)
// would otherwise run inside the first job's lease and its time from upload to verdict.
// A cache that cannot be used is said once; grades then run without it, as before.
void prepare_bytecode(const WorkerOptions& o) {
  runner::GradeOptions g = jobs::runner_grade_options(o);
  g.progress = o.log;
  auto dir = runner::prepare_bytecode_cache(g);
  if (!o.log) return;
  if (dir)
    o.log("bytecode cache " + *dir + ": current for " + g.python);
  else
    o.log("no bytecode cache (" + dir.error().message + "): each judge's start compiles what it imports that has no bytecode");
}
}  // namespace

Result<std::unique_ptr<Worker>> Worker::open(WorkerOptions o) {
  if (auto r = prepare(o); !r) return tl::unexpected(r.error());
  auto t = o.server_url.empty() ? jobs::open_direct(o.data_dir, o.state_url) : open_api(o.server_url, o.token);
  if (!t) return tl::unexpected(t.error());
  prepare_bytecode(o);
  return std::unique_ptr<Worker>(new Worker(std::move(o), std::move(*t)));
}

Result<std::unique_ptr<Worker>> Worker::open(WorkerOptions o, std::unique_ptr<JobTransport> t) {
  if (auto r = prepare(o); !r) return tl::unexpected(r.error());
  prepare_bytecode(o);
  return std::unique_ptr<Worker>(new Worker(std::move(o), std::move(t)));
}

void Worker::say(const std::string& line) const {
  if (o_.log) o_.log(line);
}

Result<std::optional<JobReport>> Worker::run_once() {
  if (auto r = t_->requeue_expired(); r) {
    for (const auto& q : *r)
      say(fmt::format("job {}: lease of {} expired, now {}", q.job_id, q.lost_owner, store::to_string(q.now)));
  } else {
    say("requeue_expired failed: " + r.error().message);
  }
  // A GPU runner takes only what its node can run; a CPU runner says nothing
  // and may take anything (it checks correctness, which counts for no GPU board).
  store::RunnerHas has;
  if (o_.device == "cuda") {
    has.compute_capability = o_.compute_capability;
    if (const int n = o_.node_gpus(); n > 0) has.gpus = n;
  }
  auto claimed = t_->claim(o_.worker_id, o_.lease_seconds, has);
  if (!claimed) return fail("claiming a job failed: " + claimed.error().message);
  if (!*claimed) return std::optional<JobReport>();
  // A user's batch script runs as Slurm would run it; everything else is graded.
  if ((*claimed)->is_batch()) {
    if (o_.warm_slot) o_.warm_slot->clear();  // the script gets the device's memory, not an idle judge
    return std::optional<JobReport>(jobs::run_batch_job(*t_, **claimed, o_));
  }
  return std::optional<JobReport>(jobs::grade_job(*t_, **claimed, o_));
}

std::int64_t Worker::run_loop(const std::atomic<bool>& stop, std::chrono::milliseconds idle) {
  std::int64_t handled = 0;
  while (!stop.load()) {
    auto r = run_once();
    if (r && *r) {
      ++handled;
      continue;
    }
    if (!r) say(r.error().message);
    for (auto slept = std::chrono::milliseconds(0); slept < idle && !stop.load(); slept += std::chrono::milliseconds(100))
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return handled;
}

}  // namespace kzoo::worker
