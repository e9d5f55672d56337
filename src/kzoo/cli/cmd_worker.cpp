// `kzoo worker`: run graded jobs from a data directory, or through a server's
// runner API (--server, or $KZOO_SERVER unless --data is given) (worker/worker.hpp).
// Exit codes: with --once, 0 when a job was accepted or nothing was queued,
// 1 when the job was rejected or failed, 2 on usage or I/O errors; without
// --once it runs until SIGINT/SIGTERM and exits 0.
#include <algorithm>
#include <atomic>
#include <ctime>
#include <regex>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "kzoo/cli/command.hpp"
#include "kzoo/runner/cpu_list.hpp"
#include "kzoo/runner/gpu_cpus.hpp"
#include "kzoo/server/config.hpp"
#include "kzoo/worker/worker.hpp"

namespace cmd_worker {  // per command: a unity build joins commands (CMakeLists.txt)

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

using kzoo::cli::env_or;

// The submission's bytes reach our logs (judge stderr, reasons): no terminal escapes.
std::string sanitise(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out.push_back((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f ? '?' : static_cast<char>(c));
  return out;
}

// The catalog root holds tasks/. `kzoo serve` names the catalog's kernel_data
// root instead (KZOO_CATALOG there); accept that too and use its parent.
std::string catalog_root(const std::string& dir) {
  namespace fs = std::filesystem;
  if (fs::is_directory(dir + "/tasks")) return dir;
  auto parent = fs::path(dir).lexically_normal().parent_path().string();
  if (fs::is_regular_file(dir + "/.kernel_data") && fs::is_directory(parent + "/tasks")) return parent;
  return dir;
}

// --json: every event one JSON line on stdout, flushed as it happens:
// {"time", "worker", "event", "job"?, "message"?, ...}. Lines the worker logs
// about a job ("job N: ...") carry the job's id.
void emit(nlohmann::json e, const std::string& worker) {
  char at[32];
  std::time_t now = std::time(nullptr);
  std::strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  nlohmann::json line{{"time", at}};
  if (!worker.empty()) line["worker"] = worker;
  line.update(e);
  std::cout << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
}

nlohmann::json log_event(std::string_view text) {
  nlohmann::json e{{"event", "log"}, {"message", std::string(text)}};
  static const std::regex kJob("^job ([0-9]{1,18}): ");
  std::match_results<std::string_view::const_iterator> m;
  if (std::regex_search(text.begin(), text.end(), m, kJob)) e["job"] = std::stoll(m[1].str());
  return e;
}

struct Args {
  kzoo::worker::WorkerOptions o;
  bool once = false;
  bool json = false;
  bool data_given = false;  // --data on the command line
  int timeout_s = 1800;
  int iterations = 0;
  double min_gain = -1, max_p = -1;
  std::string token_file;
  std::string state;
  std::string gpus;  // --gpus 0,1,...
  std::string cpu_pinning = "auto";  // --cpu-pinning auto|numa|none
  std::string warm = "auto";         // --warm-judge auto|on|off
};

// "0,1,3" -> {0, 1, 3}: nvidia-smi indices, each once; an error names the bad item.
kzoo::Result<std::vector<int>> parse_gpus(const std::string& text) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const bool digits = !item.empty() && item.size() <= 3 && item.find_first_not_of("0123456789") == std::string::npos;
    if (!digits) return kzoo::fail("--gpus: \"" + item + "\" is not a GPU index: give nvidia-smi's indices, e.g. --gpus 0,1,2,3");
    const int g = std::stoi(item);
    if (std::find(out.begin(), out.end(), g) != out.end())
      return kzoo::fail("--gpus: GPU " + item + " is named twice: one job per GPU at a time");
    out.push_back(g);
  }
  if (out.empty()) return kzoo::fail("--gpus: no GPU named: give nvidia-smi's indices, e.g. --gpus 0,1");
  return out;
}

// --cpu-pinning: the CPUs each GPU's jobs run on (runner/gpu_cpus.hpp), into
// o.gpu_cpus. auto pins on a node whose driver lists two GPUs or more (where
// neighbours' jobs could share a core) and says why when it cannot; numa pins
// or fails; none leaves the jobs' processes free to use any CPU. The lines
// it writes are for the log.
kzoo::Result<std::vector<std::string>> pin_cpus(kzoo::worker::WorkerOptions& o, const std::string& mode,
                                                const std::vector<int>& gpus) {
  std::vector<std::string> lines;
  if (o.device != "cuda" || mode == "none") return lines;
  auto shares = kzoo::runner::gpu_cpu_shares(kzoo::runner::allowed_cpus());
  if (!shares) {
    if (mode == "numa") return kzoo::fail("--cpu-pinning numa: " + shares.error().message);
    lines.push_back("jobs are not pinned to CPUs: " + shares.error().message);
    return lines;
  }
  if (mode == "auto" && shares->cpus.size() < 2) return lines;  // no neighbours on this node
  o.gpu_cpus = shares->cpus;
  for (const auto& [g, cpus] : shares->cpus)
    if (gpus.empty() || std::find(gpus.begin(), gpus.end(), g) != gpus.end())
      lines.push_back("GPU " + std::to_string(g) + "'s jobs run on CPUs " + kzoo::runner::format_cpu_list(cpus));
  for (const auto& n : shares->notes) lines.push_back(n);
  return lines;
}

// --gpus with several GPUs: one job slot per GPU in this process, each with its
// own transport (a connection is one thread's) and id (<id>/gpu<N>). The GPUs
// are the node's pool (jobs/gpu_pool.hpp): each job takes its task's
// environment.gpus of them (one by default) and its sandbox binds only those
// device nodes. Runs until SIGINT/SIGTERM.
int run_per_gpu(const Args& a, const std::vector<int>& gpus) {
  std::string base = a.o.worker_id;
  if (base.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    base = std::string(host[0] ? host : "localhost") + ":" + std::to_string(::getpid());
  }
  std::mutex out_mu;  // one line at a time on stdout and stderr
  std::vector<std::unique_ptr<kzoo::worker::Worker>> workers;
  auto pool = std::make_shared<kzoo::jobs::GpuPool>(gpus);
  for (int g : gpus) {
    kzoo::worker::WorkerOptions o = a.o;
    o.gpus = {g};  // the slot's name and its device checks; the pool decides each job's GPUs
    o.gpu_pool = pool;
    o.worker_id = base + "/gpu" + std::to_string(g);
    const bool json = a.json;
    const std::string id = o.worker_id;
    o.log = [json, id, &out_mu](std::string_view line) {
      std::lock_guard lock(out_mu);
      if (json) emit(log_event(line), id);
      else std::cerr << "kzoo worker: " << id << ": " << sanitise(line) << "\n";
    };
    auto w = kzoo::worker::Worker::open(o);
    if (!w) {
      std::cerr << "kzoo worker: " << id << ": " << w.error().message << "\n";
      if (json) emit({{"event", "error"}, {"error", w.error().message}}, id);
      return kzoo::cli::kExitError;
    }
    const auto& opened = (*w)->options();
    if (json)
      emit({{"event", "started"}, {"serving", o.server_url.empty() ? o.data_dir : o.server_url}, {"device", opened.device},
            {"device_class", opened.device_class}, {"gpus", opened.gpus},
            {"gpu_name", opened.gpu_name.empty() ? nlohmann::json() : nlohmann::json(opened.gpu_name)}},
           id);
    else
      std::cerr << "kzoo worker: " << id << " serving " << (o.server_url.empty() ? o.data_dir : o.server_url)
                << " as device class " << opened.device_class << ", a job slot of GPUs " << a.gpus << "\n";
    workers.push_back(std::move(*w));
  }
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  std::atomic<std::int64_t> total{0};
  std::vector<std::thread> threads;
  for (auto& w : workers) threads.emplace_back([&total, wp = w.get()] { total += wp->run_loop(g_stop); });
  for (auto& t : threads) t.join();
  std::lock_guard lock(out_mu);
  if (a.json) emit({{"event", "stopped"}, {"jobs", total.load()}}, base);
  else std::cerr << "kzoo worker: stopped after " << total.load() << " job(s) on " << gpus.size() << " GPUs\n";
  return kzoo::cli::kExitOk;
}

const bool registered = kzoo::cli::register_command(
    "worker", "Run graded jobs: claim, grade in the sandbox against the incumbent, decide, commit accepted source",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto a = std::make_shared<Args>();
      auto env = kzoo::server::process_env();
      a->o.data_dir = env("KZOO_DATA").value_or(kzoo::server::default_config(env).data_dir);
      a->o.catalog_dir = env_or("KZOO_CATALOG", std::string(KZOO_SOURCE_DIR) + "/catalog");
      a->o.judge_dir = env_or("KZOO_JUDGE_DIR", std::string(KZOO_SOURCE_DIR) + "/judge");
      a->o.python = env_or("KZOO_PYTHON", "/usr/bin/python3");
      sub.add_option("--data", a->o.data_dir, "data directory (kernel_data.git, state.db, uploads/); default $KZOO_DATA")
          ->each([a](const std::string&) { a->data_given = true; });
      sub.add_option("--state", a->state,
                     "the state beside --data: sqlite:PATH or postgresql://... (default $KZOO_STATE, else DATA/kzoo.json's)");
      sub.add_option("--server", a->o.server_url,
                     "work through this server's runner API instead of a data directory (needs a runner token); "
                     "default $KZOO_SERVER, unless --data is given");
      sub.add_option("--token-file", a->token_file,
                     "file holding the runner token for --server (default: $KZOO_TOKEN)");
      sub.add_option("--id", a->o.worker_id, "worker id (lease owner); default host:pid");
      sub.add_option("--device", a->o.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
      sub.add_option("--device-class", a->o.device_class,
                     "device class of this worker's results (catalog device_classes.json); default: read from the GPU's "
                     "name, cpu for --device cpu. Required when no class matches the GPU");
      sub.add_flag("--once", a->once, "handle at most one job, then exit");
      sub.add_option("--lease", a->o.lease_seconds, "lease in seconds, renewed every third of it")->check(CLI::Range(3, 86400));
      sub.add_option("--catalog", a->o.catalog_dir, "catalog directory holding tasks/ (default $KZOO_CATALOG or the source tree's)");
      sub.add_option("--judge-dir", a->o.judge_dir, "directory holding kzoo_judge/ (default $KZOO_JUDGE_DIR)");
      sub.add_option("--python", a->o.python, "python interpreter inside the sandbox (default $KZOO_PYTHON or /usr/bin/python3)");
      sub.add_option("--timeout", a->timeout_s, "benchmark.py wall-clock limit in seconds")->check(CLI::Range(1, 86400));
      sub.add_option("--iterations", a->iterations, "timed iterations per case (KZOO_OPTIONS)")->check(CLI::Range(1, 1000000));
      sub.add_option("--min-gain", a->min_gain, "smallest speed-up over the incumbent worth a commit (default 0.01)")
          ->check(CLI::Range(0.0, 10.0));
      sub.add_option("--max-p", a->max_p, "largest sign-test probability that noise alone explains the A/B wins (default 0.01)")
          ->check(CLI::Range(0.0, 1.0));
      sub.add_flag("--no-sandbox", [a](std::int64_t) { a->o.sandboxed = false; },
                   "run without bubblewrap (tests and trusted code only)");
      sub.add_option("--gpus", a->gpus,
                     "grade one job per GPU at once on these GPUs (nvidia-smi indices, e.g. 0,1,2,3); each job's "
                     "sandbox sees only its own GPU. Needs --device cuda");
      sub.add_option("--cpu-pinning", a->cpu_pinning,
                     "which CPUs a GPU job's processes run on: auto (default) gives each GPU whole cores of its own "
                     "NUMA node, shared with no other GPU's jobs, on a node with two GPUs or more; numa does so on "
                     "any node (an error where the topology cannot be read); none lets them use any CPU")
          ->check(CLI::IsMember({"auto", "numa", "none"}));
      sub.add_option("--warm-judge", a->warm,
                     "start the next job's judge (its interpreter, torch, CUDA context) when a job's run ends, so "
                     "the next verdict does not wait for it: auto (default) on cuda, on, off. Not with a pool of GPUs")
          ->check(CLI::IsMember({"auto", "on", "off"}));
      sub.add_flag("--json", a->json, "print every event (and --once's report) as one JSON line on stdout");
      return [a] {
        auto& o = a->o;
        if (o.server_url.empty() && !a->data_given)
          if (const char* env = std::getenv("KZOO_SERVER"); env && *env) o.server_url = env;
        // Before the worker has an id, events name what it will be called.
        auto fail = [&](const std::string& msg) {
          std::cerr << "kzoo worker: " << msg << "\n";
          if (a->json) emit({{"event", "error"}, {"error", msg}}, o.worker_id);
          return kzoo::cli::kExitError;
        };
        // Usage first: --gpus is checked before anything is opened.
        std::vector<int> gpus;
        if (!a->gpus.empty()) {
          auto parsed = parse_gpus(a->gpus);
          if (!parsed) return fail(parsed.error().message);
          if (o.device != "cuda") return fail("--gpus needs --device cuda");
          if (parsed->size() > 1 && a->once)
            return fail("--once grades one job; --gpus with several GPUs grades one job per GPU until stopped");
          gpus = *parsed;
        }
        if (!o.server_url.empty()) {
          // A token on the command line would show in `ps`: a file or the environment only.
          if (!a->token_file.empty()) {
            std::ifstream in(a->token_file);
            if (!in || !std::getline(in, o.token)) return fail("cannot read a token from " + a->token_file);
            while (!o.token.empty() && (o.token.back() == '\r' || o.token.back() == ' ')) o.token.pop_back();
          } else if (const char* t = std::getenv("KZOO_TOKEN"); t && *t) {
            o.token = t;
          }
        }
        if (o.server_url.empty()) {
          auto url = kzoo::server::resolve_state_url(o.data_dir, a->state, kzoo::server::process_env());
          if (!url) {
            std::cerr << "kzoo worker: " << url.error().message << "\n";
            return kzoo::cli::kExitError;
          }
          o.state_url = *url;
        }
        o.catalog_dir = catalog_root(o.catalog_dir);
        o.timeout = std::chrono::seconds(a->timeout_s);
        o.warm = *kzoo::runner::parse_warm_mode(a->warm);  // CLI11 checked it
        if (a->iterations > 0) o.iterations = a->iterations;
        if (a->min_gain >= 0) o.policy.min_gain = a->min_gain;
        if (a->max_p >= 0) o.policy.max_p = a->max_p;
        if (const char* j = std::getenv("KZOO_WORKER_JUDGE_OPTIONS"); j && *j) {
          auto parsed = nlohmann::json::parse(j, nullptr, false);
          if (!parsed.is_object()) return fail("KZOO_WORKER_JUDGE_OPTIONS is not a JSON object");
          o.judge_options = parsed;
        }
        auto pinned = pin_cpus(o, a->cpu_pinning, gpus);
        if (!pinned) return fail(pinned.error().message);
        for (const auto& line : *pinned) {
          if (a->json) emit(log_event(line), o.worker_id);
          else std::cerr << "kzoo worker: " << line << "\n";
        }
        if (gpus.size() > 1) return run_per_gpu(*a, gpus);
        o.gpus = gpus;
        // The worker's id is settled by Worker::open; its log lines name it from then on.
        auto id = std::make_shared<std::string>(o.worker_id);
        if (a->json) o.log = [id](std::string_view line) { emit(log_event(line), *id); };
        else o.log = [](std::string_view line) { std::cerr << "kzoo worker: " << sanitise(line) << "\n"; };
        auto w = kzoo::worker::Worker::open(o);
        if (!w) return fail(w.error().message);
        const auto& opened = (*w)->options();
        *id = opened.worker_id;
        if (a->json)
          emit({{"event", "started"}, {"serving", o.server_url.empty() ? o.data_dir : o.server_url},
                {"device", opened.device}, {"device_class", opened.device_class},
                {"gpu_name", opened.gpu_name.empty() ? nlohmann::json() : nlohmann::json(opened.gpu_name)}},
               *id);
        else
          std::cerr << "kzoo worker: " << opened.worker_id << " serving " << (o.server_url.empty() ? o.data_dir : o.server_url)
                    << " as device class " << opened.device_class
                    << (opened.gpu_name.empty() ? "" : " (" + opened.gpu_name + ")") << "\n";
        if (a->once) {
          auto r = (*w)->run_once();
          if (!r) return fail(r.error().message);
          if (!*r) {
            if (a->json) emit({{"event", "idle"}, {"message", "nothing queued"}}, *id);
            else std::cerr << "kzoo worker: nothing queued\n";
            return kzoo::cli::kExitOk;
          }
          const auto& rep = **r;
          nlohmann::json j{{"job_id", rep.job_id},
                           {"submission_id", rep.submission_id},
                           {"outcome", kzoo::store::to_string(kzoo::store::to_state(rep.outcome))},
                           {"completed", rep.completed},
                           {"accepted_commit", rep.accepted_commit},
                           {"evidence_commit", rep.evidence_commit},
                           {"reused_commit", rep.reused_commit},
                           {"reasons", rep.reasons}};
          if (a->json) {
            j["event"] = "report";
            emit(j, *id);
          } else {
            std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
          }
          return rep.completed && rep.outcome == kzoo::store::Outcome::accepted ? kzoo::cli::kExitOk : kzoo::cli::kExitInvalid;
        }
        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        auto n = (*w)->run_loop(g_stop);
        if (a->json) emit({{"event", "stopped"}, {"jobs", n}}, *id);
        else std::cerr << "kzoo worker: stopped after " << n << " job(s)\n";
        return kzoo::cli::kExitOk;
      };
    });

}  // namespace
