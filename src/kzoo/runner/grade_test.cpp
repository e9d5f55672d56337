// Grading's trust decisions, driven by a tiny fake judge (a benchmark.py
// written by the test) in a real sandbox, so they do not depend on the real
// judge: only a document signed with the run's secret seed counts; anything
// else printed on the pipes is forged, broken, or a failure with its stderr.
#include "kzoo/runner/grade.hpp"

#include <algorithm>
#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kzoo/package/tarball.hpp"
#include "kzoo/runner/signature.hpp"
#include "kzoo/runner/test_support.hpp"
#include "kzoo/runner/warm_judge.hpp"

namespace kzoo::runner {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

// A benchmark.py that behaves as the judge would, or misbehaves as told by
// MODE. It prints the document, then signs it on its verdict channel.
const char* kFakeJudge = R"PY(import hashlib, hmac, json, os, sys, time
MODE = %MODE%
key = b''
fd = os.environ.get('KZOO_SEED_FD')
if fd is not None:
    key = bytes.fromhex(os.read(int(fd), 4096).decode())
    assert os.read(int(fd), 4096) == b'', 'seed readable twice'
    os.close(int(fd))
hexseed = key.hex()
assert not hexseed or all(hexseed not in v for v in os.environ.values()), 'seed in env'
assert not hexseed or hexseed.encode() not in open('/proc/self/cmdline', 'rb').read(), 'seed in argv'
doc = {'schema_version': '1', 'kernel_id': os.environ.get('KZOO_KERNEL_ID', '?'),
       'ran_at': '2026-11-29T12:00:00Z', 'runner_id': os.environ.get('KZOO_RUNNER_ID', '?'), 'arch': 'cpu',
       'overall': {'accept': MODE != 'reject', 'accept_reason': 'fake judge says ' + MODE, 'build_ok': True},
       'cases': [{'test_case_id': 'c1', 'status': 'ok' if MODE != 'reject' else 'incorrect',
                  'correct': MODE != 'reject', 'metrics': {'latency_us': 12.5}, 'samples': 10, 'spread': 0.01,
                  'gates': {'roofline': {'value': 12.5, 'limit': 1.0, 'passed': True}}}]}
if MODE == 'bad-schema':
    del doc['cases']
if MODE == 'other-kernel':
    doc['kernel_id'] = 'someone/else'
if MODE == 'hang':
    time.sleep(1000)
if MODE == 'crash':
    print('Traceback: the judge fell over', file=sys.stderr)
    sys.exit(1)
out = (json.dumps(doc) + '\n').encode()
if MODE == 'two-docs':
    out = out + out
signed = out
if MODE == 'altered':
    doc['overall']['accept_reason'] = 'altered'
    out = (json.dumps(doc) + '\n').encode()
if MODE == 'wrong-key':
    key = b'\0' * 32
sys.stdout.buffer.write(out)
sys.stdout.flush()
vfd = int(os.environ['KZOO_VERDICT_FD'])
line = 'kzoo-judge-signature: ' + hmac.new(key, signed, hashlib.sha256).hexdigest() + '\n'
if MODE == 'signed-on-stderr':
    print(line, end='', file=sys.stderr)
elif MODE != 'unsigned':
    os.write(vfd, line.encode())
if MODE == 'forged-tail':
    os.write(vfd, ('kzoo-judge-signature: ' + '0' * 64 + '\n').encode())
os.close(vfd)
if MODE == 'late-noise':
    # What torch prints at interpreter exit after CUDA IPC, once the judge has signed.
    print('[W CudaIPCTypes.cpp:16] Producer process has been terminated before all shared CUDA tensors released.',
          file=sys.stderr)
if MODE == 'judge-error':
    print('Traceback (most recent call last): the judge itself fell over', file=sys.stderr)
    sys.exit(3)
sys.exit(0 if doc['overall']['accept'] else 1)
)PY";

std::string fake_judge(const std::string& mode) {
  std::string s = kFakeJudge;
  s.replace(s.find("%MODE%"), 6, "'" + mode + "'");
  return s;
}

class HarnessStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::bwrap_unusable_reason(); !why.empty()) {
      GTEST_SKIP() << why;
    }
    w.root = dir.path() + "/w";
    w.harness_dir = w.root + "/.kernel_package";
    w.src_dir = w.root + "/src";
    w.task_file = w.root + "/.kzoo/task.json";
    w.run_dir = w.root + "/.kzoo/run";
    testing::write_file(w.task_file, "{}");
    testing::write_file(w.src_dir + "/kernel.py", "pass\n");
    std::filesystem::create_directories(w.run_dir);
  }

  GradeOutcome run_mode(const std::string& mode, std::chrono::milliseconds limit = std::chrono::seconds(60)) {
    testing::write_file(w.harness_dir + "/benchmark.py", fake_judge(mode));
    auto seed = make_seed();
    EXPECT_TRUE(seed.has_value());
    SandboxSpec spec;
    spec.argv = {"/usr/bin/python3"};
    spec.wall_limit = limit;
    spec.max_pids = 64;
    auto r = run_harness_step(w, "benchmark.py", {{"KZOO_KERNEL_ID", "demo/fake"}, {"KZOO_RUNNER_ID", "test"}},
                              *seed, spec, {});
    if (!r) {
      ADD_FAILURE() << r.error().message;
      return {};
    }
    return verify_benchmark_output(*r, *seed, "demo/fake");
  }

  TempDir dir;
  Workdir w;
};

TEST_F(HarnessStepTest, ASignedAcceptingDocumentIsAccepted) {
  auto g = run_mode("accept");
  EXPECT_EQ(g.status, GradeStatus::accepted) << g.reason << g.stderr_tail;
  EXPECT_EQ(g.document["kernel_id"], "demo/fake");
  EXPECT_EQ(g.reason, "fake judge says accept");
  EXPECT_THAT(g.stderr_tail, Not(HasSubstr(std::string(kSignaturePrefix))));
}

TEST_F(HarnessStepTest, ASignedRejectingDocumentIsRejectedWithTheJudgesReason) {
  auto g = run_mode("reject");
  EXPECT_EQ(g.status, GradeStatus::rejected);
  EXPECT_EQ(g.reason, "fake judge says reject");
  EXPECT_TRUE(g.document.is_object());
}

TEST_F(HarnessStepTest, TextOnStderrAfterTheJudgeSignedChangesNothing) {
  auto g = run_mode("late-noise");
  EXPECT_EQ(g.status, GradeStatus::accepted) << g.reason << g.stderr_tail;
  EXPECT_THAT(g.stderr_tail, HasSubstr("Producer process has been terminated"));
}

TEST_F(HarnessStepTest, ASignatureOnStderrDoesNotCount) {
  // Anyone sharing stderr could print there; only the verdict channel is the judge's.
  auto g = run_mode("signed-on-stderr");
  EXPECT_EQ(g.status, GradeStatus::rejected);
  EXPECT_THAT(g.reason, HasSubstr("KZOO_VERDICT_FD"));
}

TEST_F(HarnessStepTest, TheJudgesOwnFailureIsAnErrorNeverARejection) {
  auto g = run_mode("judge-error");
  EXPECT_EQ(g.status, GradeStatus::error) << g.reason;
  EXPECT_THAT(g.reason, HasSubstr("infrastructure"));
  EXPECT_TRUE(g.document.is_object());
}

TEST_F(HarnessStepTest, AnUnsignedDocumentIsRejectedAsForged) {
  auto g = run_mode("unsigned");
  EXPECT_EQ(g.status, GradeStatus::rejected);
  EXPECT_THAT(g.reason, HasSubstr("signature line is missing"));
  EXPECT_TRUE(g.document.is_null());
}

TEST_F(HarnessStepTest, ASignatureUnderAnotherKeyIsRejectedAsForged) {
  auto g = run_mode("wrong-key");
  EXPECT_EQ(g.status, GradeStatus::rejected);
  EXPECT_THAT(g.reason, HasSubstr("forged"));
}

TEST_F(HarnessStepTest, ADocumentAlteredAfterSigningIsRejected) {
  auto g = run_mode("altered");
  EXPECT_EQ(g.status, GradeStatus::rejected);
  EXPECT_THAT(g.reason, HasSubstr("does not match"));
}

TEST_F(HarnessStepTest, AForgedSignatureLinePrintedAfterTheJudgesIsRejected) {
  auto g = run_mode("forged-tail");
  EXPECT_EQ(g.status, GradeStatus::rejected);
  EXPECT_THAT(g.reason, HasSubstr("forged"));
}

TEST_F(HarnessStepTest, TwoDocumentsOnStdoutAreAnError) {
  auto g = run_mode("two-docs");
  EXPECT_EQ(g.status, GradeStatus::error);
  EXPECT_THAT(g.reason, HasSubstr("not exactly one JSON document"));
}

TEST_F(HarnessStepTest, ASchemaInvalidDocumentIsAnErrorNamingTheViolation) {
  auto g = run_mode("bad-schema");
  EXPECT_EQ(g.status, GradeStatus::error);
  EXPECT_THAT(g.reason, HasSubstr("benchmark_output"));
  EXPECT_TRUE(has_rule(g.violations, "schema.required"));
}

TEST_F(HarnessStepTest, ADocumentForAnotherKernelIsAnError) {
  auto g = run_mode("other-kernel");
  EXPECT_EQ(g.status, GradeStatus::error);
  EXPECT_THAT(g.reason, HasSubstr("someone/else"));
}

TEST_F(HarnessStepTest, AHangingRunIsKilledAndRejectedAsTimedOut) {
  auto g = run_mode("hang", std::chrono::seconds(2));
  EXPECT_EQ(g.status, GradeStatus::rejected);
  EXPECT_THAT(g.reason, HasSubstr("wall-clock limit"));
}

TEST_F(HarnessStepTest, AJudgeThatFailsWithoutOutputIsRejectedWithItsStderr) {
  // Submitted code can kill the judge (same uid): no signed result is never
  // better than a rejection.
  auto g = run_mode("crash");
  EXPECT_EQ(g.status, GradeStatus::rejected);
  EXPECT_THAT(g.reason, HasSubstr("exited with status 1"));
  EXPECT_THAT(g.reason, HasSubstr("Traceback: the judge fell over"));
}

TEST(Seed, Is32FreshRandomBytes) {
  auto a = make_seed(), b = make_seed();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
}

TEST(GradeStatusExitCodes, FollowTheCliConvention) {
  EXPECT_EQ(exit_code(GradeStatus::accepted), 0);
  EXPECT_EQ(exit_code(GradeStatus::rejected), 1);
  EXPECT_EQ(exit_code(GradeStatus::error), 2);
}

}  // namespace
}  // namespace kzoo::runner

namespace kzoo::runner {
namespace {

// grade() end to end with a fake judge package on PYTHONPATH: it signs an
// accepting document only if build_test_env.py ran and the trusted harness
// could not be modified from inside the run.
const char* kFakeEntry = R"PY(import hashlib, hmac, json, os, sys
def build_test_env():
    os.makedirs('.kzoo/run', exist_ok=True)
    open('.kzoo/run/built', 'w').write('1')
    return 0
def run_package_benchmark(metas):
    fd = int(os.environ['KZOO_SEED_FD'])
    key = bytes.fromhex(os.read(fd, 4096).decode())
    os.close(fd)
    try:
        open('.kernel_package/benchmark.py', 'a').write('# tampered')
        tampered = True
    except OSError:
        tampered = False
    ok = os.path.exists('.kzoo/run/built') and not tampered and os.path.exists('src/kernel.py')
    doc = {'schema_version': '1', 'kernel_id': os.environ['KZOO_KERNEL_ID'], 'ran_at': '2026-11-29T12:00:00Z',
           'runner_id': os.environ['KZOO_RUNNER_ID'], 'arch': os.environ['KZOO_DEVICE'],
           'overall': {'accept': ok, 'accept_reason': 'fake: ' + ('ok' if ok else 'tampered or not built') +
                                                      (' (warm)' if os.environ.get('KZOO_WARM_RAN') else ''),
                       'build_ok': True},
           'cases': [{'test_case_id': m['test_case_id'], 'status': 'ok', 'correct': True, 'metrics': {'t_us': 1.0}}
                     for m in metas]}
    out = (json.dumps(doc) + '\n').encode()
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    vfd = int(os.environ['KZOO_VERDICT_FD'])
    os.write(vfd, ('kzoo-judge-signature: ' + hmac.new(key, out, hashlib.sha256).hexdigest() + '\n').encode())
    os.close(vfd)
    sys.exit(0 if ok else 1)
)PY";

// The warm judge's side of runner/warm_judge.hpp, as kzoo_judge/warm.py keeps it: ready
// before the job, then the job's environment and seed from the control socket, then the
// trusted benchmark.py as __main__. It refuses a job whose options say "refuse".
const char* kFakeWarm = R"PY(import json, os, runpy, sys
if os.path.exists('/kzoo/judge/EXIT_AT_START'):
    sys.exit(0)
fd = int(os.environ.pop('KZOO_CONTROL_FD'))
print('fake warm: ready', file=sys.stderr, flush=True)
raw = b''
while True:
    b = os.read(fd, 65536)
    if not b:
        break
    raw += b
if not raw:
    sys.exit(0)
msg = json.loads(raw)
if json.loads(msg['env'].get('KZOO_OPTIONS', '{}')).get('refuse'):
    print('kzoo-judge: warm: refusing the run: told to', file=sys.stderr)
    sys.exit(4)
os.environ.update(msg['env'])
os.environ['KZOO_WARM_RAN'] = '1'
r, w = os.pipe()
os.write(w, msg['seed'].encode())
os.close(w)
os.environ['KZOO_SEED_FD'] = str(r)
sys.argv = ['.kernel_package/benchmark.py']
runpy.run_path('.kernel_package/benchmark.py', run_name='__main__')
)PY";

const char* kDesc = R"(schema_version: "1"
name: fake-kernel
category: {arch: any, op_class: elementwise, sub_class: scale, quant: fp32}
summary: A package for grading tests
description: Exercises kzoo grade with a fake judge.
io_signature:
  - {name: x, direction: in, dtype: float32, shape: [N]}
  - {name: y, direction: out, dtype: float32, shape: [N]}
quantization: {scheme: none}
reference_sources:
  - {kind: task, ref: faketask}
)";

const char* kBenchmark = R"(KERNEL_ZOO_TEST_CASE_METAS = [
    {"test_case_id": "n1024", "params": {"workload": "w", "shape": {"N": 1024}},
     "primary_metric": "t_us", "metrics": [{"name": "t_us", "unit": "us", "direction": "lower"}],
     "tolerance": {"correctness_atol": 0.0, "correctness_rtol": 0.01}},
]
if __name__ == "__main__":
    from kzoo_judge.entry import run_package_benchmark
    run_package_benchmark(KERNEL_ZOO_TEST_CASE_METAS)
)";

void write_package(const std::string& dir, const std::string& kernel_id) {
  testing::write_file(dir + "/.kernel_package/desc.yaml", kDesc);
  testing::write_file(dir + "/.kernel_package/bench_result.yaml",
                      "schema_version: \"1\"\nkernel_id: " + kernel_id + "\ncases: []\n");
  testing::write_file(dir + "/.kernel_package/build_test_env.py",
                      "from kzoo_judge.entry import build_test_env\nraise SystemExit(build_test_env())\n");
  testing::write_file(dir + "/.kernel_package/benchmark.py", kBenchmark);
  testing::write_file(dir + "/src/kernel.py", "def kernel(x):\n    return x * 2\n");
}

class GradeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::bwrap_unusable_reason(); !why.empty()) {
      GTEST_SKIP() << why;
    }
    testing::write_file(root / "judge/kzoo_judge/__init__.py", "");
    testing::write_file(root / "judge/kzoo_judge/entry.py", kFakeEntry);
    testing::write_file(root / "judge/kzoo_judge/warm.py", kFakeWarm);
    testing::write_file(root / "catalog/tasks/faketask/task.json", "{\"name\": \"faketask\"}");
    testing::write_file(root / "catalog/kernel_data/.kernel_data", "");
    write_package(root / "catalog/kernel_data/demo/fake", "demo/fake");
    testing::write_file(root / "sub/.kernel_data", "");
    o.catalog_dir = root / "catalog";
    o.judge_dir = root / "judge";
    o.timeout = std::chrono::seconds(120);
    o.memory_bytes = 2ull << 30;
  }
  TempDir root;
  GradeOptions o;
};

TEST_F(GradeTest, RunsTheCatalogsTrustedHarnessNotTheSubmissions) {
  std::string pkg = root / "sub/demo/fake";
  write_package(pkg, "demo/fake");
  // The submission's own harness forges an accepting, unsigned document.
  testing::write_file(pkg + "/.kernel_package/benchmark.py",
                      std::string(kBenchmark) + "print('{\"forged\": true}')\n");
  o.package_path = pkg;
  auto g = grade(o);
  EXPECT_EQ(g.status, GradeStatus::accepted) << g.reason << "\n" << g.stderr_tail;
  EXPECT_EQ(g.kernel_id, "demo/fake");
  EXPECT_EQ(g.document["cases"][0]["test_case_id"], "n1024");
  EXPECT_THAT(::testing::PrintToString(g.warnings), HasSubstr("differs from the repository's"));
  EXPECT_TRUE(g.workdir.empty());
}

TEST_F(GradeTest, APackageOutsideTheCatalogRunsItsOwnHarnessWithAWarning) {
  std::string pkg = root / "sub/other/kernel";
  write_package(pkg, "other/kernel");
  o.package_path = pkg;
  o.keep_workdir = true;
  auto g = grade(o);
  EXPECT_EQ(g.status, GradeStatus::accepted) << g.reason << "\n" << g.stderr_tail;
  EXPECT_THAT(::testing::PrintToString(g.warnings), HasSubstr("untrusted harness: local run only"));
  ASSERT_FALSE(g.workdir.empty());
  EXPECT_EQ(testing::read_file(g.workdir + "/.kzoo/run/built"), "1");
  EXPECT_EQ(testing::read_file(g.workdir + "/.kernel_package/benchmark.py"), kBenchmark);
}

TEST_F(GradeTest, ATarballIsGradedLikeItsDirectory) {
  std::string pkg = root / "sub/demo/fake";
  write_package(pkg, "demo/fake");
  auto tree = package::read_package_dir(pkg);
  ASSERT_TRUE(tree.has_value()) << tree.error().message;
  ASSERT_TRUE(package::write_package_tarball(tree->tree, "demo/fake", root / "fake.tar.gz").has_value());
  o.package_path = root / "fake.tar.gz";
  auto g = grade(o);
  EXPECT_EQ(g.status, GradeStatus::accepted) << g.reason << "\n" << g.stderr_tail;
  EXPECT_EQ(g.kernel_id, "demo/fake");
}

TEST_F(GradeTest, APackageBreakingInspectionIsRejectedWithItsViolationsAndNeverRun) {
  std::string pkg = root / "sub/demo/fake";
  write_package(pkg, "demo/fake");
  testing::write_file(pkg + "/src/expected_output.pt", std::string("PK\x03\x04", 4) + std::string(64, '\0'));
  o.package_path = pkg;
  o.keep_workdir = true;
  auto g = grade(o);
  EXPECT_EQ(g.status, GradeStatus::rejected);
  EXPECT_FALSE(g.violations.empty());
  EXPECT_THAT(g.reason, HasSubstr("expected_output.pt"));
  EXPECT_TRUE(g.workdir.empty()) << "a workdir was laid out for a package that failed inspection";
}

TEST_F(GradeTest, AMissingTaskIsAnErrorThatSaysHowToFixIt) {
  std::string pkg = root / "sub/demo/fake";
  write_package(pkg, "demo/fake");
  o.package_path = pkg;
  o.catalog_dir = root / "nowhere";
  auto g = grade(o);
  EXPECT_EQ(g.status, GradeStatus::error);
  EXPECT_THAT(g.reason, HasSubstr("faketask"));
  EXPECT_THAT(g.reason, HasSubstr("--task"));
}

// A job laid out into the skeleton of a judge started ahead, graded through it.
struct WarmRun {
  GradeOutcome graded;
  std::vector<std::string> progress;
  bool said(std::string_view what) const {
    return std::any_of(progress.begin(), progress.end(), [&](const auto& l) { return l.find(what) != std::string::npos; });
  }
};

class WarmGradeTest : public GradeTest {
 protected:
  WarmRun run(WarmJudge* warm, const std::string& fresh_dir = "", std::chrono::seconds wait = std::chrono::seconds(0)) {
    WarmRun r;
    o.progress = [&r](std::string_view l) { r.progress.emplace_back(l); };
    auto harness = package::read_package_dir(root / "catalog/kernel_data/demo/fake");
    EXPECT_TRUE(harness.has_value());
    auto w = lay_out_run(fresh_dir.empty() ? warm : nullptr, fresh_dir.empty() ? "" : fresh_dir, harness->tree,
                         harness->tree, "{\"name\": \"faketask\"}");
    EXPECT_TRUE(w.has_value()) << w.error().message;
    if (!w) return r;
    std::this_thread::sleep_for(wait);
    r.graded = grade_workdir(*w, "demo/fake", o, warm);
    return r;
  }
};

TEST_F(WarmGradeTest, AJudgeStartedAheadRunsTheJobItIsHandedWithThatJobsSeed) {
  auto warm = WarmJudge::start(o, false);
  ASSERT_TRUE(warm.has_value()) << warm.error().message;
  auto r = run(warm->get());
  EXPECT_EQ(r.graded.status, GradeStatus::accepted) << r.graded.reason << "\n" << r.graded.stderr_tail;
  EXPECT_EQ(r.graded.reason, "fake: ok (warm)");  // signed with the hand-over's seed, verified by us
  EXPECT_TRUE(r.said("its judge started ahead"));
  EXPECT_THAT(r.graded.stderr_tail, HasSubstr("fake warm: ready"));  // what it said before the job is kept
  // It served its one run.
  EXPECT_FALSE(warm->get()->running());
  EXPECT_THAT(warm->get()->unfit(Workdir{warm->get()->skeleton()}, SandboxSpec{}, SandboxOptions{}),
              HasSubstr("served a run already"));
}

TEST_F(WarmGradeTest, ItsWallClockLimitCountsFromTheHandOverNotFromItsStart) {
  o.timeout = std::chrono::seconds(4);
  auto warm = WarmJudge::start(o, false);
  ASSERT_TRUE(warm.has_value()) << warm.error().message;
  auto r = run(warm->get(), "", std::chrono::seconds(6));  // idle longer than the limit before its job
  EXPECT_EQ(r.graded.status, GradeStatus::accepted) << r.graded.reason << "\n" << r.graded.stderr_tail;
  EXPECT_EQ(r.graded.reason, "fake: ok (warm)");
}

TEST_F(WarmGradeTest, AJobItRefusesRunsColdAsIfThereWereNone) {
  auto warm = WarmJudge::start(o, false);
  ASSERT_TRUE(warm.has_value()) << warm.error().message;
  o.judge_options = nlohmann::json{{"refuse", true}};
  auto r = run(warm->get());
  EXPECT_EQ(r.graded.status, GradeStatus::accepted) << r.graded.reason << "\n" << r.graded.stderr_tail;
  EXPECT_EQ(r.graded.reason, "fake: ok");
  EXPECT_TRUE(r.said("did not take the run (it refused the run: kzoo-judge: warm: refusing the run: told to)"));
}

TEST_F(WarmGradeTest, OneStartedOnAnotherWorkdirIsNotUsed) {
  auto warm = WarmJudge::start(o, false);
  ASSERT_TRUE(warm.has_value()) << warm.error().message;
  auto r = run(warm->get(), root / "elsewhere");
  EXPECT_EQ(r.graded.reason, "fake: ok") << r.graded.stderr_tail;
  EXPECT_TRUE(r.said("does not fit this run (it was started on"));
  EXPECT_TRUE(warm->get()->running());  // still there for a run that fits
}

TEST_F(WarmGradeTest, OneStartedInAnotherSandboxIsNotUsed) {
  auto warm = WarmJudge::start(o, false);
  ASSERT_TRUE(warm.has_value()) << warm.error().message;
  o.memory_bytes = 3ull << 30;
  auto r = run(warm->get());
  EXPECT_EQ(r.graded.reason, "fake: ok") << r.graded.stderr_tail;
  EXPECT_TRUE(r.said("does not fit this run (other limits)"));
}

TEST_F(WarmGradeTest, OneThatEndedBeforeItsJobIsNotUsed) {
  testing::write_file(root / "judge/EXIT_AT_START", "");
  auto warm = WarmJudge::start(o, false);
  ASSERT_TRUE(warm.has_value()) << warm.error().message;
  for (int i = 0; i < 100 && warm->get()->running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto r = run(warm->get());
  EXPECT_EQ(r.graded.status, GradeStatus::accepted) << r.graded.reason << "\n" << r.graded.stderr_tail;
  EXPECT_EQ(r.graded.reason, "fake: ok");
  EXPECT_TRUE(r.said("does not fit this run (it has ended)"));
}

TEST_F(WarmGradeTest, ItsDirectoryGoesWithIt) {
  std::string dir;
  {
    auto warm = WarmJudge::start(o, false);
    ASSERT_TRUE(warm.has_value()) << warm.error().message;
    dir = warm->get()->skeleton().root;
    EXPECT_TRUE(std::filesystem::is_directory(dir + "/.kzoo/incumbent/src"));
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(WarmMode, AutoIsOnForAGpuOnly) {
  EXPECT_TRUE(warm_wanted(WarmMode::auto_, "cuda"));
  EXPECT_FALSE(warm_wanted(WarmMode::auto_, "cpu"));
  EXPECT_TRUE(warm_wanted(WarmMode::on, "cpu"));
  EXPECT_FALSE(warm_wanted(WarmMode::off, "cuda"));
  EXPECT_FALSE(parse_warm_mode("yes").has_value());
  EXPECT_EQ(*parse_warm_mode("off"), WarmMode::off);
}

TEST_F(GradeTest, AnUnknownDeviceIsAnError) {
  o.package_path = root / "catalog/kernel_data/demo/fake";
  o.device = "tpu";
  EXPECT_EQ(grade(o).status, GradeStatus::error);
}

}  // namespace
}  // namespace kzoo::runner
