#include "kzoo/worker/worker.hpp"

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include <fmt/format.h>
#include <unistd.h>

#include "kzoo/board/board.hpp"
#include "kzoo/board/decision.hpp"
#include "kzoo/board/rules.hpp"
#include "kzoo/board/score.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/format/yaml_json.hpp"
#include "kzoo/package/inspect.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/runner/grade.hpp"
#include "kzoo/store/sqlite_state_db.hpp"
#include "kzoo/util/failpoint.hpp"
#include "kzoo/worker/bench_result.hpp"
#include "kzoo/worker/device_class.hpp"

namespace kzoo::worker {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Measurements of one job against successive incumbents before it gives up.
constexpr int kMeasureRounds = 3;

// A job's own trouble (the submission) versus ours (infrastructure).
struct JobFailure {
  store::Outcome outcome;
  std::string reason;
  // An infrastructure failure (the judge crashed or ended without a verdict): the job goes
  // back to the queue while attempts remain, and fails only after the last.
  bool retry = false;
};

std::string tail(const std::string& s, std::size_t n = 2000) { return s.size() > n ? s.substr(s.size() - n) : s; }

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf[0] ? buf : "localhost";
}

Result<std::string> read_small(const std::string& path, std::size_t cap) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail("cannot read " + path + ": " + std::strerror(errno));
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (s.size() > cap) return fail(path + " is larger than " + std::to_string(cap) + " bytes");
  return s;
}

// desc.yaml's {kind: task, ref: NAME} -> catalog/tasks/NAME/task.json.
Result<std::string> task_file(const json& desc, const std::string& catalog, const std::string& kernel_id) {
  static const std::regex kName("^[A-Za-z0-9._-]+$");
  if (desc.is_object() && desc.contains("reference_sources") && desc["reference_sources"].is_array())
    for (const auto& s : desc["reference_sources"])
      if (s.is_object() && s.value("kind", "") == "task" && s.contains("ref") && s["ref"].is_string()) {
        std::string ref = s["ref"];
        if (!std::regex_match(ref, kName) || ref == "." || ref == "..")
          return fail(fmt::format("{}/.kernel_package/desc.yaml names the task '{}', which is not a task name", kernel_id, ref));
        std::string p = catalog + "/tasks/" + ref + "/task.json";
        if (!fs::is_regular_file(p))
          return fail(fmt::format("the task '{}' of {} is not in the catalog ({} is missing): pass --catalog", ref, kernel_id, p));
        return p;
      }
  return fail(kernel_id + "/.kernel_package/desc.yaml at HEAD names no task (reference_sources: [{kind: task, ref: NAME}])");
}

// The files of `tree` under `prefix` ("src/"), kept with their paths.
package::PackageTree subtree(const package::PackageTree& tree, const std::string& prefix) {
  package::PackageTree out;
  for (const auto& f : tree.files)
    if (f.path.rfind(prefix, 0) == 0) out.files.push_back(f);
  for (const auto& d : tree.dirs)
    if (d.rfind(prefix, 0) == 0 || d + "/" == prefix) out.dirs.push_back(d);
  return out;
}

// git refuses '<', '>' and newlines in names; the server already refuses spaces.
std::string person_name(std::string s) {
  for (char& c : s)
    if (c == '<' || c == '>' || c == '\n' || c == '\r' || static_cast<unsigned char>(c) < 0x20) c = '_';
  return s.empty() ? "anonymous" : s;
}

std::string commit_message(const store::Submission& sub, const store::Job& job, const verdict::Verdict& v,
                           const std::string& evidence, const std::string& device_class) {
  std::string summary = sub.summary;
  for (char& c : summary)
    if (c == '\r') c = '\n';
  std::string first = summary.substr(0, summary.find('\n'));
  if (first.find_first_not_of(" \t") == std::string::npos) first = "accepted submission " + std::to_string(sub.id);
  if (first.size() > 120) first = first.substr(0, 117) + "...";
  std::string m = sub.kernel_id + ": " + first + "\n\n";
  if (summary.find_first_not_of(" \t\n") != std::string::npos) m += summary + "\n\n";
  m += "Submitter: " + sub.submitter_id + "\n" + v.summary + "\n";
  for (const auto& c : v.cases) {
    m += "  " + c.test_case_id + ":";
    if (c.metrics.is_object())
      for (const auto& [k, x] : c.metrics.items())
        if (x.is_number()) m += fmt::format(" {}={:.6g}", k, x.get<double>());
    if (c.speedup) m += fmt::format(" speedup={:.4f}x", *c.speedup);
    m += "\n";
  }
  m += fmt::format("\nKzoo-Job: {}\nKzoo-Submission: {}\nKzoo-Evidence: {}\n", job.id, sub.id, evidence);
  if (!device_class.empty()) m += "Kzoo-Device-Class: " + device_class + "\n";
  return m;
}

// Extends the lease every lease/3 s on its own connection until stopped;
// remembers when the store refuses (the lease is lost).
class Heartbeat {
 public:
  Heartbeat(JobTransport& t, std::int64_t job, std::string worker, int lease, std::function<void(std::string)> log)
      : thread_([=, this, &t] { loop(t, job, worker, lease, log); }) {}
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> g(m_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  bool lost() const { return lost_.load(); }

 private:
  void loop(JobTransport& t, std::int64_t job, const std::string& worker, int lease,
            const std::function<void(std::string)>& log) {
    auto db = t.another();  // this thread's own handle
    if (!db) {
      log("heartbeat: cannot open " + t.describe() + ": " + db.error().message);
      return;
    }
    auto period = std::chrono::milliseconds(std::max(200, lease * 1000 / 3));
    std::unique_lock<std::mutex> lk(m_);
    while (!cv_.wait_for(lk, period, [&] { return stop_; })) {
      auto r = (*db)->heartbeat(job, worker, lease);
      if (!r && (r.error().kind == store::StateError::not_holder || r.error().kind == store::StateError::wrong_state)) {
        lost_ = true;
        log(fmt::format("job {}: lease lost ({})", job, r.error().message));
        return;
      }
      if (!r) log(fmt::format("job {}: heartbeat failed, will retry: {}", job, r.error().message));
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<bool> lost_{false};
  std::thread thread_;
};

}  // namespace

Worker::Worker(WorkerOptions o, std::unique_ptr<JobTransport> t) : o_(std::move(o)), t_(std::move(t)) {}
Worker::~Worker() = default;

// Reads the GPU's name (cuda) and picks o.device_class from the catalog's device_classes.json.
Result<void> resolve_device_class(WorkerOptions& o) {
  const std::string path = o.catalog_dir + "/device_classes.json";
  json table = json::object();
  if (auto text = read_small(path, 1u << 20); text) {
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
  return ok();
}
}  // namespace

Result<std::unique_ptr<Worker>> Worker::open(WorkerOptions o) {
  if (auto r = prepare(o); !r) return tl::unexpected(r.error());
  auto t = o.server_url.empty() ? open_direct(o.data_dir) : open_api(o.server_url, o.token);
  if (!t) return tl::unexpected(t.error());
  return std::unique_ptr<Worker>(new Worker(std::move(o), std::move(*t)));
}

Result<std::unique_ptr<Worker>> Worker::open(WorkerOptions o, std::unique_ptr<JobTransport> t) {
  if (auto r = prepare(o); !r) return tl::unexpected(r.error());
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
  auto claimed = t_->claim(o_.worker_id, o_.lease_seconds);
  if (!claimed) return fail("claiming a job failed: " + claimed.error().message);
  if (!*claimed) return std::optional<JobReport>();
  return std::optional<JobReport>(process(**claimed));
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

JobReport Worker::process(const store::Job& job) {
  JobReport rep;
  rep.job_id = job.id;
  rep.submission_id = job.submission_id;
  say(fmt::format("job {}: claimed (submission {}, attempt {}/{})", job.id, job.submission_id, job.attempts, job.max_attempts));
  Heartbeat hb(*t_, job.id, o_.worker_id, o_.lease_seconds, [this](std::string s) { say(s); });

  store::Completion done;
  bool retry = false;  // an infrastructure failure: hand the job back (StateDb::retry) instead of completing it
  json result = json::object();
  std::string kernel_id;
  try {
    auto sub = t_->submission(job.submission_id);
    if (!sub) throw JobFailure{store::Outcome::failed, "cannot read submission: " + sub.error().message};
    kernel_id = sub->kernel_id;

    // A commit by an earlier holder of this job that died before completing.
    auto earlier = t_->recover(kernel_id, job.id, o_.history_scan);
    if (!earlier) throw JobFailure{store::Outcome::failed, earlier.error().message};
    if (!earlier->commit.empty()) {
      say(fmt::format("job {}: already committed as {} by an earlier holder; completing with it", job.id, earlier->commit));
      done.outcome = store::Outcome::accepted;
      done.accepted_commit = earlier->commit;
      done.verdict = earlier->verdict;
      result["recovered"] = true;
      result["accepted_commit"] = earlier->commit;
      rep.reused_commit = true;
      throw done;  // straight to completion
    }

    // The board (board/): the rules in force (read at the `checks` tag only),
    // whose guardrails become the judge's parameters; the branch an accept
    // lands on; for a baseline, the source it measures.
    auto ctx = t_->board(job.id);
    if (!ctx) throw JobFailure{store::Outcome::failed, ctx.error().message};
    const std::optional<board::Rules>& rules = ctx->rules;
    const bool is_baseline = sub->kind == "baseline";
    const std::string& target_branch = ctx->branch;

    // 1. The submission, read as the kernel it claims to be (a baseline: the
    // package's source at the commit that added it, from the repository).
    std::string scratch = fs::temp_directory_path().string() + "/kzoo-pkg-" + std::to_string(job.id) + "-XXXXXX";
    if (::mkdtemp(scratch.data()) == nullptr) throw JobFailure{store::Outcome::failed, std::string("mkdtemp: ") + std::strerror(errno)};
    struct ScratchCleanup {
      std::string p;
      ~ScratchCleanup() { std::error_code ec; fs::remove_all(p, ec); }
    } scratch_cleanup{scratch};
    auto package_path = is_baseline ? Result<std::string>("kernel_data:" + kernel_id + "@" + ctx->baseline_commit)
                                    : t_->package_file(job, *sub, scratch);
    if (!package_path) throw JobFailure{store::Outcome::failed, "cannot fetch the uploaded package: " + package_path.error().message};
    auto tar = is_baseline ? Result<package::TarballRead>(package::TarballRead{})
                           : package::read_package_tarball(*package_path, kernel_id);
    if (is_baseline && tar) tar->tree = ctx->baseline_tree;
    if (!tar) throw JobFailure{store::Outcome::failed, "cannot read the uploaded package: " + tar.error().message};
    Violations bad = tar->violations;
    if (bad.empty()) {
      auto insp = package::inspect_tree(tar->tree, kernel_id, *package_path);
      bad = insp.violations;
    }
    if (!bad.empty()) {
      std::string why = fmt::format("the package breaks {} rule(s); first: {}", bad.size(), to_string(bad.front()));
      result["violations"] = to_json(bad);
      throw JobFailure{store::Outcome::rejected, why};
    }

    // 2-7 run again, up to kMeasureRounds times, when another accept into this
    // kernel lands while the candidate is measured: it is then compared with
    // the new incumbent instead of failing the job.
    for (int round = 1;; ++round) {
      // 2. The trusted harness and the incumbent, from one commit: the tip of
      // the branch the submission targets (main when it names no route, or
      // when the route does not exist yet: it starts there).
      auto at_head = t_->trusted(kernel_id, job.id);
      if (!at_head) throw JobFailure{store::Outcome::failed, at_head.error().message};
      const std::string* base = &at_head->base;
      const package::PackageTree* trusted = &at_head->tree;
      package::PackageTree incumbent = subtree(*trusted, "src/");
      const bool has_incumbent = !incumbent.files.empty() && !is_baseline;
      auto* desc_file = trusted->find(".kernel_package/desc.yaml");
      auto* bench_file = trusted->find(".kernel_package/benchmark.py");
      if (!desc_file || !bench_file) throw JobFailure{store::Outcome::failed, kernel_id + " at HEAD lacks its harness files"};
      auto desc = format::parse_yaml(desc_file->content, kernel_id + "/.kernel_package/desc.yaml");
      if (!desc) throw JobFailure{store::Outcome::failed, to_string(desc.error())};
      auto trusted_insp = package::inspect_tree(*trusted, kernel_id, "kernel_data:" + kernel_id);

      // 3. The task.
      auto tpath = task_file(*desc, o_.catalog_dir, kernel_id);
      if (!tpath) throw JobFailure{store::Outcome::failed, tpath.error().message};
      auto task_text = read_small(*tpath, 8u << 20);
      if (!task_text) throw JobFailure{store::Outcome::failed, task_text.error().message};

      // 4. W, the incumbent beside it, the sandboxed run.
      std::string tmpl = fs::temp_directory_path().string() + "/kzoo-job-" + std::to_string(job.id) + "-XXXXXX";
      if (::mkdtemp(tmpl.data()) == nullptr) throw JobFailure{store::Outcome::failed, std::string("mkdtemp: ") + std::strerror(errno)};
      struct Cleanup {
        std::string p;
        ~Cleanup() { std::error_code ec; fs::remove_all(p, ec); }
      } cleanup{tmpl};
      fs::permissions(tmpl, fs::perms(0755));  // the sandbox uid must reach W
      auto w = runner::lay_out_workdir(tmpl + "/w", *trusted, tar->tree, *task_text);
      if (!w) throw JobFailure{store::Outcome::failed, w.error().message};
      runner::GradeOptions g;
      g.device = o_.device;
      g.catalog_dir = o_.catalog_dir;
      g.judge_dir = o_.judge_dir;
      g.python = o_.python;
      g.timeout = o_.timeout;
      g.iterations = o_.iterations;
      g.runner_id = o_.worker_id;
      g.memory_bytes = o_.memory_bytes;
      g.sandboxed = o_.sandboxed;
      g.judge_options = o_.judge_options.is_object() ? o_.judge_options : json::object();
      // The board's guardrails are the judge's parameters (board/decision.hpp, shared with `kzoo grade`).
      const int timed_runs = board::timed_runs_for(rules ? &*rules : nullptr, o_.iterations);
      g.judge_options = board::judge_options_for(std::move(g.judge_options), rules ? &*rules : nullptr, o_.iterations);
      if (has_incumbent) {
        const std::string inc_dir = w->root + "/.kzoo/incumbent";
        if (auto r = package::write_tree(incumbent, inc_dir); !r)
          throw JobFailure{store::Outcome::failed, "cannot lay out the incumbent: " + r.error().message};
        g.judge_options["incumbent_src"] = inc_dir + "/src";
        // Read-only inside: the submission runs first in W and must not edit what it is compared with.
        g.extra_ro_binds.push_back({inc_dir, std::string(runner::kSandboxWorkdir) + "/.kzoo/incumbent"});
      }
      say(fmt::format("job {}: grading {} ({}, {})", job.id, kernel_id, has_incumbent ? "A/B against the incumbent at " + base->substr(0, 12) : "no incumbent", o_.device));
      const auto started = std::chrono::steady_clock::now();
      auto graded = runner::grade_workdir(*w, kernel_id, g);
      // A judge that does not name the class it ran on (its provenance waits
      // for the GPU-gated judge) ran on this worker's: the class it was told.
      if (graded.document.is_object() && !graded.document.contains("device_class"))
        graded.document["device_class"] = o_.device_class;
      const double cost_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

      // 5. Evidence, whatever happened; the decision is board::decide_run's, the one `kzoo grade --against` makes.
      const board::RunDecision decided =
          board::decide_run({graded.document, trusted_insp.metas, has_incumbent, rules ? &*rules : nullptr, timed_runs,
                             is_baseline},
                            o_.policy);
      const verdict::Verdict& v = decided.verdict;
      json run{{"status", runner::to_string(graded.status)}, {"reason", graded.reason}, {"warnings", graded.warnings},
               {"violations", to_json(graded.violations)}, {"worker", o_.worker_id}, {"job", job.id},
               {"base_commit", *base}, {"had_incumbent", has_incumbent}, {"device", o_.device},
               {"device_class", o_.device_class}, {"gpu_name", o_.gpu_name.empty() ? json() : json(o_.gpu_name)},
               {"route", sub->route}, {"kind", sub->kind}};
      // The check (board/): what it measured, under which rules, and whether it
      // passed; a failed check counts for nothing.
      const json& measured = decided.measured;
      const std::vector<std::string>& breaks = decided.breaks;
      const std::vector<std::string>& board_notes = decided.board_notes;
      const bool passed = decided.check_passed;
      json check{{"kind", sub->kind}, {"kernel_id", kernel_id}, {"route", sub->route}, {"job", job.id},
                 {"submission", sub->id}, {"rules_commit", rules ? json(rules->commit) : json()},
                 {"version", rules ? json(rules->version) : json()},
                 {"device_class", board::result_device_class(run, graded.document)},
                 {"board_device_class", rules ? json(rules->device_class) : json()}, {"cost_s", cost_s},
                 {"passed", passed}, {"reasons", breaks}, {"notes", board_notes}, {"timed_runs", timed_runs},
                 {"measured", measured},
                 {"measured_commit", is_baseline ? ctx->baseline_commit : std::string()}};
      json metrics_doc = json{{"score", nullptr}, {"cost", cost_s}, {"subtasks", json::array()}};
      if (rules) {
        std::optional<double> speedup;
        if (!ctx->baseline_measured.is_null())
          speedup = board::kernel_figures(ctx->baseline_measured, measured).speedup;
        else if (is_baseline && passed)
          speedup = 1.0;
        double time_us = 0;
        bool have_time = true;
        for (const auto& c : measured["cases"])
          if (c["time_us"].is_number()) time_us += c["time_us"].get<double>();
          else have_time = false;
        metrics_doc["subtasks"].push_back({{"id", kernel_id}, {"speedup", speedup ? json(*speedup) : json()},
                                           {"metric", have_time ? json(time_us) : json()},
                                           {"correct", measured["correct"]}});
        if (passed) {
          std::map<std::string, double> m = ctx->standing;
          if (is_baseline) m.erase(kernel_id);
          else if (speedup) m[kernel_id] = *speedup;
          metrics_doc["score"] = board::board_score(rules->kernels, m);
        }
      }
      std::map<std::string, std::string> files{
          {"run.json", run.dump(2, ' ', false, json::error_handler_t::replace) + "\n"},
          {"stderr.log", graded.stderr_tail}};
      if (graded.document.is_object())
        files["benchmark_output.json"] = graded.document.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
      if (graded.document.is_object()) files["verdict.json"] = v.to_json().dump(2) + "\n";
      files["check.json"] = check.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
      if (rules && rules->metrics_file != "check.json")
        files[rules->metrics_file] = metrics_doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
      auto evidence = t_->record_evidence(job.id, o_.worker_id, files,
                                          fmt::format("evidence of job {} (submission {})", job.id, sub->id));
      if (!evidence) throw JobFailure{store::Outcome::failed, "cannot record evidence: " + evidence.error().message};
      rep.evidence_commit = *evidence;
      result["evidence_commit"] = *evidence;
      result["run"] = run;
      result["check"] = check;
      result["metrics"] = metrics_doc;
      if (graded.document.is_object()) result["benchmark_output"] = graded.document;

      // 6. Decide.
      if (graded.status == runner::GradeStatus::error)
        throw JobFailure{store::Outcome::failed,
                         graded.reason + (graded.stderr_tail.empty() ? "" : "; stderr ends:\n" + tail(graded.stderr_tail)),
                         true};
      if (!graded.document.is_object())
        throw JobFailure{store::Outcome::rejected, graded.reason};
      done.verdict = v.to_json();
      if (is_baseline) {
        // A baseline measures; it commits nothing. Accepted = it is the board's
        // baseline now; the commit named is the one whose source it measured.
        done.outcome = decided.accepted ? store::Outcome::accepted : store::Outcome::rejected;
        done.accepted_commit = decided.accepted ? ctx->baseline_commit : "";
        if (!decided.accepted) {
          done.reasons = decided.reasons;
          if (done.reasons.empty()) done.reasons = {graded.reason.empty() ? "the baseline's check did not pass" : graded.reason};
        }
        result["baseline_commit"] = ctx->baseline_commit;
        throw done;
      }
      if (!decided.accepted) {
        done.outcome = store::Outcome::rejected;
        done.reasons = decided.reasons;
        throw done;
      }
      if (hb.lost()) throw JobFailure{store::Outcome::failed, "lease lost before commit"};
      // Refuse to commit unless we still hold the lease right now.
      if (auto r = t_->heartbeat(job.id, o_.worker_id, o_.lease_seconds); !r)
        throw JobFailure{store::Outcome::failed, "lease lost before commit: " + r.error().message};
      const json doc = graded.document;
      // Only the kernel's own device class enters its bench_result.yaml (bench_result.hpp).
      if (auto foreign = foreign_device_reason(doc, kernel_id); !foreign.empty()) {
        say(fmt::format("job {}: {}", job.id, foreign));
        result["bench_result"] = json{{"entered", false}, {"reason", foreign}};
      } else {
        result["bench_result"] = json{{"entered", true}};
      }
      const std::string ev = *evidence;
      // Only onto the source it was measured against (`base`): if another accept
      // changed it meanwhile, this speed-up says nothing about the new source.
      AcceptRequest ar{job.id, kernel_id, subtree(tar->tree, "src/"), doc,
                       directions_from_metas(trusted_insp.metas), ev, utc_now_iso(),
                       commit_message(*sub, job, v, ev, document_device_class(doc)),
                       store::Person{person_name(sub->submitter_id), ""}, *base};
      auto acc = t_->accept(ar, o_.worker_id);
      if (!acc) throw JobFailure{store::Outcome::failed, "cannot commit the accepted source: " + acc.error().message};
      if (acc->incumbent_moved) {
        if (round == kMeasureRounds)
          throw JobFailure{store::Outcome::failed,
                           fmt::format("another submission was accepted into {} during each of {} measurements of this one; "
                                       "resubmit to be compared with the source now at HEAD",
                                       kernel_id, kMeasureRounds)};
        say(fmt::format("job {}: another submission was accepted into {} while this one was measured; measuring again "
                        "against the new source (round {} of {})",
                        job.id, kernel_id, round + 1, kMeasureRounds));
        continue;
      }
      say(fmt::format("job {}: accepted as {} on {} ({})", job.id, acc->commit, target_branch, v.summary));
      // Adoption (scienceslack.json `adopt`): with `auto` (and without rules)
      // a route's accept lands on main too, when main's source of this kernel
      // is still the one it was measured against.
      if (target_branch != "main" && (!rules || rules->adopt == "auto")) {
        AcceptRequest adopt = ar;
        adopt.adopt = true;
        adopt.message = ar.message + "Kzoo-Adopted-From: " + acc->commit + "\n";
        auto adopted = t_->accept(adopt, o_.worker_id);
        if (!adopted) {
          say(fmt::format("job {}: not adopted onto main: {}", job.id, adopted.error().message));
          done.reasons.push_back("accepted on " + target_branch + "; not adopted onto main: " + adopted.error().message);
        } else if (adopted->incumbent_moved) {
          done.reasons.push_back("accepted on " + target_branch + "; not adopted onto main: main's source of " +
                                 kernel_id + " is not the one this was measured against (a maintainer merges it)");
        } else {
          result["adopted_commit"] = adopted->commit;
          say(fmt::format("job {}: adopted onto main as {}", job.id, adopted->commit));
        }
      }
      done.outcome = store::Outcome::accepted;
      done.accepted_commit = acc->commit;
      for (auto& n : v.notes) done.reasons.insert(done.reasons.begin(), n);
      result["accepted_commit"] = acc->commit;
      result["branch"] = target_branch;
      break;
    }
  } catch (store::Completion& c) {
    done = std::move(c);
  } catch (JobFailure& f) {
    done.outcome = f.outcome;
    done.reasons = {f.reason};
    retry = f.retry;
    if (done.verdict.is_null())
      done.verdict = json{{"outcome", store::to_string(store::to_state(f.outcome))}, {"summary", f.reason}, {"reasons", {f.reason}}};
  } catch (const std::exception& e) {
    done = store::Completion{};
    done.outcome = store::Outcome::failed;
    done.reasons = {std::string("internal error: ") + e.what()};
  }
  done.result = result;
  rep.outcome = done.outcome;
  rep.reasons = done.reasons;
  rep.accepted_commit = done.accepted_commit;
  if (retry) {
    auto r = t_->retry(job.id, o_.worker_id, done.reasons, result);
    if (!r) {
      say(fmt::format("job {}: not handed back, the store refused ({}): {}", job.id, store::to_string(r.error().kind), r.error().message));
      return rep;
    }
    rep.completed = r->state == store::State::failed;
    rep.retried = r->state == store::State::queued;
    say(fmt::format("job {}: infrastructure failure on attempt {}/{}, {} — {}", job.id, r->attempts, r->max_attempts,
                    rep.retried ? "queued again" : "failed", tail(done.reasons.front(), 300)));
    return rep;
  }
  util::failpoint("worker.before-complete");  // an accept is committed, the job not yet completed
  auto c = t_->complete(job.id, o_.worker_id, done);
  if (!c) {
    // Never complete a job we no longer hold: the store refused; someone else has it.
    say(fmt::format("job {}: not completed, the store refused ({}): {}", job.id, store::to_string(c.error().kind), c.error().message));
    return rep;
  }
  rep.completed = true;
  say(fmt::format("job {}: {}{}", job.id, store::to_string(store::to_state(done.outcome)),
                  done.reasons.empty() ? "" : " — " + tail(done.reasons.front(), 300)));
  return rep;
}

}  // namespace kzoo::worker
