// grade_job (grade_job.hpp) as named steps. Each step returns its result or
// a JobFailure -- the job ends there, failed or rejected, or is handed back
// for another attempt -- and Grading::run strings them together; a step that
// settles the job early (a commit an earlier holder made, a baseline, a
// rejection) returns the completion itself.
#include "kzoo/jobs/grade_job.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include "kzoo/board/decision.hpp"
#include "kzoo/board/partition.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/format/yaml_json.hpp"
#include "kzoo/jobs/bench_result.hpp"
#include "kzoo/board/score.hpp"
#include "kzoo/jobs/check.hpp"
#include "kzoo/jobs/heartbeat.hpp"
#include "kzoo/local/task_env.hpp"
#include "kzoo/package/inspect.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/runner/grade.hpp"
#include "kzoo/runner/warm_judge.hpp"
#include "kzoo/runner/workdir.hpp"
#include "kzoo/util/failpoint.hpp"
#include "kzoo/util/read_file.hpp"

namespace kzoo::jobs {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Measurements of one job against successive incumbents before it gives up.
constexpr int kMeasureRounds = 3;

// Why a job ends without a verdict of its own: the submission's trouble
// (rejected) or ours (failed).
struct JobFailure {
  store::Outcome outcome;
  std::string reason;
  // An infrastructure failure (the judge crashed or ended without a verdict): the job goes
  // back to the queue while attempts remain, and fails only after the last.
  bool retry = false;
};
template <class T>
using Step = tl::expected<T, JobFailure>;

tl::unexpected<JobFailure> failed(std::string reason) {
  return tl::unexpected(JobFailure{store::Outcome::failed, std::move(reason)});
}
tl::unexpected<JobFailure> rejected(std::string reason) {
  return tl::unexpected(JobFailure{store::Outcome::rejected, std::move(reason)});
}

std::string tail(const std::string& s, std::size_t n = 2000) { return s.size() > n ? s.substr(s.size() - n) : s; }

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

// A temporary directory, removed with everything in it when dropped.
class Scratch {
 public:
  static Step<std::unique_ptr<Scratch>> make(const std::string& prefix) {
    std::string tmpl = fs::temp_directory_path().string() + "/" + prefix + "-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) return failed(std::string("mkdtemp: ") + std::strerror(errno));
    return std::unique_ptr<Scratch>(new Scratch(tmpl));
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  const std::string path;

 private:
  explicit Scratch(std::string p) : path(std::move(p)) {}
};

// The submission as the kernel it claims to be (a baseline: the package's
// source at the commit that added it, from the repository).
struct Candidate {
  std::string path;  // for messages: the upload, or kernel_data:<id>@<commit>
  package::PackageTree tree;
};

// The tip of the job's branch: the trusted harness, the incumbent beside it, the task.
struct AtHead {
  std::string base;  // the commit
  package::PackageTree trusted;
  package::PackageTree incumbent;  // trusted's src/
  bool has_incumbent = false;
  json metas;  // KERNEL_ZOO_TEST_CASE_METAS of the trusted benchmark.py
  std::string task_text;
};

// One sandboxed run and what it shows.
struct Measurement {
  runner::GradeOutcome graded;
  board::RunDecision decision;  // board::decide_run of the document (empty when there is none)
  verdict::Verdict verdict;     // decision.verdict
  Check check;
  json run;
  std::string evidence;  // the refs/jobs commit
};

// A step that may settle the job: its completion, or why the job ends; nullopt when grading goes on.
std::optional<Step<store::Completion>> settles(Step<std::optional<store::Completion>> s) {
  if (!s) return Step<store::Completion>(tl::unexpected(std::move(s.error())));
  if (*s) return Step<store::Completion>(std::move(**s));
  return std::nullopt;
}

class Grading {
 public:
  Grading(JobTransport& t, const store::Job& job, const GradeJobOptions& o, const Heartbeat& hb, JobReport& rep)
      : t_(t), job_(job), o_(o), hb_(hb), rep_(rep) {}

  // The job's completion, or why it ends without one.
  Step<store::Completion> run() {
    auto sub = t_.submission(job_.submission_id);
    if (!sub) return failed("cannot read submission: " + sub.error().message);
    sub_ = std::move(*sub);
    if (auto end = settles(earlier_commit())) return std::move(*end);
    auto ctx = t_.board(job_.id);
    if (!ctx) return failed(ctx.error().message);
    ctx_ = std::move(*ctx);
    auto scratch = Scratch::make("kzoo-pkg-" + std::to_string(job_.id));
    if (!scratch) return tl::unexpected(scratch.error());
    auto cand = candidate((*scratch)->path);
    if (!cand) return tl::unexpected(cand.error());
    for (int round = 1;; ++round) {
      auto head = at_head();
      if (!head) return tl::unexpected(head.error());
      auto m = measure(*cand, *head);
      if (!m) return tl::unexpected(m.error());
      if (auto end = settles(decide(*m))) return std::move(*end);
      if (auto end = settles(commit(*cand, *head, *m, round))) return std::move(*end);
    }
  }

  json result = json::object();
  json last_verdict;  // the last measurement's, once decided

 private:
  void say(const std::string& line) const {
    if (o_.log) o_.log(line);
  }

  // A commit of this job by an earlier holder that died before completing it.
  Step<std::optional<store::Completion>> earlier_commit() {
    auto earlier = t_.recover(sub_.kernel_id, job_.id, o_.history_scan);
    if (!earlier) return failed(earlier.error().message);
    if (earlier->commit.empty()) return std::nullopt;
    say(fmt::format("job {}: already committed as {} by an earlier holder; completing with it", job_.id, earlier->commit));
    store::Completion done;
    done.outcome = store::Outcome::accepted;
    done.accepted_commit = earlier->commit;
    done.verdict = earlier->verdict;
    result["recovered"] = true;
    result["accepted_commit"] = earlier->commit;
    rep_.reused_commit = true;
    return done;
  }

  // 1. The package, read and inspected: violations reject it here.
  Step<Candidate> candidate(const std::string& scratch) {
    const bool is_baseline = sub_.kind == "baseline";
    Candidate c;
    if (is_baseline) {
      c.path = "kernel_data:" + sub_.kernel_id + "@" + ctx_.baseline_commit;
      c.tree = ctx_.baseline_tree;
      return inspected(std::move(c), {});
    }
    auto path = t_.package_file(job_, sub_, scratch);
    if (!path) return failed("cannot fetch the uploaded package: " + path.error().message);
    auto tar = package::read_package_tarball(*path, sub_.kernel_id);
    if (!tar) return failed("cannot read the uploaded package: " + tar.error().message);
    c.path = *path;
    c.tree = std::move(tar->tree);
    return inspected(std::move(c), std::move(tar->violations));
  }

  Step<Candidate> inspected(Candidate c, Violations bad) {
    if (bad.empty()) bad = package::inspect_tree(c.tree, sub_.kernel_id, c.path).violations;
    if (bad.empty()) return c;
    result["violations"] = to_json(bad);
    return rejected(fmt::format("the package breaks {} rule(s); first: {}", bad.size(), to_string(bad.front())));
  }

  // 2-3. The trusted harness and the incumbent, from one commit: the tip of
  // the branch the submission targets (main when it names no route, or when
  // the route does not exist yet: it starts there); the task it names.
  Step<AtHead> at_head() {
    const std::string& kernel_id = sub_.kernel_id;
    auto tip = t_.trusted(kernel_id, job_.id);
    if (!tip) return failed(tip.error().message);
    AtHead h;
    h.base = tip->base;
    h.trusted = std::move(tip->tree);
    h.incumbent = subtree(h.trusted, "src/");
    h.has_incumbent = !h.incumbent.files.empty() && sub_.kind != "baseline";
    auto* desc_file = h.trusted.find(".kernel_package/desc.yaml");
    auto* bench_file = h.trusted.find(".kernel_package/benchmark.py");
    if (!desc_file || !bench_file) return failed(kernel_id + " at HEAD lacks its harness files");
    auto desc = format::parse_yaml(desc_file->content, kernel_id + "/.kernel_package/desc.yaml");
    if (!desc) return failed(to_string(desc.error()));
    h.metas = package::inspect_tree(h.trusted, kernel_id, "kernel_data:" + kernel_id).metas;
    auto tpath = task_file(*desc, o_.catalog_dir, kernel_id);
    if (!tpath) return failed(tpath.error().message);
    auto text = util::read_file_capped(*tpath, 8u << 20);
    if (!text) return failed(text.error().message);
    h.task_text = std::move(*text);
    // The task's environment (offline, gpus, min_compute_capability) is
    // honoured or the job is refused naming the field, as `kzoo grade`
    // refuses locally: never silently ignored. A task problem, not the
    // submission's: the job fails (it is not rejected) and says so.
    local::DeviceFacts dev;
    dev.device = o_.device;
    // With --gpus a job's sandbox binds only those GPUs: that is what it sees.
    // With the node's pool, a job may take up to all of the node's GPUs.
    dev.gpus = o_.node_gpus();
    dev.gpu_name = o_.gpu_name;
    if (o_.compute_capability)
      dev.compute_capability = fmt::format("{}.{}", *o_.compute_capability / 10, *o_.compute_capability % 10);
    const auto env = local::check_task_environment(json::parse(h.task_text, nullptr, false), *tpath, dev);
    if (!env.refusals.empty()) {
      std::string why;
      for (const auto& r : env.refusals) why += (why.empty() ? "" : "; ") + r;
      return failed("the task's environment cannot be honoured on this runner: " + why);
    }
    if (o_.gpu_pool && gpu_lease_.gpus().empty()) {
      // Taken once, before the first sandboxed run, and kept for every round.
      const auto need = static_cast<std::size_t>(env.gpus);
      if (need > o_.gpu_pool->size())
        return failed(fmt::format("the task's environment cannot be honoured on this runner: it asks for {} GPUs of one "
                                  "node (environment.gpus of {}), this worker has {} (--gpus): run a worker with {} "
                                  "or more",
                                  need, *tpath, o_.gpu_pool->size(), need));
      if (o_.gpu_pool->free_count() < need || o_.gpu_pool->waiting() > 0)
        say(fmt::format("job {}: waiting for {} of this node's {} GPUs", job_.id, need, o_.gpu_pool->size()));
      gpu_lease_ = o_.gpu_pool->take(need);
      say(fmt::format("job {}: on GPU {}", job_.id, fmt::join(gpu_lease_.gpus(), ",")));
    }
    return h;
  }

  // The judge's parameters: the worker's, with the board's guardrails over them.
  // An operator's --iterations still wins (tests time fewer runs), but a check
  // that timed fewer runs than the rules ask does not count on the board.
  runner::GradeOptions grade_options(int& timed_runs, const board::CheckLimits& limits) const {
    runner::GradeOptions g = runner_grade_options(o_);
    // The partition's time, memory and CPUs, as a Slurm allocation of it would give (board/partition.hpp).
    g.timeout = limits.timeout;
    g.iterations = o_.iterations;
    g.runner_id = o_.worker_id;
    g.memory_bytes = limits.memory_bytes;
    g.cpus = limits.cpus;
    g.gpus = o_.gpu_pool ? gpu_lease_.gpus() : o_.gpus;
    g.cpu_affinity = o_.cpus_for(g.gpus);
    // The board's guardrails are the judge's parameters (board/decision.hpp, shared with `kzoo grade`).
    const board::Rules* rules = ctx_.rules ? &*ctx_.rules : nullptr;
    timed_runs = board::timed_runs_for(rules, o_.iterations);
    g.judge_options = board::judge_options_for(o_.judge_options.is_object() ? o_.judge_options : json::object(), rules,
                                               o_.iterations);
    if (rules && !o_.iterations) g.iterations = rules->timed_runs;
    return g;
  }

  // 4-5. W, the incumbent beside it, the sandboxed run; its evidence, whatever happened.
  Step<Measurement> measure(const Candidate& cand, const AtHead& h) {
    const std::string& kernel_id = sub_.kernel_id;
    auto dir = Scratch::make("kzoo-job-" + std::to_string(job_.id));
    if (!dir) return tl::unexpected(dir.error());
    fs::permissions((*dir)->path, fs::perms(0755));  // the sandbox uid must reach W
    // This slot's judge started when its last run ended (runner/warm_judge.hpp): W is its skeleton.
    std::unique_ptr<runner::WarmJudge> warm = o_.warm_slot ? o_.warm_slot->take() : nullptr;
    auto w = runner::lay_out_run(warm.get(), (*dir)->path + "/w", h.trusted, cand.tree, h.task_text);
    if (!w) return failed(w.error().message);
    // A check runs under the limits of the partition the rules name for checks.
    std::optional<board::Partition> partition;
    if (ctx_.rules) {
      auto p = board::checks_partition(ctx_.rules->doc.value("benchmark", json::object()));
      if (!p) return failed("the board's rules at " + ctx_.rules->commit.substr(0, 12) + ": " + p.error().message);
      partition = *p;
    }
    const board::CheckLimits limits = board::check_limits(partition, o_.timeout, o_.memory_bytes);
    int timed_runs = 0;
    runner::GradeOptions g = grade_options(timed_runs, limits);
    const runner::GradeOptions next_run = g;  // the sandbox of this slot's next run, started ahead below
    if (h.has_incumbent)
      if (auto r = runner::add_incumbent(*w, h.incumbent, g); !r) return failed(r.error().message);
    say(fmt::format("job {}: grading {} ({}, {})", job_.id, kernel_id,
                    h.has_incumbent ? "A/B against the incumbent at " + h.base.substr(0, 12) : "no incumbent", o_.device));
    const auto started = std::chrono::steady_clock::now();
    Measurement m;
    m.graded = runner::grade_workdir(*w, kernel_id, g, warm.get());
    warm.reset();
    // The next run's judge starts now, while this one's evidence is committed, expecting
    // the kind of run this was (A/B or not: a kernel's jobs mostly are one or the other).
    // A worker sharing a pool of GPUs does not know the next run's GPU: its runs start cold.
    if (o_.warm_slot && !o_.gpu_pool) o_.warm_slot->prepare(next_run, h.has_incumbent);
    // A judge that does not name the class it ran on (its provenance waits
    // for the GPU-gated judge) ran on this worker's: the class it was told.
    if (m.graded.document.is_object() && !m.graded.document.contains("device_class"))
      m.graded.document["device_class"] = o_.device_class;
    const double cost_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    // The decision is board::decide_run's, the one `kzoo grade --against` makes on the same document.
    if (m.graded.document.is_object())
      m.decision = board::decide_run({m.graded.document, h.metas, h.has_incumbent, ctx_.rules ? &*ctx_.rules : nullptr,
                                      timed_runs, sub_.kind == "baseline"},
                                     o_.policy);
    m.verdict = m.decision.verdict;
    m.run = json{{"status", runner::to_string(m.graded.status)}, {"reason", m.graded.reason},
                 {"warnings", m.graded.warnings}, {"violations", to_json(m.graded.violations)},
                 {"worker", o_.worker_id}, {"job", job_.id}, {"base_commit", h.base},
                 {"had_incumbent", h.has_incumbent}, {"device", o_.device}, {"device_class", o_.device_class},
                 {"gpu_name", o_.gpu_name.empty() ? json() : json(o_.gpu_name)}, {"route", sub_.route},
                 {"kind", sub_.kind}, {"gpus", o_.gpu_pool ? gpu_lease_.gpus() : o_.gpus}, {"partition", partition ? json(partition->name) : json()},
                 {"limits", limits.to_json()}};
    m.check = board_check({sub_, job_.id, ctx_, m.graded.document, h.metas, m.decision, m.run, timed_runs, cost_s});
    auto evidence = record(m);
    if (!evidence) return failed("cannot record evidence: " + evidence.error().message);
    m.evidence = *evidence;
    rep_.evidence_commit = m.evidence;
    result["evidence_commit"] = m.evidence;
    result["run"] = m.run;
    result["check"] = m.check.record;
    result["metrics"] = m.check.metrics;
    if (m.graded.document.is_object()) result["benchmark_output"] = m.graded.document;
    return m;
  }

  // The verdict with each case's primary metric and its speed-up over the
  // eager baseline (the board's own figures, board::case_figures), for the
  // submitter to read beside the speed-up over the incumbent.
  json with_board_figures(json verdict, const json& measured) const {
    const json figures = board::case_figures(ctx_.baseline_measured, measured);
    if (!verdict.contains("cases") || !verdict["cases"].is_array()) return verdict;
    for (auto& c : verdict["cases"]) {
      if (!c.is_object() || !c.contains("test_case_id") || !c["test_case_id"].is_string()) continue;
      auto it = figures.find(c["test_case_id"].get<std::string>());
      if (it == figures.end()) continue;
      if (!c.contains("feedback") || !c["feedback"].is_object()) c["feedback"] = json::object();
      for (auto& [k, v] : it->items()) c["feedback"][k] = v;
    }
    return verdict;
  }

  Result<std::string> record(const Measurement& m) {
    auto text = [](const json& j) { return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n"; };
    std::map<std::string, std::string> files{{"run.json", text(m.run)}, {"stderr.log", m.graded.stderr_tail}};
    if (m.graded.document.is_object()) {
      files["benchmark_output.json"] = text(m.graded.document);
      files["verdict.json"] = m.verdict.to_json().dump(2) + "\n";
    }
    files["check.json"] = text(m.check.record);
    if (ctx_.rules && ctx_.rules->metrics_file != "check.json") files[ctx_.rules->metrics_file] = text(m.check.metrics);
    return t_.record_evidence(job_.id, o_.worker_id, files,
                              fmt::format("evidence of job {} (submission {})", job_.id, sub_.id));
  }

  // 6. What the measurement decides before anything is committed: the job's
  // completion, or nullopt when the candidate is to be committed.
  Step<std::optional<store::Completion>> decide(const Measurement& m) {
    const auto& graded = m.graded;
    if (graded.status == runner::GradeStatus::error)
      return tl::unexpected(JobFailure{
          store::Outcome::failed,
          graded.reason + (graded.stderr_tail.empty() ? "" : "; stderr ends:\n" + tail(graded.stderr_tail)), true});
    if (!graded.document.is_object()) return rejected(graded.reason);
    last_verdict = with_board_figures(m.verdict.to_json(), m.check.measured);
    store::Completion done;
    done.verdict = last_verdict;
    if (sub_.kind == "baseline") {
      // A baseline measures; it commits nothing. Accepted = it is the board's
      // baseline now; the commit named is the one whose source it measured.
      const bool passed = m.check.passed;
      done.outcome = passed ? store::Outcome::accepted : store::Outcome::rejected;
      done.accepted_commit = passed ? ctx_.baseline_commit : "";
      if (!passed) {
        done.reasons = m.check.breaks;
        done.reasons.insert(done.reasons.end(), m.check.notes.begin(), m.check.notes.end());
        if (done.reasons.empty()) done.reasons = {graded.reason.empty() ? "the baseline's check did not pass" : graded.reason};
      }
      result["baseline_commit"] = ctx_.baseline_commit;
      return done;
    }
    if (m.verdict.outcome == verdict::Outcome::rejected) {
      done.outcome = store::Outcome::rejected;
      done.reasons = m.verdict.reasons;
      return done;
    }
    if (m.verdict.outcome == verdict::Outcome::accepted && !m.check.breaks.empty()) {
      done.outcome = store::Outcome::rejected;
      done.reasons = m.check.breaks;
      return done;
    }
    return std::nullopt;
  }

  // The accept: onto the source it was measured against, then (adopt: auto)
  // onto main. nullopt: another accept changed that source meanwhile, so
  // this speed-up says nothing about the new source: measure again.
  Step<std::optional<store::Completion>> commit(const Candidate& cand, const AtHead& h, const Measurement& m, int round) {
    const std::string& kernel_id = sub_.kernel_id;
    if (hb_.lost()) return failed("lease lost before commit");
    // Refuse to commit unless we still hold the lease right now.
    if (auto r = t_.heartbeat(job_.id, o_.worker_id, o_.lease_seconds); !r)
      return failed("lease lost before commit: " + r.error().message);
    const json& doc = m.graded.document;
    // Only the kernel's own device class enters its bench_result.yaml (bench_result.hpp).
    if (auto foreign = foreign_device_reason(doc, kernel_id); !foreign.empty()) {
      say(fmt::format("job {}: {}", job_.id, foreign));
      result["bench_result"] = json{{"entered", false}, {"reason", foreign}};
    } else {
      result["bench_result"] = json{{"entered", true}};
    }
    AcceptRequest ar{job_.id, kernel_id, subtree(cand.tree, "src/"), doc, directions_from_metas(h.metas), m.evidence,
                     utc_now_iso(), commit_message(sub_, job_, m.verdict, m.evidence, document_device_class(doc)),
                     store::Person{person_name(sub_.submitter_id), ""}, h.base};
    auto acc = t_.accept(ar, o_.worker_id);
    if (!acc) return failed("cannot commit the accepted source: " + acc.error().message);
    if (acc->incumbent_moved) {
      if (round == kMeasureRounds)
        return failed(fmt::format("another submission was accepted into {} during each of {} measurements of this one; "
                                  "resubmit to be compared with the source now at HEAD",
                                  kernel_id, kMeasureRounds));
      say(fmt::format("job {}: another submission was accepted into {} while this one was measured; measuring again "
                      "against the new source (round {} of {})",
                      job_.id, kernel_id, round + 1, kMeasureRounds));
      return std::nullopt;
    }
    say(fmt::format("job {}: accepted as {} on {} ({})", job_.id, acc->commit, ctx_.branch, m.verdict.summary));
    store::Completion done;
    done.verdict = last_verdict;
    adopt(ar, acc->commit, done);
    done.outcome = store::Outcome::accepted;
    done.accepted_commit = acc->commit;
    for (auto& n : m.verdict.notes) done.reasons.insert(done.reasons.begin(), n);
    result["accepted_commit"] = acc->commit;
    result["branch"] = ctx_.branch;
    return done;
  }

  // Adoption (scienceslack.json `adopt`): with `auto` (and without rules) a
  // route's accept lands on main too, when main's source of this kernel is
  // still the one it was measured against.
  void adopt(const AcceptRequest& ar, const std::string& accepted, store::Completion& done) {
    const std::string& branch = ctx_.branch;
    if (branch == "main" || (ctx_.rules && ctx_.rules->adopt != "auto")) return;
    AcceptRequest a = ar;
    a.adopt = true;
    a.message = ar.message + "Kzoo-Adopted-From: " + accepted + "\n";
    auto adopted = t_.accept(a, o_.worker_id);
    if (!adopted) {
      say(fmt::format("job {}: not adopted onto main: {}", job_.id, adopted.error().message));
      done.reasons.push_back("accepted on " + branch + "; not adopted onto main: " + adopted.error().message);
    } else if (adopted->incumbent_moved) {
      done.reasons.push_back("accepted on " + branch + "; not adopted onto main: main's source of " + sub_.kernel_id +
                             " is not the one this was measured against (a maintainer merges it)");
    } else {
      result["adopted_commit"] = adopted->commit;
      say(fmt::format("job {}: adopted onto main as {}", job_.id, adopted->commit));
    }
  }

  JobTransport& t_;
  const store::Job& job_;
  const GradeJobOptions& o_;
  const Heartbeat& hb_;
  JobReport& rep_;
  store::Submission sub_;
  BoardContext ctx_;
  GpuPool::Lease gpu_lease_;  // with o_.gpu_pool: this job's GPUs, from the first sandboxed run to the end
};

// Hands the job back (an infrastructure failure) or completes it.
void finish(JobTransport& t, const store::Job& job, const GradeJobOptions& o, store::Completion done, bool retry,
            JobReport& rep) {
  auto say = [&](const std::string& line) {
    if (o.log) o.log(line);
  };
  rep.outcome = done.outcome;
  rep.reasons = done.reasons;
  rep.accepted_commit = done.accepted_commit;
  if (retry) {
    auto r = t.retry(job.id, o.worker_id, done.reasons, done.result);
    if (!r) {
      say(fmt::format("job {}: not handed back, the store refused ({}): {}", job.id, store::to_string(r.error().kind),
                      r.error().message));
      return;
    }
    rep.completed = r->state == store::State::failed;
    rep.retried = r->state == store::State::queued;
    say(fmt::format("job {}: infrastructure failure on attempt {}/{}, {} — {}", job.id, r->attempts, r->max_attempts,
                    rep.retried ? "queued again" : "failed", tail(done.reasons.front(), 300)));
    return;
  }
  util::failpoint("worker.before-complete");  // an accept is committed, the job not yet completed
  auto c = t.complete(job.id, o.worker_id, done);
  if (!c) {
    // Never complete a job we no longer hold: the store refused; someone else has it.
    say(fmt::format("job {}: not completed, the store refused ({}): {}", job.id, store::to_string(c.error().kind),
                    c.error().message));
    return;
  }
  rep.completed = true;
  say(fmt::format("job {}: {}{}", job.id, store::to_string(store::to_state(done.outcome)),
                  done.reasons.empty() ? "" : " — " + tail(done.reasons.front(), 300)));
}

}  // namespace

std::vector<int> GradeJobOptions::cpus_for(const std::vector<int>& job_gpus) const {
  std::vector<int> out;
  for (int g : job_gpus) {
    auto it = gpu_cpus.find(g);
    if (it == gpu_cpus.end()) return {};
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

runner::GradeOptions runner_grade_options(const GradeJobOptions& o) {
  runner::GradeOptions g;
  g.device = o.device;
  g.catalog_dir = o.catalog_dir;
  g.judge_dir = o.judge_dir;
  g.python = o.python;
  g.sandboxed = o.sandboxed;
  return g;
}

JobReport grade_job(JobTransport& t, const store::Job& job, const GradeJobOptions& o) {
  JobReport rep;
  rep.job_id = job.id;
  rep.submission_id = job.submission_id;
  auto say = [&](const std::string& line) {
    if (o.log) o.log(line);
  };
  say(fmt::format("job {}: claimed (submission {}, attempt {}/{})", job.id, job.submission_id, job.attempts,
                  job.max_attempts));
  Heartbeat hb(t, job.id, o.worker_id, o.lease_seconds, say);
  Grading g(t, job, o, hb, rep);
  store::Completion done;
  bool retry = false;
  try {
    auto r = g.run();
    if (r) {
      done = std::move(*r);
    } else {
      done.outcome = r.error().outcome;
      done.reasons = {r.error().reason};
      retry = r.error().retry;
      done.verdict = !g.last_verdict.is_null() ? g.last_verdict
                                          : json{{"outcome", store::to_string(store::to_state(r.error().outcome))},
                                                 {"summary", r.error().reason},
                                                 {"reasons", {r.error().reason}}};
    }
  } catch (const std::exception& e) {
    // A library gave up (out of memory, a bug): the job still ends, as failed.
    done = store::Completion{};
    done.outcome = store::Outcome::failed;
    done.reasons = {std::string("internal error: ") + e.what()};
  }
  done.result = g.result;
  finish(t, job, o, std::move(done), retry, rep);
  return rep;
}

}  // namespace kzoo::jobs
