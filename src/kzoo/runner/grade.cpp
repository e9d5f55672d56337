#include "kzoo/runner/grade.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include "kzoo/format/json_schema.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/package/inspect.hpp"
#include "kzoo/package/kernel_id.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/runner/pipes.hpp"
#include "kzoo/runner/signature.hpp"
#include "kzoo/runner/warm_judge.hpp"

namespace kzoo::runner {
namespace fs = std::filesystem;
namespace {

GradeOutcome outcome(GradeStatus s, std::string reason) {
  GradeOutcome o;
  o.status = s;
  o.reason = std::move(reason);
  return o;
}

Result<std::string> read_whole(const std::string& path, std::size_t cap) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read " + path + ": " + std::strerror(errno));
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (s.size() > cap) return fail(path + " is larger than " + std::to_string(cap) + " bytes");
  return s;
}

bool is_tarball(const std::string& p) {
  auto ends = [&](std::string_view suf) { return p.size() >= suf.size() && p.compare(p.size() - suf.size(), suf.size(), suf) == 0; };
  return ends(".tar.gz") || ends(".tgz");
}

std::uint64_t default_memory() {
  long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGE_SIZE);
  std::uint64_t ram = pages > 0 && size > 0 ? static_cast<std::uint64_t>(pages) * size : (8ull << 30);
  return std::min<std::uint64_t>(ram / 4 * 3, 32ull << 30);
}

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf[0] ? buf : "localhost";
}

// The package as a tree, its kernel ID and what reading it refused.
struct Loaded {
  package::PackageTree tree;
  std::string kernel_id;
  Violations violations;
  std::vector<std::string> warnings;
};

Result<Loaded> load_package(const std::string& path) {
  Loaded l;
  if (is_tarball(path)) {
    auto r = package::read_package_tarball(path);
    if (!r) return tl::unexpected(r.error());
    l.tree = std::move(r->tree);
    l.kernel_id = r->kernel_id;
    l.violations = std::move(r->violations);
    return l;
  }
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return fail(path + " is neither a package directory nor a .tar.gz file");
  auto r = package::read_package_dir(path);
  if (!r) return tl::unexpected(r.error());
  l.tree = std::move(r->tree);
  l.violations = std::move(r->violations);
  if (auto id = package::kernel_id_of(path)) {
    l.kernel_id = *id;
  } else {
    l.kernel_id = fs::weakly_canonical(path).filename().string();
    l.warnings.push_back(path + " is not inside a kernel_data root (no " + std::string(package::kRootMarker) +
                         " marker above it): using its directory name '" + l.kernel_id + "' as the kernel ID");
  }
  return l;
}

// The task named in desc.yaml's reference_sources ({kind: task, ref: NAME}).
Result<std::string> task_path(const nlohmann::json& desc, const std::string& catalog) {
  static const std::regex kName("^[A-Za-z0-9._-]+$");
  if (desc.is_object() && desc.contains("reference_sources") && desc["reference_sources"].is_array())
    for (const auto& src : desc["reference_sources"])
      if (src.is_object() && src.value("kind", "") == "task" && src.contains("ref") && src["ref"].is_string()) {
        std::string ref = src["ref"];
        if (!std::regex_match(ref, kName) || ref == "." || ref == "..")
          return fail("desc.yaml names the task '" + ref + "', which is not a task name ([A-Za-z0-9._-]+)");
        std::string p = catalog + "/tasks/" + ref + "/task.json";
        if (!fs::is_regular_file(p))
          return fail("desc.yaml names the task '" + ref + "' but " + p + " does not exist: pass --catalog DIR or --task FILE");
        return p;
      }
  return fail("desc.yaml names no task (reference_sources: [{kind: task, ref: NAME}]): add one or pass --task FILE");
}

// Removes the temporary workdir unless asked to keep it.
struct TempRoot {
  std::string path;
  bool keep = false;
  ~TempRoot() {
    std::error_code ec;
    if (!path.empty() && !keep) fs::remove_all(path, ec);
  }
};

std::string python_of(const GradeOptions& o) { return o.python.empty() ? "/usr/bin/python3" : o.python; }

}  // namespace

const char* to_string(GradeStatus s) {
  switch (s) {
    case GradeStatus::accepted: return "accepted";
    case GradeStatus::rejected: return "rejected";
    case GradeStatus::error: break;
  }
  return "error";
}

int exit_code(GradeStatus s) {
  return s == GradeStatus::accepted ? 0 : s == GradeStatus::rejected ? 1 : 2;
}

Result<std::string> make_seed() {
  std::string seed(32, '\0');
  std::size_t got = 0;
  while (got < seed.size()) {
    ssize_t n = ::getrandom(seed.data() + got, seed.size() - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(std::string("getrandom failed: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
  return seed;
}

Result<HarnessRun> run_harness_step(const Workdir& w, const std::string& script,
                                    std::vector<std::pair<std::string, std::string>> env,
                                    std::string_view seed, SandboxSpec spec, const SandboxOptions& options) {
  spec.workdir = w.root;
  spec.argv.push_back(".kernel_package/" + script);
  Pipe seed_pipe, verdict;
  if (!seed.empty()) {
    // A pipe, not a file: read once, then empty; nothing on disk to find.
    if (auto r = open_pipe(seed_pipe); !r) return tl::unexpected(r.error());
    std::string hex = to_hex(seed);
    bool wrote = ::write(seed_pipe.w, hex.data(), hex.size()) == static_cast<ssize_t>(hex.size());
    ::close(seed_pipe.w);
    seed_pipe.w = -1;
    if (!wrote) return fail("cannot write the seed to its pipe");
    spec.pass_fds.push_back(seed_pipe.r);
    env.emplace_back("KZOO_SEED_FD", std::to_string(seed_pipe.r));
    if (auto r = open_pipe(verdict); !r) return tl::unexpected(r.error());
    spec.pass_fds.push_back(verdict.w);
    env.emplace_back(std::string(kVerdictFdVariable), std::to_string(verdict.w));
  }
  spec.env = std::move(env);
  auto r = run_sandbox(spec, options);
  if (!r) return tl::unexpected(r.error());
  HarnessRun run{std::move(*r), {}};
  if (verdict.r >= 0) {
    ::close(verdict.w);  // ours; the program's copies died with it
    verdict.w = -1;
    run.verdict = drain_pipe(verdict.r, kVerdictCap);
  }
  return run;
}

GradeOutcome verify_benchmark_output(const HarnessRun& harness, std::string_view seed, const std::string& kernel_id) {
  const SandboxResult& run = harness.sandbox;
  auto with_tail = [&](GradeOutcome o) {
    o.stderr_tail = run.stderr_tail;
    o.warnings = run.warnings;
    return o;
  };
  if (run.timed_out) return with_tail(outcome(GradeStatus::rejected, "benchmark.py ran past its wall-clock limit and was killed"));
  if (run.oom) return with_tail(outcome(GradeStatus::rejected, "benchmark.py exceeded its memory limit and was killed"));
  if (run.stdout_truncated)
    return with_tail(outcome(GradeStatus::rejected, "benchmark.py printed more than " +
                                                       std::to_string(run.stdout_data.size()) + " bytes on stdout"));
  std::string ended = run.signal ? "was killed by signal " + std::to_string(run.signal)
                                 : "exited with status " + std::to_string(run.exit_code);
  // No result at all is a rejection, not an error: the submission runs in the
  // same uid as the judge and can kill it, and must not turn its own failure
  // into an "infrastructure error" that might be retried or excused.
  if (run.stdout_data.find_first_not_of(" \t\r\n") == std::string::npos)
    return with_tail(outcome(GradeStatus::rejected, "benchmark.py " + ended + " without printing a signed result; its stderr ends:\n" +
                                                       run.stderr_tail));
  if (auto sig = verify_judge_signature(seed, run.stdout_data, harness.verdict); !sig)
    return with_tail(outcome(GradeStatus::rejected, sig.error().message));
  auto doc = format::parse_json(run.stdout_data, "benchmark.py stdout");
  if (!doc)
    return with_tail(outcome(GradeStatus::error, "benchmark.py's stdout is not exactly one JSON document: " +
                                                    to_string(doc.error()) + "; its stderr ends:\n" + run.stderr_tail));
  auto violations = format::SchemaSet::bundled().validate(*doc, "benchmark_output", "benchmark.py stdout");
  if (!violations.empty()) {
    auto o = outcome(GradeStatus::error, "the judge's document is not a valid benchmark_output (" +
                                             std::to_string(violations.size()) + " violation(s)): " +
                                             to_string(violations.front()));
    o.violations = std::move(violations);
    return with_tail(std::move(o));
  }
  if ((*doc)["kernel_id"] != kernel_id)
    return with_tail(outcome(GradeStatus::error, "the judge's document is for kernel '" +
                                                    (*doc)["kernel_id"].get<std::string>() + "', not '" + kernel_id + "'"));
  const auto& overall = (*doc)["overall"];
  std::string reason = overall["accept_reason"].is_string() ? overall["accept_reason"].get<std::string>() : "";
  // Signed, so the judge's own word: it failed, not the submission. The worker
  // retries such a run and never charges it to the submitter.
  if (run.exit_code == kJudgeInternalErrorStatus && run.signal == 0) {
    auto o = outcome(GradeStatus::error, "the judge failed (an infrastructure fault, not the submission's): " + reason);
    o.document = std::move(*doc);
    return with_tail(std::move(o));
  }
  bool accept = overall["accept"].get<bool>();
  auto o = outcome(accept ? GradeStatus::accepted : GradeStatus::rejected, reason);
  o.document = std::move(*doc);
  return with_tail(std::move(o));
}

GradeOutcome grade(const GradeOptions& o) {
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  if (o.device != "cpu" && o.device != "cuda")
    return outcome(GradeStatus::error, "unknown device '" + o.device + "': use cpu or cuda");

  say("reading " + o.package_path);
  auto loaded = load_package(o.package_path);
  if (!loaded) return outcome(GradeStatus::error, loaded.error().message);
  GradeOutcome result;
  result.kernel_id = loaded->kernel_id;
  result.warnings = loaded->warnings;
  auto finish = [&](GradeOutcome out) {
    out.kernel_id = result.kernel_id;
    out.warnings.insert(out.warnings.begin(), result.warnings.begin(), result.warnings.end());
    return out;
  };

  auto inspection = package::inspect_tree(loaded->tree, loaded->kernel_id, o.package_path);
  Violations violations = loaded->violations;
  violations.insert(violations.end(), inspection.violations.begin(), inspection.violations.end());
  if (!violations.empty()) {
    auto out = outcome(GradeStatus::rejected, "the package breaks " + std::to_string(violations.size()) +
                                                  " rule(s); first: " + to_string(violations.front()));
    out.violations = std::move(violations);
    return finish(std::move(out));
  }

  // The task, from the catalog (or --task), never from the submission.
  auto tpath = o.task_file ? Result<std::string>(*o.task_file) : task_path(inspection.desc, o.catalog_dir);
  if (!tpath) return finish(outcome(GradeStatus::error, tpath.error().message));
  auto task_text = read_whole(*tpath, 8u << 20);
  if (!task_text) return finish(outcome(GradeStatus::error, task_text.error().message));
  if (auto t = format::parse_json(*task_text, *tpath); !t)
    return finish(outcome(GradeStatus::error, "the task is not valid JSON: " + to_string(t.error())));

  // The trusted harness: the catalog's package with the same kernel ID.
  const package::PackageTree* harness = &loaded->tree;
  std::optional<package::LoadedTree> trusted;
  std::string trusted_dir = o.catalog_dir + "/kernel_data/" + loaded->kernel_id;
  if (!o.catalog_dir.empty() && fs::is_directory(trusted_dir + "/.kernel_package")) {
    auto t = package::read_package_dir(trusted_dir);
    if (!t) return finish(outcome(GradeStatus::error, "cannot read the trusted package " + trusted_dir + ": " + t.error().message));
    trusted = std::move(*t);
    harness = &trusted->tree;
    for (const char* f : package::kRequiredFiles) {
      auto* mine = loaded->tree.find(f);
      auto* theirs = harness->find(f);
      if (mine && theirs && mine->content != theirs->content && std::string(f) != ".kernel_package/bench_result.yaml")
        result.warnings.push_back(std::string("the package's ") + f + " differs from the repository's (" + trusted_dir +
                                  "); the repository's is used");
    }
  } else {
    result.warnings.push_back("untrusted harness: local run only (no package '" + loaded->kernel_id + "' in " +
                              o.catalog_dir + "/kernel_data, so the package's own .kernel_package files are used)");
  }

  TempRoot tmp;
  tmp.keep = o.keep_workdir;
  {
    std::string tmpl = fs::temp_directory_path().string() + "/kzoo-grade-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr)
      return finish(outcome(GradeStatus::error, std::string("cannot make a temporary directory: ") + std::strerror(errno)));
    tmp.path = tmpl;
    fs::permissions(tmp.path, fs::perms(0755));  // the sandbox uid must reach W inside it
  }
  auto w = lay_out_workdir(tmp.path + "/w", *harness, loaded->tree, *task_text);
  if (!w) return finish(outcome(GradeStatus::error, w.error().message));
  if (o.keep_workdir) result.workdir = w->root;

  auto out = grade_workdir(*w, loaded->kernel_id, o);
  out.workdir = result.workdir;
  return finish(std::move(out));
}

BytecodeCacheRequest bytecode_request(const GradeOptions& o) {
  BytecodeCacheRequest req;
  req.dir = o.bytecode_cache;
  req.python = python_of(o);
  std::error_code ec;
  auto judge_dir = fs::weakly_canonical(o.judge_dir, ec);
  req.judge_dir = ec ? o.judge_dir : judge_dir.string();
  req.judge_inside = o.sandboxed ? kSandboxJudgeDir : req.judge_dir;
  req.say = o.progress;
  return req;
}

Result<std::string> prepare_bytecode_cache(const GradeOptions& o) {
  if (o.bytecode_cache.empty()) return fail("it is turned off (KZOO_BYTECODE_CACHE=off, or no HOME to keep it under)");
  return ensure_bytecode_cache(bytecode_request(o));
}

Result<HarnessSetup> harness_setup(const Workdir& w_, const std::string& kernel_id, const GradeOptions& o) {
  const Workdir* w = &w_;
  HarnessSetup setup;
  // The sandbox: the trusted parts of W read-only, the judge read-only.
  SandboxSpec& spec = setup.spec;
  spec.argv = {python_of(o)};
  spec.workdir = w->root;
  std::string judge_dir = fs::weakly_canonical(o.judge_dir).string();
  if (!fs::is_directory(judge_dir + "/kzoo_judge"))
    return fail("no judge at " + judge_dir + "/kzoo_judge: pass the judge directory (KZOO_JUDGE_DIR)");
  spec.ro_binds = {{w->harness_dir, std::string(kSandboxWorkdir) + "/.kernel_package"},
                   {w->task_file, std::string(kSandboxWorkdir) + "/.kzoo/task.json"},
                   {judge_dir, kSandboxJudgeDir}};
  for (const auto& b : o.extra_ro_binds) spec.ro_binds.push_back(b);
  std::string classes = o.catalog_dir + "/device_classes.json";
  bool have_classes = !o.catalog_dir.empty() && fs::is_regular_file(classes);
  if (have_classes) spec.ro_binds.push_back({fs::weakly_canonical(classes).string(), "/kzoo/catalog/device_classes.json"});
  // An interpreter outside /usr (a venv, conda) must be visible inside too:
  // both the prefix it is called by (a venv's bin/python3 is often a symlink
  // into /usr, while its site-packages and pyvenv.cfg live under the venv) and
  // the prefix it resolves to.
  for (std::string py : {fs::absolute(python_of(o)).lexically_normal().string(),
                         fs::weakly_canonical(python_of(o)).string()}) {
    if (py.rfind("/usr/", 0) == 0) continue;
    auto prefix = fs::path(py).parent_path().parent_path().string();
    bool bound = false;
    for (const auto& b : spec.ro_binds) bound = bound || b.host == prefix;
    if (!bound) spec.ro_binds.push_back({prefix, prefix});
  }
  if (o.device == "cuda") {
    auto nodes = gpu_device_nodes_for(o.gpus);
    if (!nodes) return tl::unexpected(nodes.error());
    spec.devices = std::move(*nodes);
    if (spec.devices.empty()) return fail("--device cuda but no /dev/nvidia* device nodes here");
  }
  spec.memory_bytes = o.memory_bytes ? o.memory_bytes : default_memory();
  spec.max_pids = o.max_pids;
  spec.cpus = o.cpus;
  spec.cpu_affinity = o.cpu_affinity;

  SandboxOptions& sopts = setup.options;
  sopts.sandboxed = o.sandboxed;
  sopts.bwrap = o.bwrap;
  sopts.on_stderr = o.on_stderr;
  auto path_in = [&](const std::string& host) { return visible_path(spec, sopts, host); };

  // Without the sandbox there is no private /tmp: keep scratch inside W.
  const std::string scratch = o.sandboxed ? "/tmp" : w->run_dir;
  // What a package's build step (src/build.py, run by build_test_env.py) compiles must
  // outlive that step's sandbox, whose /tmp dies with it, and reach benchmark.py's: every
  // cache the compilers use points into W/.kzoo/run/cache, a product of this run only.
  const std::string cache = path_in(w->run_dir) + "/cache";
  // The interpreter's own bin/ first: a virtual environment's ninja and nvcc wrappers.
  std::string py_bin = fs::path(fs::absolute(python_of(o)).lexically_normal()).parent_path().string();
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  if (py_bin != "/usr/bin" && py_bin != "/bin" && py_bin != "/usr/local/bin") path = py_bin + ":" + path;
  auto& env = setup.env;
  env = {
      {"PATH", path}, {"HOME", scratch}, {"USER", "kzoo"}, {"LOGNAME", "kzoo"},
      {"XDG_CACHE_HOME", cache}, {"TRITON_CACHE_DIR", cache + "/triton"},
      {"TORCH_EXTENSIONS_DIR", cache + "/torch_extensions"}, {"TORCHINDUCTOR_CACHE_DIR", cache + "/inductor"},
      {"CUDA_CACHE_PATH", cache + "/nv"},
      {"LANG", "C.UTF-8"}, {"TMPDIR", scratch}, {"PYTHONDONTWRITEBYTECODE", "1"}, {"PYTHONNOUSERSITE", "1"},
      {"PYTHONPATH", path_in(judge_dir)}, {"KZOO_TASK", path_in(w->task_file)}, {"KZOO_DEVICE", o.device},
      {"KZOO_KERNEL_ID", kernel_id}, {"KZOO_RUNNER_ID", o.runner_id.empty() ? host_name() : o.runner_id},
      // The judge and its children (submission, incumbent) take turns on the
      // same cores; OpenMP's default is to spin idle worker threads for a
      // while after each parallel region, which would steal the CPU from
      // whichever process is timed next and bias CPU A/B timings.
      {"OMP_WAIT_POLICY", "PASSIVE"}};
  if (have_classes) env.emplace_back("KZOO_DEVICE_CLASSES", path_in(fs::weakly_canonical(classes).string()));
  nlohmann::json judge_options = o.judge_options.is_object() ? o.judge_options : nlohmann::json::object();
  if (o.iterations) judge_options["iterations"] = *o.iterations;
  if (!judge_options.empty()) {
    // Host paths among the options (incumbent_src) are translated to what the judge sees.
    if (judge_options.contains("incumbent_src") && judge_options["incumbent_src"].is_string())
      judge_options["incumbent_src"] = path_in(judge_options["incumbent_src"].get<std::string>());
    env.emplace_back("KZOO_OPTIONS", judge_options.dump());
  }
  if (const char* dc = std::getenv("KZOO_DEVICE_CLASS")) env.emplace_back("KZOO_DEVICE_CLASS", dc);
  // The modules the judge and its children import, compiled once outside the sandbox
  // (bytecode_cache.hpp says why): without them every start compiles torch again.
  if (!o.bytecode_cache.empty()) {
    BytecodeCacheRequest req = bytecode_request(o);
    req.judge_inside = path_in(judge_dir);  // as this sandbox shows it (bytecode_request's, but for a bind over it)
    if (auto dir = ensure_bytecode_cache(req)) {
      spec.ro_binds.push_back({*dir, *dir});
      env.emplace_back("PYTHONPYCACHEPREFIX", *dir);
    } else if (o.progress) {
      o.progress("no bytecode cache (" + dir.error().message + "): each start compiles what it imports that has no bytecode");
    }
  }
  return setup;
}

GradeOutcome grade_workdir(const Workdir& w_, const std::string& kernel_id, const GradeOptions& o, WarmJudge* warm) {
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  const Workdir* w = &w_;
  auto setup = harness_setup(*w, kernel_id, o);
  if (!setup) return outcome(GradeStatus::error, setup.error().message);
  SandboxSpec& spec = setup->spec;
  const SandboxOptions& sopts = setup->options;
  const auto& env = setup->env;
  // The judge started ahead (warm_judge.hpp), when it was started for this very W and sandbox.
  if (warm != nullptr) {
    if (auto why = warm->unfit(*w, spec, sopts); !why.empty()) {
      say("the judge started ahead does not fit this run (" + why + "): benchmark.py starts cold");
      warm = nullptr;
    }
  }

  say("building the test environment (build_test_env.py)");
  spec.wall_limit = o.build_timeout;
  auto built_run = run_harness_step(*w, "build_test_env.py", env, {}, spec, sopts);
  if (!built_run) return (outcome(GradeStatus::error, built_run.error().message));
  const SandboxResult* built = &built_run->sandbox;
  if (!built->exited_ok()) {
    std::string why = built->timed_out ? "ran past its limit" : built->oom ? "exceeded its memory limit"
                      : built->signal ? "was killed by signal " + std::to_string(built->signal)
                                      : "exited with status " + std::to_string(built->exit_code);
    auto out = outcome(GradeStatus::rejected, "build_test_env.py " + why + "; its stderr ends:\n" + built->stderr_tail);
    out.stderr_tail = built->stderr_tail;
    out.warnings = built->warnings;
    return out;
  }

  auto seed = make_seed();
  if (!seed) return (outcome(GradeStatus::error, seed.error().message));
  say("benchmarking (benchmark.py, limit " + std::to_string(o.timeout.count()) + " s" +
      (warm != nullptr ? ", its judge started ahead)" : ")"));
  spec.wall_limit = o.timeout;
  if (warm != nullptr) {
    auto ran = warm->go(env, *seed, o.timeout);
    if (ran) return verify_benchmark_output(*ran, *seed, kernel_id);
    // It ended before it took the job (or refused it): nothing of the job ran there.
    say("the judge started ahead did not take the run (" + ran.error().message + "): benchmark.py starts cold");
  }
  auto ran = run_harness_step(*w, "benchmark.py", env, *seed, spec, sopts);
  if (!ran) return (outcome(GradeStatus::error, ran.error().message));
  return verify_benchmark_output(*ran, *seed, kernel_id);
}

}  // namespace kzoo::runner
