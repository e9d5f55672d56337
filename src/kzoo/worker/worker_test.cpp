// kzoo worker end to end: a data directory made like `kzoo init` does, a
// catalog with one tiny softmax task, the REAL judge in the REAL sandbox (CPU
// torch), submissions queued like the server queues them.
#include "kzoo/jobs/direct.hpp"
#include "kzoo/worker/worker.hpp"

#include <csignal>
#include <filesystem>
#include <map>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kzoo/access/token.hpp"
#include "kzoo/board/decision.hpp"
#include "kzoo/board/rules.hpp"
#include "kzoo/package/inspect.hpp"
#include "kzoo/format/json_text.hpp"
#include "kzoo/format/yaml_json.hpp"
#include "kzoo/package/tarball.hpp"
#include "kzoo/runner/test_support.hpp"
#include "kzoo/server/client.hpp"
#include "kzoo/server/data_dir.hpp"
#include "kzoo/server/test_support.hpp"
#include "kzoo/store/open_state.hpp"
#include "kzoo/store/test_support.hpp"
#include "kzoo/util/test_prerequisite.hpp"

namespace kzoo::worker {
namespace {

using nlohmann::json;
using runner::testing::TempDir;
using runner::testing::write_file;

const char* kKernel = "cpu/softmax/tiny";

const char* kTask = R"({
  "name": "tiny-softmax", "family": "test",
  "definition": {"entry_point": "softmax", "module": "kernel.py",
    "inputs": [{"name": "x", "shape": ["R", "C"], "dtype": "float32"}],
    "outputs": [{"name": "y", "shape": ["R", "C"], "dtype": "float32"}],
    "reference": {"language": "python/pytorch",
      "source": "import torch\ndef reference(x):\n    return torch.softmax(x.to(torch.float64), dim=-1).to(x.dtype)\n"}},
  "workloads": {"synthetic": {"dims": ["R", "C"], "graded": [[4096, 4096]],
    "correctness": [[3, 17], [8, 64]], "measure": [[64, 256]]}},
  "grading": {"metric": "GB/s", "reward": {"kind": "absolute-uncapped", "canonical_work": "2*R*C*4"},
    "tolerance": {"value": 1e-5, "comparator": "relative-frobenius"}}
})";

const char* kDesc = R"(schema_version: "1"
name: tiny-softmax
category: {arch: cpu, op_class: softmax, sub_class: rowwise, quant: fp32}
summary: Row softmax for worker tests
description: Softmax over the last dimension of a float32 matrix.
io_signature:
  - {name: x, direction: in, dtype: float32, shape: [R, C]}
  - {name: y, direction: out, dtype: float32, shape: [R, C]}
quantization: {scheme: none}
reference_sources:
  - {kind: task, ref: tiny-softmax}
)";

const char* kBenchmark = R"(KERNEL_ZOO_TEST_CASE_METAS = [
    {"test_case_id": "g0", "params": {"workload": "synthetic", "shape": {"R": 4096, "C": 4096}},
     "primary_metric": "GB/s",
     "metrics": [{"name": "GB/s", "unit": "GB/s", "direction": "higher"},
                 {"name": "time_us", "unit": "us", "direction": "lower"}],
     "tolerance": {"correctness_atol": 1e-05, "correctness_rtol": 1e-05}},
]
if __name__ == "__main__":
    from kzoo_judge.entry import run_package_benchmark
    run_package_benchmark(KERNEL_ZOO_TEST_CASE_METAS)
)";

const char* kBuild = "from kzoo_judge.entry import build_test_env\nraise SystemExit(build_test_env())\n";

// The incumbent: correct, and does the work four hundred times over in float64. A
// pair's four fast calls fit inside one scheduler stall of a loaded 2-core machine;
// at forty times the work (22x slower than kFast) 7 and 10 of 25 A/B pairs flipped
// in two tests under the full suite at -j2 (session 32), past the sign test's bar.
// At ten times that (~200x) a stall must outlast the slow side's whole batch.
const char* kSlow = R"(import torch
def softmax(x):
    y = None
    for _ in range(400):
        y = torch.softmax(x.to(torch.float64), dim=-1)
    return y.to(x.dtype)
)";
const char* kFast = "import torch\ndef softmax(x):\n    return torch.softmax(x, dim=-1)\n";
const char* kWrong = "import torch\ndef softmax(x):\n    return torch.softmax(x * 1.5, dim=-1)\n";

package::PackageTree package_tree(const std::string& src, const std::string& bench_result = "") {
  package::PackageTree t;
  auto add = [&](std::string p, std::string c) { t.files.push_back({std::move(p), std::move(c), false}); };
  add(".kernel_package/bench_result.yaml",
      bench_result.empty() ? std::string("schema_version: \"1\"\nkernel_id: ") + kKernel + "\ncases: []\n" : bench_result);
  add(".kernel_package/benchmark.py", kBenchmark);
  add(".kernel_package/build_test_env.py", kBuild);
  add(".kernel_package/desc.yaml", kDesc);
  add("src/kernel.py", src);
  t.dirs = {".kernel_package", "src"};
  return t;
}

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KZOO_REQUIRE_PREREQUISITE(runner::testing::bwrap_unusable_reason());
    write_file(root / "catalog/tasks/tiny-softmax/task.json", kTask);
    write_file(root / "catalog/device_classes.json",
               runner::testing::read_file(std::string(KZOO_SOURCE_DIR) + "/catalog/device_classes.json"));
    write_file(root / "catalog/kernel_data/.kernel_data", "");
    std::filesystem::create_directories(root / "catalog/kernel_data/cpu/softmax");
    auto wrote = package::write_tree(package_tree(kSlow), root / (std::string("catalog/kernel_data/") + kKernel));
    ASSERT_TRUE(wrote) << wrote.error().message;
    auto d = server::init_data_dir(root / "data", root / "catalog/kernel_data", server::ServerConfig{});
    ASSERT_TRUE(d) << d.error().message;
    paths = *d;
    auto db = store::open_state(paths.state_url());
    ASSERT_TRUE(db);
    state = std::move(*db);
    auto r = store::KernelRepo::open(paths.repo());
    ASSERT_TRUE(r);
    repo.emplace(std::move(*r));
    o.data_dir = paths.root;
    o.catalog_dir = root / "catalog";
    o.judge_dir = std::string(KZOO_SOURCE_DIR) + "/judge";
    o.worker_id = "test-worker";
    o.lease_seconds = 30;
    o.timeout = std::chrono::seconds(300);
    o.memory_bytes = 4ull << 30;
    // 16 A/B pairs of 4 calls: a real gain passes the sign test (p <= 0.01)
    // even when a loaded machine flips two pairs (p(14 of 16) = 0.002).
    o.judge_options = json{{"iterations", 64}, {"warmup", 2}, {"trials", 2}, {"batch", 4}};
    o.log = [](std::string_view l) { std::cerr << "  worker: " << l << "\n"; };
  }

  // Queues a submission the way the server does: tarball under uploads/, row, job.
  std::int64_t submit(const package::PackageTree& tree, const std::string& summary = "fused softmax") {
    static int n = 0;
    std::string path = paths.uploads() + "/test-" + std::to_string(++n) + ".tar.gz";
    EXPECT_TRUE(package::write_package_tarball(tree, kKernel, path));
    auto s = state->create_submission({kKernel, "alice", summary, path, std::string(64, 'a')});
    EXPECT_TRUE(s) << (s ? "" : s.error().message);
    auto j = state->enqueue(s->id);
    EXPECT_TRUE(j);
    return j->id;
  }

  JobReport run_one() {
    auto w = Worker::open(o);
    EXPECT_TRUE(w) << (w ? "" : w.error().message);
    auto r = (*w)->run_once();
    EXPECT_TRUE(r && *r) << (r ? "nothing queued" : r.error().message);
    return r && *r ? **r : JobReport{};
  }

  std::string head() { return *repo->head(); }

  // The job was completed exactly as board::decide_run decides on the job's own
  // evidence: the function `kzoo grade --against` calls, fed the same judge
  // document, trusted metas, rules in force and run count.
  void expect_decided_by_decide_run(std::int64_t job, const JobReport& rep) {
    auto ev = repo->read_job_evidence(std::to_string(job));
    ASSERT_TRUE(ev) << ev.error().message;
    auto doc = format::parse_json(ev->at("benchmark_output.json"), "benchmark_output.json");
    auto check = format::parse_json(ev->at("check.json"), "check.json");
    ASSERT_TRUE(doc && check);
    auto rules = board::rules_in_force(*repo);
    ASSERT_TRUE(rules && *rules) << "kzoo init tags the demo rules";
    const json metas = package::inspect_tree(package_tree(kSlow), kKernel, "trusted").metas;
    board::RunDecision d =
        board::decide_run({*doc, metas, true, &**rules, (*check)["timed_runs"].get<int>(), false}, o.policy);
    EXPECT_EQ(d.accepted, rep.outcome == store::Outcome::accepted) << d.to_json().dump(2);
    if (!d.accepted) {
      EXPECT_EQ(d.reasons, rep.reasons);
    }
    EXPECT_EQ(d.check_passed, (*check)["passed"].get<bool>());
    EXPECT_EQ(d.measured, (*check)["measured"]);
    EXPECT_EQ(d.verdict.to_json(), json::parse(ev->at("verdict.json")));
  }

  TempDir root;
  server::DataPaths paths{""};
  std::unique_ptr<store::StateDb> state;
  std::optional<store::KernelRepo> repo;
  WorkerOptions o;
};

TEST_F(WorkerTest, AFasterCorrectSubmissionIsCommittedWithTheServersBenchResult) {
  const std::string before = head();
  // Its own bench_result.yaml claims a fantastic figure: it must never land.
  auto job = submit(package_tree(kFast, std::string("schema_version: \"1\"\nkernel_id: ") + kKernel +
                                            "\ncases:\n  - test_case_id: g0\n    metrics_best: {GB/s: 99999999}\n"
                                            "    metrics_current: {GB/s: 99999999}\n"));
  auto rep = run_one();
  ASSERT_EQ(rep.outcome, store::Outcome::accepted) << (rep.reasons.empty() ? "" : rep.reasons[0]);
  EXPECT_TRUE(rep.completed);
  EXPECT_EQ(rep.accepted_commit, head());
  EXPECT_NE(head(), before);

  EXPECT_EQ(*repo->read_file(std::string(kKernel) + "/src/kernel.py"), kFast);
  auto br = format::parse_yaml(*repo->read_file(std::string(kKernel) + "/.kernel_package/bench_result.yaml"), "b");
  ASSERT_TRUE(br);
  const json& c = (*br)["cases"][0];
  EXPECT_EQ(c["test_case_id"], "g0");
  EXPECT_GT(c["metrics_current"]["GB/s"].get<double>(), 0);
  EXPECT_LT(c["metrics_current"]["GB/s"].get<double>(), 99999999);
  EXPECT_EQ(c["best_commit"], rep.evidence_commit);
  // The harness at HEAD is still the trusted one.
  EXPECT_EQ(*repo->read_file(std::string(kKernel) + "/.kernel_package/benchmark.py"), kBenchmark);

  auto hist = repo->history(kKernel, 1);
  ASSERT_TRUE(hist);
  const auto& msg = (*hist)[0].message;
  EXPECT_NE(msg.find("fused softmax"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Submitter: alice"), std::string::npos);
  EXPECT_NE(msg.find("Kzoo-Job: " + std::to_string(job) + "\n"), std::string::npos);
  EXPECT_NE(msg.find("speedup="), std::string::npos);
  EXPECT_EQ((*hist)[0].author.name, "alice");

  auto ev = repo->read_job_evidence(std::to_string(job));
  ASSERT_TRUE(ev) << ev.error().message;
  for (const char* f : {"benchmark_output.json", "stderr.log", "run.json", "verdict.json"}) EXPECT_TRUE(ev->count(f)) << f;
  auto doc = format::parse_json(ev->at("benchmark_output.json"), "b");
  ASSERT_TRUE(doc);
  EXPECT_GT((*doc)["cases"][0]["speedup"]["value"].get<double>(), 1.5);

  auto sub = state->get_submission(rep.submission_id);
  EXPECT_EQ(sub->state, store::State::accepted);
  EXPECT_EQ(sub->accepted_commit, rep.accepted_commit);
  EXPECT_EQ(sub->verdict["outcome"], "accepted");
  expect_decided_by_decide_run(job, rep);
}

TEST_F(WorkerTest, AnIncorrectSubmissionIsRejectedAndNothingIsCommitted) {
  const std::string before = head();
  auto job = submit(package_tree(kWrong));
  auto rep = run_one();
  EXPECT_EQ(rep.outcome, store::Outcome::rejected);
  EXPECT_TRUE(rep.completed);
  EXPECT_EQ(head(), before);
  ASSERT_FALSE(rep.reasons.empty());
  EXPECT_NE(rep.reasons[0].find("incorrect"), std::string::npos) << rep.reasons[0];
  EXPECT_TRUE(repo->read_job_evidence(std::to_string(job)));
  EXPECT_EQ(state->get_submission(rep.submission_id)->state, store::State::rejected);
  expect_decided_by_decide_run(job, rep);
}

// A task's environment is honoured or the job refused naming the field, as
// `kzoo grade` refuses locally: a task that needs the network cannot be graded
// in the sandbox, and the job says why instead of grading as if it could.
TEST_F(WorkerTest, ATaskWhoseEnvironmentTheRunnerCannotHonourFailsTheJobNamingTheField) {
  std::string task = kTask;
  task.insert(task.rfind('}'), R"(, "environment": {"offline": false})");
  write_file(root / "catalog/tasks/tiny-softmax/task.json", task);
  const std::string before = head();
  auto job = submit(package_tree(kWrong));
  auto rep = run_one();
  EXPECT_EQ(rep.outcome, store::Outcome::failed) << "a task problem, not the submission's";
  ASSERT_FALSE(rep.reasons.empty());
  EXPECT_NE(rep.reasons[0].find("environment.offline is false"), std::string::npos) << rep.reasons[0];
  EXPECT_NE(rep.reasons[0].find("\"offline\": true"), std::string::npos) << "the fix: " << rep.reasons[0];
  EXPECT_EQ(head(), before);
  EXPECT_EQ(state->get_job(job)->state, store::State::failed);
}

TEST_F(WorkerTest, TheSameSourceAsTheIncumbentIsNotAnImprovement) {
  const std::string before = head();
  auto job = submit(package_tree(kSlow));
  auto rep = run_one();
  EXPECT_EQ(rep.outcome, store::Outcome::rejected);
  EXPECT_EQ(head(), before);
  ASSERT_FALSE(rep.reasons.empty());
  EXPECT_NE(rep.reasons.back().find("not faster than the incumbent"), std::string::npos) << rep.reasons.back();
  expect_decided_by_decide_run(job, rep);
}

// The judge of a worker's next job starts when a job's run ends (runner/warm_judge.hpp):
// the second job's judge was up before that job was claimed, and its verdict is the one a
// cold judge gives (an A/B against the incumbent, the gain accepted).
TEST_F(WorkerTest, TheNextJobsJudgeIsStartedAheadAndJudgesItAsAColdOneWould) {
  o.warm = runner::WarmMode::on;
  auto w = Worker::open(o);
  ASSERT_TRUE(w) << w.error().message;
  auto first = submit(package_tree(kWrong));
  auto r1 = (*w)->run_once();
  ASSERT_TRUE(r1 && *r1);
  EXPECT_EQ((*r1)->outcome, store::Outcome::rejected);
  auto ev1 = repo->read_job_evidence(std::to_string(first));
  ASSERT_TRUE(ev1);
  EXPECT_EQ(ev1->at("stderr.log").find("a judge started ahead"), std::string::npos) << "the first job starts cold";

  auto second = submit(package_tree(kFast));
  auto r2 = (*w)->run_once();
  ASSERT_TRUE(r2 && *r2);
  ASSERT_EQ((*r2)->outcome, store::Outcome::accepted) << ((*r2)->reasons.empty() ? "" : (*r2)->reasons[0]);
  auto ev2 = repo->read_job_evidence(std::to_string(second));
  ASSERT_TRUE(ev2);
  EXPECT_NE(ev2->at("stderr.log").find("a judge started ahead"), std::string::npos) << ev2->at("stderr.log");
  auto doc = format::parse_json(ev2->at("benchmark_output.json"), "b");
  ASSERT_TRUE(doc);
  EXPECT_GT((*doc)["cases"][0]["speedup"]["value"].get<double>(), 1.5);
  expect_decided_by_decide_run(second, **r2);
}

// The judge's modules are compiled before the worker claims anything (runner/bytecode_cache.hpp):
// on a fresh runner the first job's lease and its time to a verdict do not hold the warm-up, and
// that job's judge reads what it compiled.
TEST_F(WorkerTest, CompilesTheJudgesModulesBeforeItClaimsItsFirstJob) {
  TempDir fresh;
  const std::string cache = fresh.path() + "/bytecode";
  runner::testing::EnvVar env("KZOO_BYTECODE_CACHE", cache.c_str());
  std::vector<std::string> lines;
  o.log = [&](std::string_view l) { lines.emplace_back(l); };
  auto job = submit(package_tree(kWrong));
  auto w = Worker::open(o);
  ASSERT_TRUE(w) << w.error().message;
  auto said = [&](std::size_t from, const std::string& what) {
    for (std::size_t i = from; i < lines.size(); ++i)
      if (lines[i].find(what) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(said(0, "compiling the judge's Python modules into " + cache)) << ::testing::PrintToString(lines);
  EXPECT_TRUE(said(0, "bytecode cache " + cache + ": current for ")) << ::testing::PrintToString(lines);
  EXPECT_EQ(state->get_job(job)->state, store::State::queued) << "warmed before the claim";
  // One stamp, the one the job's grade checks: the job leaves it as it was (no second warm-up).
  auto stamps = [&] {
    std::map<std::string, std::filesystem::file_time_type> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(cache + "/stamps", ec))
      out[e.path().string()] = std::filesystem::last_write_time(e.path());
    return out;
  };
  const auto before = stamps();
  EXPECT_EQ(before.size(), 1u);

  auto r = (*w)->run_once();
  ASSERT_TRUE(r && *r) << (r ? "nothing queued" : r.error().message);
  EXPECT_EQ((*r)->outcome, store::Outcome::rejected);
  EXPECT_EQ(stamps(), before);
  auto ev = repo->read_job_evidence(std::to_string(job));
  ASSERT_TRUE(ev);
  EXPECT_NE(ev->at("stderr.log").find("torch's bytecode: current (kzoo's cache " + cache + ")"), std::string::npos)
      << ev->at("stderr.log");

  // Turned off, the worker says so and grades as before.
  lines.clear();
  runner::testing::EnvVar off("KZOO_BYTECODE_CACHE", "off");
  ASSERT_TRUE(Worker::open(o));
  EXPECT_TRUE(said(0, "no bytecode cache (it is turned off")) << ::testing::PrintToString(lines);
}

TEST_F(WorkerTest, ASubmissionsOwnHarnessNeverRuns) {
  const std::string before = head();
  // Its harness would print a forged accepting document and succeed; its
  // source is wrong. Only the trusted harness can notice.
  auto t = package_tree(kWrong);
  for (auto& f : t.files) {
    if (f.path == ".kernel_package/benchmark.py")
      f.content = std::string(kBenchmark) +
                  "import json, sys\nprint(json.dumps({'overall': {'accept': True}}))\nsys.exit(0)\n";
    if (f.path == ".kernel_package/build_test_env.py")
      f.content = "open('/kzoo/work/src/kernel.py', 'w').write('import torch\\ndef softmax(x):\\n    return torch.softmax(x, dim=-1)\\n')\n";
  }
  submit(t);
  auto rep = run_one();
  EXPECT_EQ(rep.outcome, store::Outcome::rejected) << (rep.reasons.empty() ? "" : rep.reasons[0]);
  EXPECT_EQ(head(), before);
}

TEST_F(WorkerTest, AnAcceptLandingDuringTheMeasurementIsMeasuredAgainstNotOverwritten) {
  const std::string before = head();
  // While the fused candidate is measured against the slow incumbent, another
  // submission (a different slow source) is accepted into the same kernel.
  const std::string other_src = std::string(kSlow) + "# another contributor's version\n";
  std::string other_commit;
  std::vector<std::string> lines;
  auto log = o.log;
  o.log = [&](std::string_view l) {
    lines.emplace_back(l);
    log(l);
    if (other_commit.empty() && l.find("grading") != std::string_view::npos) {
      auto r = store::KernelRepo::open(paths.repo());
      ASSERT_TRUE(r);
      auto acc = r->accept(kKernel, package_tree(other_src), std::string("schema_version: \"1\"\nkernel_id: ") + kKernel + "\ncases: []\n",
                           "the other accept", store::Person{"bob", ""});
      ASSERT_TRUE(acc) << acc.error().message;
      other_commit = acc->commit;
    }
  };
  submit(package_tree(kFast));
  auto rep = run_one();
  ASSERT_FALSE(other_commit.empty());
  EXPECT_EQ(rep.outcome, store::Outcome::accepted) << (rep.reasons.empty() ? "" : rep.reasons[0]);
  // Measured a second time, against the other accept's source, and committed on top of it.
  int gradings = 0;
  bool again = false;
  for (const auto& l : lines) {
    gradings += l.find("grading") != std::string::npos;
    again = again || l.find("measuring again against the new source") != std::string::npos;
  }
  EXPECT_EQ(gradings, 2);
  EXPECT_TRUE(again);
  EXPECT_EQ(head(), rep.accepted_commit);
  EXPECT_EQ(*repo->read_file(std::string(kKernel) + "/src/kernel.py", rep.accepted_commit), kFast);
  auto parent = repo->history(kKernel);
  ASSERT_TRUE(parent);
  ASSERT_GE(parent->size(), 2u);
  EXPECT_EQ((*parent)[1].id, other_commit) << "the accept sits on the other accept, which is kept in the history";
  EXPECT_NE(before, other_commit);
}

TEST_F(WorkerTest, ACommitByAHolderThatDiedBeforeCompletingIsReusedNotRepeated) {
  auto job = submit(package_tree(kFast));
  // The earlier holder committed, then died before complete(): simulate its commit.
  std::string msg = "cpu/softmax/tiny: fused softmax\n\nKzoo-Job: " + std::to_string(job) + "\nKzoo-Submission: 1\n";
  auto sub_tree = package_tree(kFast);
  auto acc = repo->accept(kKernel, sub_tree, std::string("schema_version: \"1\"\nkernel_id: ") + kKernel + "\ncases: []\n",
                          msg, store::Person{"alice", ""});
  ASSERT_TRUE(acc) << acc.error().message;
  auto rep = run_one();
  EXPECT_EQ(rep.outcome, store::Outcome::accepted);
  EXPECT_TRUE(rep.reused_commit);
  EXPECT_EQ(rep.accepted_commit, acc->commit);
  EXPECT_EQ(head(), acc->commit);  // no second commit
  EXPECT_EQ(state->get_submission(rep.submission_id)->accepted_commit, acc->commit);
}

TEST_F(WorkerTest, FindJobCommitMatchesTheWholeTrailerOnly) {
  auto acc = repo->accept(kKernel, package_tree(kFast), std::string("schema_version: \"1\"\nkernel_id: ") + kKernel + "\ncases: []\n",
                          "x\n\nKzoo-Job: 12\n", store::Person{"a", ""});
  ASSERT_TRUE(acc);
  EXPECT_EQ(*jobs::find_job_commit(*repo, kKernel, 12), acc->commit);
  EXPECT_EQ(*jobs::find_job_commit(*repo, kKernel, 1), "");
  EXPECT_EQ(*jobs::find_job_commit(*repo, kKernel, 123), "");
}

TEST_F(WorkerTest, AWorkerKilledMidJobLosesItAndAnotherCompletesItExactlyOnce) {
  auto job = submit(package_tree(kFast));
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::string opts = o.judge_options.dump();
    ::setenv("KZOO_WORKER_JUDGE_OPTIONS", opts.c_str(), 1);
    ::execl(KZOO_BINARY, KZOO_BINARY, "worker", "--once", "--data", o.data_dir.c_str(), "--catalog",
            o.catalog_dir.c_str(), "--judge-dir", o.judge_dir.c_str(), "--lease", "3", "--id", "doomed",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  // Wait until the doomed worker holds the job, give it time to start grading, kill it.
  bool running = false;
  for (int i = 0; i < 300 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto j = state->get_job(job);
    running = j && j->state == store::State::running && j->lease_owner == "doomed";
  }
  ASSERT_TRUE(running);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(state->get_job(job)->state, store::State::running);
  // Its lease runs out (no heartbeats any more); the next worker takes over.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  auto rep = run_one();
  EXPECT_EQ(rep.job_id, job);
  EXPECT_EQ(rep.outcome, store::Outcome::accepted) << (rep.reasons.empty() ? "" : rep.reasons[0]);
  EXPECT_TRUE(rep.completed);
  auto j = state->get_job(job);
  EXPECT_EQ(j->state, store::State::accepted);
  EXPECT_EQ(j->attempts, 2);
  EXPECT_EQ(j->lease_owner, "test-worker");
  // Exactly one commit names the job.
  auto hist = repo->history(kKernel, 50);
  int naming = 0;
  for (const auto& c : *hist)
    if (c.message.find("Kzoo-Job: " + std::to_string(job) + "\n") != std::string::npos) ++naming;
  EXPECT_EQ(naming, 1);
  // And the dead worker cannot complete it late.
  store::Completion late;
  late.outcome = store::Outcome::rejected;
  EXPECT_FALSE(state->complete(job, "doomed", late));
}

TEST(WorkerOpen, RefusesADirectoryThatIsNotADataDirectory) {
  TempDir d;
  WorkerOptions o;
  o.data_dir = d.path();
  auto w = Worker::open(o);
  ASSERT_FALSE(w);
  EXPECT_NE(w.error().message.find("kzoo init"), std::string::npos);
}

// Api mode: the worker talks only to the server's runner API with a runner
// token, and never opens the data directory. An outsider's submission waits
// held, a maintainer releases it, then the runner grades it.
class ApiModeTest : public WorkerTest {
 protected:
  void SetUp() override {
    WorkerTest::SetUp();
    if (IsSkipped()) return;
    server::ServerConfig cfg = server::default_config([](const std::string&) { return std::nullopt; });
    cfg.data_dir = paths.root;
    cfg.listen_port = 0;
    cfg.threads = 4;
    svc = std::make_unique<server::testing::RunningService>(cfg);
    ASSERT_TRUE(state->add_user("mia", store::Role::maintainer));
    ASSERT_TRUE(state->add_user("ola", store::Role::outsider));
    mia = token("mia", store::TokenKind::person, "");
    ola = token("ola", store::TokenKind::person, "");
    runner_token = token("mia", store::TokenKind::runner, "cpu-1");
    o.data_dir = root / "no-such-data-dir";  // api mode must not need it
    o.server_url = svc->url();
  }
  std::string token(const std::string& user, store::TokenKind kind, const std::string& label) {
    return server::testing::issue_token(*state, user, kind, label);
  }
  std::unique_ptr<server::testing::RunningService> svc;
  std::string mia, ola, runner_token;
};

TEST_F(ApiModeTest, AnOutsidersSubmissionIsHeldThenReleasedByAMaintainerThenGraded) {
  const std::string before = head();
  auto tgz = package::package_tarball_bytes(package_tree(kFast), kKernel);
  ASSERT_TRUE(tgz);
  auto up = server::upload_submission(svc->url(),
                                      {{"kernel_id", kKernel}, {"package_filename", "p.tar.gz"},
                                       {"optimization_summary", "fused softmax"}},
                                      *tgz, "p.tar.gz", {}, 60, ola);
  ASSERT_TRUE(up);
  ASSERT_EQ(up->status, 202) << up->text;
  EXPECT_EQ(up->body["held"], true);
  EXPECT_EQ(up->body["hold_reason"], "JobHeldAdmin");
  const std::int64_t job = up->body["job_id"];

  // A worker whose token is not a runner's cannot claim.
  o.token = ola;
  auto not_runner = Worker::open(o);
  ASSERT_TRUE(not_runner);
  auto refused = (*not_runner)->run_once();
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("403"), std::string::npos) << refused.error().message;
  o.token.clear();
  EXPECT_FALSE(Worker::open(o));  // and without any token, api mode does not start

  // The runner finds nothing to claim while the job is held.
  o.token = runner_token;
  auto w = Worker::open(o);
  ASSERT_TRUE(w) << w.error().message;
  auto none = (*w)->run_once();
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_FALSE(*none);
  auto sub = server::http_get(svc->url(), "/api/submissions/" + up->body["id"].dump());
  EXPECT_EQ(sub->body["jobs"][0]["held"], true);

  // A maintainer releases it; the runner grades it.
  auto rel = server::http_post_json(svc->url(), "/api/jobs/" + std::to_string(job) + "/release", nullptr, mia);
  ASSERT_TRUE(rel);
  ASSERT_EQ(rel->status, 200) << rel->text;
  auto r = (*w)->run_once();
  ASSERT_TRUE(r && *r) << (r ? "nothing claimed" : r.error().message);
  EXPECT_EQ((*r)->job_id, job);
  EXPECT_TRUE((*r)->completed);
  // Graded and accepted: the incumbent is forty float64 softmaxes, which no
  // loaded CPU brings within the bar of one (WorkerTest.AFasterCorrect... too).
  ASSERT_EQ((*r)->outcome, store::Outcome::accepted) << ((*r)->reasons.empty() ? "" : (*r)->reasons[0]);
  auto j = state->get_job(job);
  EXPECT_EQ(j->state, store::to_state((*r)->outcome));
  EXPECT_EQ(j->released_by, "mia");
  EXPECT_EQ(j->lease_owner.substr(16), "/test-worker");  // "<runner token id>/<worker id>"
  auto s = state->get_submission(j->submission_id);
  EXPECT_EQ(s->verdict["outcome"], store::to_string(store::to_state((*r)->outcome))) << s->verdict.dump();
  auto ev = repo->read_job_evidence(std::to_string(job));  // uploaded through the API
  ASSERT_TRUE(ev);
  EXPECT_TRUE(ev->count("benchmark_output.json"));
  EXPECT_EQ((*r)->evidence_commit, *repo->head("refs/jobs/" + std::to_string(job)));
  EXPECT_NE(head(), before);
  EXPECT_EQ((*r)->accepted_commit, head());
  EXPECT_EQ(*repo->read_file(std::string(kKernel) + "/src/kernel.py"), kFast);
  EXPECT_EQ((*repo->history(kKernel, 1))[0].author.name, "ola");
}

// A pull request through the whole path: a member's submission to someone
// else's route waits held (PullRequest); the route's owner merges it; a runner
// grades it through the API and, accepted, it lands on the route's branch.
TEST_F(ApiModeTest, APullRequestMergedByTheRoutesOwnerIsGradedOnTheRoute) {
  ASSERT_TRUE(state->add_user("ann", store::Role::member));
  ASSERT_TRUE(state->add_user("bob", store::Role::member));
  const std::string ann = token("ann", store::TokenKind::person, ""), bob = token("bob", store::TokenKind::person, "");
  ASSERT_TRUE(state->ensure_route("ann-fast", "ann"));
  auto tgz = package::package_tarball_bytes(package_tree(kFast), kKernel);
  ASSERT_TRUE(tgz);
  auto up = server::upload_submission(svc->url(),
                                      {{"kernel_id", kKernel}, {"package_filename", "p.tar.gz"}, {"route", "ann-fast"},
                                       {"pull_request", "true"}, {"optimization_summary", "fused softmax"}},
                                      *tgz, "p.tar.gz", {}, 60, bob);
  ASSERT_TRUE(up);
  ASSERT_EQ(up->status, 202) << up->text;
  EXPECT_EQ(up->body["hold_reason"], "PullRequest");
  const std::int64_t id = up->body["id"], job = up->body["job_id"];

  o.token = runner_token;
  auto w = Worker::open(o);
  ASSERT_TRUE(w) << w.error().message;
  auto none = (*w)->run_once();
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_FALSE(*none) << "a pull request is not graded before its merge";

  auto mine = server::http_post_json(svc->url(), fmt::format("/api/pulls/{}/merge", id), nullptr, bob);
  EXPECT_EQ(mine->status, 403) << "its author cannot merge it: " << mine->text;
  auto merged = server::http_post_json(svc->url(), fmt::format("/api/pulls/{}/merge", id), nullptr, ann);
  ASSERT_EQ(merged->status, 200) << merged->text;
  EXPECT_EQ(merged->body["job"]["held"], false);

  auto r = (*w)->run_once();
  ASSERT_TRUE(r && *r) << (r ? "nothing claimed" : r.error().message);
  EXPECT_EQ((*r)->job_id, job);
  ASSERT_EQ((*r)->outcome, store::Outcome::accepted) << ((*r)->reasons.empty() ? "" : (*r)->reasons[0]);
  auto ev = repo->read_job_evidence(std::to_string(job));
  ASSERT_TRUE(ev);
  EXPECT_NE(ev->at("check.json").find("\"route\": \"ann-fast\""), std::string::npos) << ev->at("check.json");
  EXPECT_EQ((*r)->accepted_commit, *repo->head("refs/heads/routes/ann-fast"));
  EXPECT_EQ(*repo->read_file(std::string(kKernel) + "/src/kernel.py", "refs/heads/routes/ann-fast"), kFast);
  EXPECT_EQ((*repo->history(kKernel, 1, "refs/heads/routes/ann-fast"))[0].author.name, "bob");
}

// Users' batch jobs (jobs/batch_run.hpp): a real script in the real sandbox,
// its submit directory the repository at HEAD as sbatch sends it (`git
// archive HEAD` of a clone), the script beside it, its result a commit on
// refs/jobs/<id>.
class BatchWorkerTest : public WorkerTest {
 protected:
  // Queues `script` (as job.sbatch at the top of the submit directory) the way the server does.
  store::BatchJob sbatch(const std::string& script, int time_s = 600) {
    static int n = 0;
    const std::string dir = root / ("submit-" + std::to_string(++n));
    const std::string tarball = paths.uploads() + "/batch-" + std::to_string(n) + ".tar.gz";
    std::filesystem::create_directories(dir);
    EXPECT_EQ(store::testing::sh("git -C " + store::testing::quote(paths.repo()) + " archive HEAD | tar -x -C " +
                                 store::testing::quote(dir)).rc, 0);
    EXPECT_EQ(store::testing::sh("tar -czf " + store::testing::quote(tarball) + " -C " + store::testing::quote(dir) +
                                 " .").rc, 0);
    store::NewBatch b;
    b.owner = "alice";
    b.name = "job.sbatch";
    b.script = "job.sbatch";
    b.script_text = script;
    b.partition = "main";
    b.time_s = time_s;
    b.cpus = 2;
    b.memory_mb = 2048;
    b.base_commit = head();
    b.package_path = tarball;
    b.sha256 = std::string(64, 'b');
    auto made = state->create_batch(b);
    EXPECT_TRUE(made) << (made ? "" : made.error().message);
    return *made;
  }
  std::string show(const std::string& spec) {
    return store::testing::git(paths.repo(), "show " + store::testing::quote(spec)).out;
  }
};

TEST_F(BatchWorkerTest, TheScriptRunsInItsSubmitDirectoryAndWhatItLeavesIsOneCommitOnItsBase) {
  const std::string base = head();
  auto b = sbatch("#!/bin/bash\n#SBATCH --time=00:05:00\necho \"hello from job $SLURM_JOB_ID on $SLURM_CPUS_PER_TASK "
                  "CPUs in $(pwd)\"\necho '# tuned by a batch job' >> cpu/softmax/tiny/src/kernel.py\n"
                  "echo to-stderr >&2\nif getent hosts example.com >/dev/null 2>&1 || ping -c1 -W1 1.1.1.1 >/dev/null "
                  "2>&1; then echo NETWORK; fi\n");
  auto rep = run_one();
  EXPECT_EQ(rep.outcome, store::Outcome::accepted) << (rep.reasons.empty() ? "" : rep.reasons[0]);
  EXPECT_TRUE(rep.completed);
  auto after = state->get_batch(b.job.id);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->end_state, "COMPLETED");
  EXPECT_EQ(after->exit_code, 0);
  EXPECT_EQ(after->job.state, store::State::accepted);
  ASSERT_EQ(after->result_commit.size(), 40u);
  EXPECT_EQ(head(), base) << "a batch job never moves main";
  const std::string out_name = fmt::format("slurm-{}.out", b.job.id);
  const std::string out = show(after->result_commit + ":" + out_name);
  EXPECT_NE(out.find(fmt::format("hello from job {} on 2 CPUs in /kzoo/work", b.job.id)), std::string::npos) << out;
  EXPECT_NE(out.find("to-stderr"), std::string::npos) << out;
  EXPECT_EQ(out.find("NETWORK"), std::string::npos) << "the sandbox has no network";
  // One commit on the base; exactly what the job changed and its output differ.
  EXPECT_EQ(store::testing::git(paths.repo(), "rev-parse " + after->result_commit + "^").out, base + "\n");
  EXPECT_EQ(store::testing::git(paths.repo(), "rev-parse refs/jobs/" + std::to_string(b.job.id)).out,
            after->result_commit + "\n");
  auto diff = store::testing::git(paths.repo(), "diff --name-only " + base + " " + after->result_commit).out;
  EXPECT_EQ(diff, std::string("cpu/softmax/tiny/src/kernel.py\n") + out_name + "\n");
  EXPECT_NE(show(after->result_commit + ":cpu/softmax/tiny/src/kernel.py").find("# tuned by a batch job"),
            std::string::npos);
  EXPECT_NE(store::testing::git(paths.repo(), "show -s --format=%B " + after->result_commit).out.find("COMPLETED"),
            std::string::npos);
}

TEST_F(BatchWorkerTest, ATimeLimitEndsTheJobAsTimeoutWithSlurmsLine) {
  auto b = sbatch("#!/bin/bash\necho started\nsleep 120\necho never\n", 2);
  const auto t0 = std::chrono::steady_clock::now();
  auto rep = run_one();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_EQ(rep.outcome, store::Outcome::rejected);
  auto after = state->get_batch(b.job.id);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->end_state, "TIMEOUT");
  EXPECT_EQ(after->job.state, store::State::rejected);
  const std::string out = show(after->result_commit + fmt::format(":slurm-{}.out", b.job.id));
  EXPECT_NE(out.find("started"), std::string::npos) << out;
  EXPECT_EQ(out.find("never"), std::string::npos) << out;
  EXPECT_NE(out.find(fmt::format("*** JOB {} ON", b.job.id)), std::string::npos) << out;
  EXPECT_NE(out.find("DUE TO TIME LIMIT ***"), std::string::npos) << out;
}

TEST_F(BatchWorkerTest, AFailingScriptIsFailedWithItsExitCode) {
  auto b = sbatch("#!/bin/bash\necho about to fail\nexit 3\n");
  auto rep = run_one();
  EXPECT_EQ(rep.outcome, store::Outcome::rejected);
  auto after = state->get_batch(b.job.id);
  EXPECT_EQ(after->end_state, "FAILED");
  EXPECT_EQ(after->exit_code, 3);
}

TEST_F(BatchWorkerTest, ScancelStopsARunningJobWithinSecondsAndRecordsNothing) {
  auto b = sbatch("#!/bin/bash\necho started\nsleep 120\n");
  std::optional<JobReport> rep;
  std::thread worker([&] { rep = run_one(); });
  for (int i = 0; i < 200 && state->get_batch(b.job.id)->job.state != store::State::running; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(state->cancel_batch(b.job.id, "scancel"));
  worker.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
  ASSERT_TRUE(rep);
  EXPECT_FALSE(rep->completed);
  EXPECT_FALSE(rep->retried) << "a stopped script is the store's cancel, not the runner's trouble";
  auto after = state->get_batch(b.job.id);
  EXPECT_EQ(after->end_state, "CANCELLED");
  EXPECT_TRUE(after->result_commit.empty());
}

}  // namespace
}  // namespace kzoo::worker
