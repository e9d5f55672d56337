// `kzoo slurm`: the Slurm runner (slurm/dispatcher.hpp). Runs beside the
// server, on a host that reaches the state and the repository and has the
// Slurm client commands; each graded job becomes a batch job running
// `kzoo worker --once` in api mode. Exit codes: 0 after SIGINT/SIGTERM (or
// one step with --step), 2 on usage or I/O errors.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>

#include <nlohmann/json.hpp>

#include "kzoo/cli/command.hpp"
#include "kzoo/server/config.hpp"
#include "kzoo/server/data_dir.hpp"
#include "kzoo/slurm/dispatcher.hpp"
#include "kzoo/store/open_state.hpp"

namespace cmd_slurm {  // per command: a unity build joins commands (CMakeLists.txt)

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

struct Args {
  std::string data, state, server, token_file, dir, catalog, judge_dir, device = "cpu", python;
  int lease = 120, iterations = 0, max_batch = 4, poll_ms = 1000, pending_timeout = 900;
  bool step = false, no_sandbox = false, json = false;
};

// --json: each line the dispatcher logs becomes one JSON line on stdout,
// {"time", "event": "log", "message"}, flushed as it happens (as kzoo worker --json).
void emit(const std::string& event, std::string_view message) {
  char at[32];
  std::time_t now = std::time(nullptr);
  std::strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  nlohmann::json line{{"time", at}, {"event", event}, {"message", std::string(message)}};
  std::cout << line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
}

std::string self_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("kzoo") : p.string();
}

const bool registered = kzoo::cli::register_command(
    "slurm", "Run graded jobs as Slurm batch jobs: one `kzoo worker --once` (api mode) per queued job",
    [](CLI::App& sub) -> kzoo::cli::Runner {
      auto a = std::make_shared<Args>();
      auto env = kzoo::server::process_env();
      a->data = env("KZOO_DATA").value_or(kzoo::server::default_config(env).data_dir);
      sub.add_option("--data", a->data, "data directory (kernel_data.git and the state); default $KZOO_DATA");
      sub.add_option("--state", a->state, "the state: sqlite:PATH or postgresql://... (default $KZOO_STATE, else DATA/kzoo.json's)");
      if (const char* s = std::getenv("KZOO_SERVER")) a->server = s;
      sub.add_option("--server", a->server, "the server the batch jobs' workers reach (runner API; default $KZOO_SERVER)");
      sub.add_option("--token-file", a->token_file, "file holding the runner token the batch jobs use")->required();
      sub.add_option("--dir", a->dir, "where batch scripts, logs and batch.jsonl go (default DATA/slurm); compute nodes read it");
      sub.add_option("--catalog", a->catalog, "the workers' catalog directory (holding tasks/)");
      sub.add_option("--judge-dir", a->judge_dir, "the workers' directory holding kzoo_judge/");
      sub.add_option("--python", a->python, "the workers' python inside the sandbox");
      sub.add_option("--device", a->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
      sub.add_option("--lease", a->lease, "the workers' lease in seconds")->check(CLI::Range(3, 86400));
      sub.add_option("--iterations", a->iterations, "timed iterations per case (KZOO_OPTIONS)")->check(CLI::Range(1, 1000000));
      sub.add_option("--max-batch", a->max_batch, "batch jobs pending or running at once (default 4)")->check(CLI::Range(1, 100000));
      sub.add_option("--poll-ms", a->poll_ms, "how often squeue is asked (default 1000)")->check(CLI::Range(100, 600000));
      sub.add_option("--pending-timeout", a->pending_timeout, "seconds a batch job may wait for its allocation (default 900)")
          ->check(CLI::Range(10, 86400 * 7));
      sub.add_flag("--no-sandbox", a->no_sandbox, "the workers run without bubblewrap (tests and trusted code only)");
      sub.add_flag("--step", a->step, "one pass, then exit");
      sub.add_flag("--json", a->json, "print every event as one JSON line on stdout");
      return [a] {
        auto fail = [a](const std::string& m) {
          if (a->json) emit("error", m);
          std::cerr << "kzoo slurm: " << m << "\n";
          return kzoo::cli::kExitError;
        };
        if (a->server.empty()) return fail("no server: pass --server URL or set KZOO_SERVER (the runner API the batch jobs reach)");
        if (!kzoo::server::is_data_dir(a->data)) return fail(a->data + " is not a kzoo data directory: pass --data");
        auto url = kzoo::server::resolve_state_url(a->data, a->state, kzoo::server::process_env());
        if (!url) return fail(url.error().message);
        auto db = kzoo::store::open_state(*url);
        if (!db) return fail(db.error().message);
        auto repo = kzoo::store::open_kernel_repo(kzoo::server::DataPaths{a->data}.repo(), *url);
        if (!repo) return fail(repo.error().message);
        namespace fs = std::filesystem;
        kzoo::slurm::DispatchOptions o;
        o.dir = fs::absolute(a->dir.empty() ? a->data + "/slurm" : a->dir).lexically_normal().string();
        o.worker = {self_path(), "worker", "--once", "--server", a->server, "--token-file",
                    fs::absolute(a->token_file).string(), "--device", a->device, "--lease", std::to_string(a->lease)};
        if (!a->catalog.empty()) o.worker.insert(o.worker.end(), {"--catalog", fs::absolute(a->catalog).string()});
        if (!a->judge_dir.empty()) o.worker.insert(o.worker.end(), {"--judge-dir", fs::absolute(a->judge_dir).string()});
        if (!a->python.empty()) o.worker.insert(o.worker.end(), {"--python", a->python});
        if (a->iterations > 0) o.worker.insert(o.worker.end(), {"--iterations", std::to_string(a->iterations)});
        if (a->no_sandbox) o.worker.push_back("--no-sandbox");
        o.max_batch = a->max_batch;
        o.poll = std::chrono::milliseconds(a->poll_ms);
        o.pending_timeout_s = a->pending_timeout;
        o.log = [json = a->json](std::string_view line) {
          if (json) emit("log", line);
          else std::cerr << "kzoo slurm: " << line << "\n";
        };
        auto d = kzoo::slurm::Dispatcher::open(std::move(o), **db, std::move(*repo));
        if (!d) return fail(d.error().message);
        if (a->step) {
          if (auto r = d->step(); !r) return fail(r.error().message);
          return kzoo::cli::kExitOk;
        }
        std::signal(SIGINT, on_signal);
        std::signal(SIGTERM, on_signal);
        const std::string started = "dispatching the jobs of " + a->data + " to Slurm (" +
                                    std::to_string(d->outstanding().size()) + " batch jobs still out)";
        if (a->json) emit("started", started);
        else std::cerr << "kzoo slurm: " << started << "\n";
        d->run(g_stop);
        if (a->json) emit("stopped", "batch jobs already submitted run on");
        else std::cerr << "kzoo slurm: stopped; batch jobs already submitted run on\n";
        return kzoo::cli::kExitOk;
      };
    });

}  // namespace
