#include "kzoo/runner/warm_judge.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kzoo/runner/pipes.hpp"
#include "kzoo/runner/signature.hpp"

namespace kzoo::runner {
namespace fs = std::filesystem;

namespace {

// The environment the warm process starts with: the steps' own, less what
// only a job has (its kernel, its options); go() sends the job's whole one.
std::vector<std::pair<std::string, std::string>> warm_env(std::vector<std::pair<std::string, std::string>> env) {
  std::erase_if(env, [](const auto& kv) { return kv.first == "KZOO_OPTIONS" || kv.first == "KZOO_KERNEL_ID"; });
  return env;
}

std::string last_line_of(const std::string& text) {
  auto end = text.find_last_not_of(" \n\r\t");
  if (end == std::string::npos) return "no output";
  auto begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin == std::string::npos ? 0 : begin + 1));
}

}  // namespace

WarmJudge::WarmJudge(std::string dir, Workdir skeleton, SandboxSpec spec, SandboxOptions options,
                     StartedSandbox sandbox, int control, int verdict)
    : dir_(std::move(dir)), skeleton_(std::move(skeleton)), spec_(std::move(spec)), options_(std::move(options)),
      sandbox_(std::move(sandbox)), control_(control), verdict_(verdict), started_at_(std::chrono::steady_clock::now()) {}

WarmJudge::~WarmJudge() {
  if (control_ >= 0) ::close(control_);
  sandbox_ = StartedSandbox();  // kills what still runs, before its W goes
  if (verdict_ >= 0) ::close(verdict_);
  std::error_code ec;
  fs::remove_all(dir_, ec);
}

Result<std::unique_ptr<WarmJudge>> WarmJudge::start(const GradeOptions& o, bool ab) {
  std::string dir = fs::temp_directory_path().string() + "/kzoo-warm-XXXXXX";
  if (::mkdtemp(dir.data()) == nullptr) return fail(std::string("cannot make a temporary directory: ") + std::strerror(errno));
  auto cleanup = [&] {
    std::error_code ec;
    fs::remove_all(dir, ec);
  };
  fs::permissions(dir, fs::perms(0755));  // the sandbox uid must reach W inside it
  auto skel = make_workdir_skeleton(dir + "/w");
  if (!skel) return cleanup(), tl::unexpected(skel.error());
  GradeOptions g = o;
  g.judge_options = nlohmann::json::object();  // the job's, sent at go
  g.iterations.reset();
  const std::string inc_dir = skel->root + "/.kzoo/incumbent";
  if (std::none_of(g.extra_ro_binds.begin(), g.extra_ro_binds.end(), [&](const Bind& b) { return b.host == inc_dir; }))
    g.extra_ro_binds.push_back({inc_dir, std::string(kSandboxWorkdir) + "/.kzoo/incumbent"});
  auto setup = harness_setup(*skel, "", g);
  if (!setup) return cleanup(), tl::unexpected(setup.error());

  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    return cleanup(), fail(std::string("socketpair failed: ") + std::strerror(errno));
  Pipe verdict;
  if (auto r = open_pipe(verdict); !r) {
    ::close(sv[0]);
    ::close(sv[1]);
    return cleanup(), tl::unexpected(r.error());
  }
  SandboxSpec spec = setup->spec;
  spec.argv = {spec.argv.at(0), "-m", "kzoo_judge.warm"};
  spec.env = warm_env(setup->env);
  spec.env.emplace_back("KZOO_CONTROL_FD", std::to_string(sv[1]));
  spec.env.emplace_back("KZOO_WARM_AB", ab ? "1" : "0");
  spec.env.emplace_back(std::string(kVerdictFdVariable), std::to_string(verdict.w));
  spec.pass_fds = {sv[1], verdict.w};
  auto started = StartedSandbox::start(spec, setup->options);
  ::close(sv[1]);  // the sandbox holds its own copy
  if (!started) {
    ::close(sv[0]);
    return cleanup(), tl::unexpected(started.error());
  }
  const int verdict_r = std::exchange(verdict.r, -1);
  return std::unique_ptr<WarmJudge>(new WarmJudge(dir, std::move(*skel), std::move(spec), setup->options,
                                                  std::move(*started), sv[0], verdict_r));
}

std::string WarmJudge::unfit(const Workdir& w, const SandboxSpec& spec, const SandboxOptions& options) const {
  if (used_) return "it served a run already";
  if (w.root != skeleton_.root) return "it was started on " + skeleton_.root + ", not " + w.root;
  if (spec.argv.empty() || spec.argv[0] != spec_.argv[0]) return "another interpreter";
  if (spec.devices != spec_.devices) return "other device nodes";
  if (spec.memory_bytes != spec_.memory_bytes || spec.max_pids != spec_.max_pids || spec.cpus != spec_.cpus ||
      spec.tmpfs_bytes != spec_.tmpfs_bytes)
    return "other limits";
  if (spec.cpu_affinity != spec_.cpu_affinity) return "other CPUs";
  if (spec.stdout_cap != spec_.stdout_cap || spec.stderr_cap != spec_.stderr_cap) return "other output caps";
  for (const auto& b : spec.ro_binds)
    if (std::none_of(spec_.ro_binds.begin(), spec_.ro_binds.end(),
                     [&](const Bind& m) { return m.host == b.host && m.inside == b.inside; }))
      return "no read-only bind of " + b.host + " at " + b.inside;
  if (options.sandboxed != options_.sandboxed || options.bwrap != options_.bwrap || options.uid != options_.uid ||
      options.gid != options_.gid || options.cgroup_root != options_.cgroup_root)
    return "another sandbox";
  if (!sandbox_.running()) return "it has ended";
  return "";
}

Result<HarnessRun> WarmJudge::go(const std::vector<std::pair<std::string, std::string>>& env, std::string_view seed,
                                 std::chrono::seconds timeout) {
  if (used_) return fail("it served a run already");
  used_ = true;
  nlohmann::json vars = nlohmann::json::object();
  for (const auto& [k, v] : env) vars[k] = v;
  const std::string message = nlohmann::json{{"env", vars}, {"seed", to_hex(seed)}}.dump();
  std::size_t sent = 0;
  while (sent < message.size()) {
    ssize_t n = ::send(control_, message.data() + sent, message.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      auto ended = sandbox_.wait(std::chrono::seconds(1));
      return fail("it ended before it was handed the run" +
                  (ended ? ": " + last_line_of(ended->stderr_tail) : std::string()));
    }
    sent += static_cast<std::size_t>(n);
  }
  ::close(control_);  // end of the message
  control_ = -1;
  auto r = sandbox_.wait(timeout);
  if (!r) return tl::unexpected(r.error());
  HarnessRun run{std::move(*r), drain_pipe(verdict_, kVerdictCap)};
  if (run.sandbox.exit_code == kWarmRefusedStatus && run.sandbox.stdout_data.empty())
    return fail("it refused the run: " + last_line_of(run.sandbox.stderr_tail));
  return run;
}

Result<Workdir> lay_out_run(const WarmJudge* warm, const std::string& fresh_dir, const package::PackageTree& harness,
                            const package::PackageTree& submission, std::string_view task_json) {
  if (warm != nullptr) return fill_workdir(warm->skeleton(), harness, submission, task_json);
  return lay_out_workdir(fresh_dir, harness, submission, task_json);
}

Result<void> add_incumbent(const Workdir& w, const package::PackageTree& src, GradeOptions& g) {
  const std::string inc_dir = w.root + "/.kzoo/incumbent";
  std::error_code ec;
  // A skeleton has the folder already (bound when its judge started): fill it in place.
  auto r = fs::is_directory(inc_dir, ec) ? package::write_tree_into(src, inc_dir, {}) : package::write_tree(src, inc_dir);
  if (!r) return fail("cannot lay out the incumbent: " + r.error().message);
  g.judge_options["incumbent_src"] = inc_dir + "/src";
  g.extra_ro_binds.push_back({inc_dir, std::string(kSandboxWorkdir) + "/.kzoo/incumbent"});
  return ok();
}

Result<WarmMode> parse_warm_mode(std::string_view text) {
  if (text == "auto") return WarmMode::auto_;
  if (text == "on") return WarmMode::on;
  if (text == "off") return WarmMode::off;
  return fail("--warm-judge takes auto, on or off, not '" + std::string(text) + "'");
}

bool warm_wanted(WarmMode mode, const std::string& device) {
  return mode == WarmMode::on || (mode == WarmMode::auto_ && device == "cuda");
}

WarmSlot::WarmSlot(std::function<void(std::string_view)> log) : log_(std::move(log)) {}
WarmSlot::~WarmSlot() = default;

std::unique_ptr<WarmJudge> WarmSlot::take() {
  std::lock_guard lock(m_);
  auto w = std::move(warm_);
  if (w && std::chrono::steady_clock::now() - w->started_at() > kMaxAge) {
    if (log_) log_("the judge started ahead is over an hour old: ended, this run starts cold");
    return nullptr;
  }
  return w;
}

void WarmSlot::prepare(const GradeOptions& options, bool ab) {
  std::lock_guard lock(m_);
  if (warm_ && warm_->running()) return;
  auto w = WarmJudge::start(options, ab);
  if (!w) {
    warm_.reset();
    if (log_) log_("cannot start the next run's judge ahead (" + w.error().message + "); it will start cold");
    return;
  }
  warm_ = std::move(*w);
}

void WarmSlot::clear() {
  std::lock_guard lock(m_);
  warm_.reset();
}

}  // namespace kzoo::runner
