// The kernel_data repository, checked through the git CLI as well as through
// KernelRepo's own reads, so a libgit2 misuse cannot hide behind itself.
#include "kzoo/store/kernel_repo.hpp"

#include <sys/stat.h>

#include <atomic>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "kzoo/store/open_state.hpp"
#include "kzoo/store/pg_test_server.hpp"
#include "kzoo/store/repo_writer.hpp"
#include "kzoo/store/test_support.hpp"
#include "kzoo/util/test_prerequisite.hpp"

namespace kzoo::store {
namespace {

using testing::git;
using testing::TempDir;
using testing::write_file;

constexpr const char* kSoftmax = "cuda/reduction/softmax/fp32/softmax_eager";
constexpr const char* kGemm = "cuda/gemm/dense/bf16/gemm_eager";

// A catalog with two packages, each with the four harness files and sources.
void make_catalog(const std::filesystem::path& root) {
  write_file(root / ".kernel_data", "");
  for (std::string id : {kSoftmax, kGemm}) {
    auto pkg = root / id;
    write_file(pkg / ".kernel_package/desc.yaml", "name: " + id + "\n");
    write_file(pkg / ".kernel_package/bench_result.yaml", "schema_version: '1'\nkernel_id: " + id + "\ncases: []\n");
    write_file(pkg / ".kernel_package/build_test_env.py", "# trusted build\n");
    write_file(pkg / ".kernel_package/benchmark.py", "# trusted benchmark\n");
    write_file(pkg / "src/kernel.py", "def run(x):\n    return x\n");
    write_file(pkg / "src/helpers/util.py", "HELP = 1\n");
  }
}

package::PackageTree submission(std::initializer_list<std::pair<std::string, std::string>> files) {
  package::PackageTree t;
  for (auto& [p, c] : files) t.files.push_back({p, c});
  return t;
}

class KernelRepoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    make_catalog(tmp.path() / "catalog");
    auto r = KernelRepo::init_from_catalog(tmp / "catalog", tmp / "repo");
    ASSERT_TRUE(r) << r.error().message;
    repo.emplace(std::move(*r));
  }
  std::string show(const std::string& spec) { return git(tmp / "repo", "show " + testing::quote(spec)).out; }

  TempDir tmp;
  std::optional<KernelRepo> repo;
  Person alice{"alice", "alice@example.org"};
};

TEST_F(KernelRepoTest, InitCommitsEveryCatalogFileIntoABareRepositoryOnMain) {
  EXPECT_EQ(git(tmp / "repo", "rev-parse --is-bare-repository").out, "true\n");
  EXPECT_EQ(git(tmp / "repo", "symbolic-ref HEAD").out, "refs/heads/main\n");
  EXPECT_EQ(git(tmp / "repo", "rev-list --count main").out, "1\n");
  auto files = git(tmp / "repo", "ls-tree -r --name-only main");
  EXPECT_NE(files.out.find(".kernel_data\n"), std::string::npos) << "the root marker travels with the packages";
  EXPECT_NE(files.out.find(std::string(kGemm) + "/src/helpers/util.py\n"), std::string::npos);
  EXPECT_EQ(show(std::string("main:") + kSoftmax + "/.kernel_package/benchmark.py"), "# trusted benchmark\n");
  auto fsck = git(tmp / "repo", "fsck --strict");
  EXPECT_EQ(fsck.rc, 0) << fsck.out;
}

TEST_F(KernelRepoTest, InitKeepsTheExecutableBitAndSkipsInterpreterCaches) {
  TempDir t2;
  make_catalog(t2.path() / "cat");
  write_file(t2.path() / "cat" / kGemm / "src/build.sh", "#!/bin/sh\n");
  chmod((t2.path() / "cat" / kGemm / "src/build.sh").c_str(), 0755);
  write_file(t2.path() / "cat" / kGemm / "src/__pycache__/kernel.cpython-311.pyc", "\x0d\x0a");
  write_file(t2.path() / "cat" / kGemm / "src/stale.pyc", "\x0d\x0a");
  ASSERT_TRUE(KernelRepo::init_from_catalog(t2 / "cat", t2 / "repo"));
  auto tree = git(t2 / "repo", "ls-tree -r main").out;
  EXPECT_NE(tree.find("100755 blob"), std::string::npos) << tree;
  EXPECT_EQ(tree.find("pycache"), std::string::npos) << tree;
  EXPECT_EQ(tree.find(".pyc"), std::string::npos) << tree;
}

TEST(KernelRepoInit, RefusesAnExistingNonEmptyDirectory) {
  TempDir t;
  make_catalog(t.path() / "cat");
  write_file(t.path() / "repo/keep.txt", "mine");
  auto r = KernelRepo::init_from_catalog(t / "cat", t / "repo");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not an empty directory"), std::string::npos) << r.error().message;
  EXPECT_TRUE(std::filesystem::exists(t.path() / "repo/keep.txt")) << "nothing of the user's is touched";
}

TEST(KernelRepoInit, AcceptsAnEmptyExistingDirectory) {
  TempDir t;
  make_catalog(t.path() / "cat");
  std::filesystem::create_directories(t.path() / "repo");
  EXPECT_TRUE(KernelRepo::init_from_catalog(t / "cat", t / "repo"));
}

TEST(KernelRepoInit, RefusesACatalogWithoutTheRootMarker) {
  TempDir t;
  make_catalog(t.path() / "cat");
  std::filesystem::remove(t.path() / "cat/.kernel_data");
  auto r = KernelRepo::init_from_catalog(t / "cat", t / "repo");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find(".kernel_data"), std::string::npos) << r.error().message;
}

TEST(KernelRepoInit, RefusesSymlinksAndBadSegmentsNamingThePath) {
  TempDir t;
  make_catalog(t.path() / "cat");
  std::filesystem::create_symlink("/etc/passwd", t.path() / "cat" / kGemm / "src/passwd.py");
  auto r = KernelRepo::init_from_catalog(t / "cat", t / "repo");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("passwd.py"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("symlink"), std::string::npos) << r.error().message;

  TempDir t2;
  make_catalog(t2.path() / "cat");
  write_file(t2.path() / "cat" / kGemm / "src/my kernel.py", "x = 1\n");
  auto r2 = KernelRepo::init_from_catalog(t2 / "cat", t2 / "repo");
  ASSERT_FALSE(r2);
  EXPECT_NE(r2.error().message.find("\"my kernel.py\""), std::string::npos) << r2.error().message;
}

TEST_F(KernelRepoTest, ListsPackagesAsDirectoriesHoldingKernelPackage) {
  auto ids = repo->list_packages();
  ASSERT_TRUE(ids) << ids.error().message;
  EXPECT_EQ(*ids, (std::vector<std::string>{kGemm, kSoftmax}));
}

TEST_F(KernelRepoTest, ReadsAPackageAndOneFileAtHead) {
  auto pkg = repo->read_package(kSoftmax);
  ASSERT_TRUE(pkg) << pkg.error().message;
  std::vector<std::string> paths;
  for (auto& f : pkg->files) paths.push_back(f.path);
  EXPECT_EQ(paths, (std::vector<std::string>{".kernel_package/bench_result.yaml", ".kernel_package/benchmark.py",
                                             ".kernel_package/build_test_env.py", ".kernel_package/desc.yaml",
                                             "src/helpers/util.py", "src/kernel.py"}));
  EXPECT_EQ(pkg->dirs, (std::vector<std::string>{".kernel_package", "src", "src/helpers"}));
  EXPECT_EQ(pkg->files.back().content, "def run(x):\n    return x\n");

  auto f = repo->read_file(std::string(kGemm) + "/.kernel_package/benchmark.py");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ(*f, "# trusted benchmark\n");
}

TEST_F(KernelRepoTest, ReadsRefuseMissingPathsNonPackagesAndEscapes) {
  auto missing = repo->read_file(std::string(kGemm) + "/src/nope.py");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("nope.py"), std::string::npos);
  EXPECT_FALSE(repo->read_package("cuda/gemm")) << "a directory above a package is not a package";
  EXPECT_FALSE(repo->read_package("cuda/../cuda/gemm/dense/bf16/gemm_eager"));
  EXPECT_FALSE(repo->read_file("/etc/passwd"));
}

TEST_F(KernelRepoTest, AcceptReplacesSrcInFullAndKeepsTheServersHarnessAndBenchResult) {
  std::string before = *repo->head();
  auto sub = submission({
      {".kernel_package/benchmark.py", "print('forged result')\n"},
      {".kernel_package/bench_result.yaml", "cases: [{metrics_best: {speedup: 1000}}]\n"},
      {"src/kernel.py", "def run(x):\n    return x * 1\n"},
      {"src/new/fast.cu", "__global__ void k() {}\n"},
  });
  auto r = repo->accept(kSoftmax, sub, std::string("server: bench\n"), "Faster softmax\n\nsubmitter: alice", alice);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->parent, before);
  EXPECT_EQ(git(tmp / "repo", "rev-parse main").out, r->commit + "\n");
  EXPECT_EQ(git(tmp / "repo", "rev-parse main^").out, before + "\n");

  std::string pkg = std::string("main:") + kSoftmax;
  EXPECT_EQ(git(tmp / "repo", "ls-tree -r --name-only " + pkg + "/src").out, "kernel.py\nnew/fast.cu\n")
      << "src/helpers/util.py was not submitted, so it is gone";
  EXPECT_EQ(show(pkg + "/src/kernel.py"), "def run(x):\n    return x * 1\n");
  EXPECT_EQ(show(pkg + "/.kernel_package/benchmark.py"), "# trusted benchmark\n") << "submitted harness never lands";
  EXPECT_EQ(show(pkg + "/.kernel_package/bench_result.yaml"), "server: bench\n");
  EXPECT_EQ(show(pkg + "/.kernel_package/desc.yaml"), std::string("name: ") + kSoftmax + "\n");

  auto changed = git(tmp / "repo", "diff --name-only main^ main").out;
  std::istringstream lines(changed);
  for (std::string line; std::getline(lines, line);)
    EXPECT_EQ(line.rfind(kSoftmax, 0), 0u) << "accept touched another package: " << line;
  EXPECT_EQ(git(tmp / "repo", "log -1 --format=%an%n%ae%n%cn%n%s main").out,
            "alice\nalice@example.org\nkzoo\nFaster softmax\n");
  auto fsck = git(tmp / "repo", "fsck --strict");
  EXPECT_EQ(fsck.rc, 0) << fsck.out;
}

// A maintainer's pushed project files (docs/GIT.md): the pushed tree lands
// whole, as one commit on the head the pusher built on, and never over a
// commit they did not see.
TEST_F(KernelRepoTest, CommitTreeLandsThePushedTreeOnlyOnTheHeadItWasBuiltOn) {
  const std::string head = *repo->head();
  ASSERT_TRUE(repo->set_ref("refs/heads/pushed", head));
  auto pushed = repo->commit_files("pushed", {{"scienceslack.json", "{}\n"}, {"AGENTS.md", "# rules\n"}}, "rules", alice);
  ASSERT_TRUE(pushed) << pushed.error().message;
  auto c = repo->commit_tree("main", head, *pushed, "rules: a longer default time\n\nKzoo-Pushed: x", alice);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_FALSE(c->moved);
  EXPECT_EQ(c->parent, head);
  EXPECT_EQ(git(tmp / "repo", "rev-parse main").out, c->commit + "\n");
  EXPECT_EQ(git(tmp / "repo", "rev-parse main^{tree}").out, git(tmp / "repo", "rev-parse pushed^{tree}").out);
  EXPECT_EQ(git(tmp / "repo", "rev-parse main^").out, head + "\n") << "one commit on main's head, not the pushed history";
  EXPECT_EQ(git(tmp / "repo", "log -1 --format=%an%n%cn%n%s main").out, "alice\nkzoo\nrules: a longer default time\n");

  // Built on a head that is no longer main's: nothing is written.
  auto stale = repo->commit_tree("main", head, *pushed, "again", alice);
  ASSERT_TRUE(stale) << stale.error().message;
  EXPECT_TRUE(stale->moved);
  EXPECT_TRUE(stale->commit.empty());
  EXPECT_EQ(stale->parent, c->commit);
  EXPECT_EQ(git(tmp / "repo", "rev-parse main").out, c->commit + "\n");

  // Taken back by compare-and-swap, once.
  auto back = repo->move_branch("main", c->commit, head);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_TRUE(*back);
  auto again = repo->move_branch("main", c->commit, head);
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_FALSE(*again) << "main was no longer at the commit to take back";
  EXPECT_EQ(git(tmp / "repo", "rev-parse main").out, head + "\n");
  EXPECT_EQ(git(tmp / "repo", "fsck --strict").rc, 0);
}

TEST_F(KernelRepoTest, AcceptHandsTheCurrentBenchResultToTheUpdate) {
  std::string seen;
  auto r = repo->accept(
      kGemm, submission({{"src/kernel.py", "v2\n"}}),
      [&](const std::string& cur) -> Result<std::string> {
        seen = cur;
        return cur + "- round 2\n";
      },
      "round 2", alice);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(seen, std::string("schema_version: '1'\nkernel_id: ") + kGemm + "\ncases: []\n");
  EXPECT_EQ(*repo->read_file(std::string(kGemm) + "/.kernel_package/bench_result.yaml"), seen + "- round 2\n");
}

TEST_F(KernelRepoTest, AcceptOnlyOntoTheSourceItWasMeasuredAgainst) {
  auto keep = [](const std::string& cur) -> Result<std::string> { return cur; };
  const std::string measured = *repo->head();
  // Another kernel moving main does not matter: this kernel's source is the one measured.
  auto other = repo->accept(kGemm, submission({{"src/kernel.py", "gemm v2\n"}}), keep, "gemm v2", alice);
  ASSERT_TRUE(other) << other.error().message;
  auto a = repo->accept(kSoftmax, submission({{"src/kernel.py", "A\n"}}), keep, "A", alice, measured);
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_FALSE(a->incumbent_moved);
  EXPECT_EQ(a->parent, other->commit);
  // B was measured against the same old source, but A has replaced it since: nothing lands.
  auto b = repo->accept(kSoftmax, submission({{"src/kernel.py", "B\n"}}), keep, "B", alice, measured);
  ASSERT_TRUE(b) << b.error().message;
  EXPECT_TRUE(b->incumbent_moved);
  EXPECT_TRUE(b->commit.empty());
  EXPECT_EQ(b->parent, a->commit);
  EXPECT_EQ(*repo->head(), a->commit);
  EXPECT_EQ(show(std::string("main:") + kSoftmax + "/src/kernel.py"), "A\n");
  // Measured again against A's source, B lands on top of A.
  auto b2 = repo->accept(kSoftmax, submission({{"src/kernel.py", "B\n"}}), keep, "B", alice, a->commit);
  ASSERT_TRUE(b2) << b2.error().message;
  EXPECT_FALSE(b2->incumbent_moved);
  EXPECT_EQ(b2->parent, a->commit);
  // A commit id that does not exist is an error, not a silent accept.
  auto bad = repo->accept(kSoftmax, submission({{"src/kernel.py", "C\n"}}), keep, "C", alice, std::string(40, 'f'));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("measured at"), std::string::npos) << bad.error().message;
  EXPECT_EQ(*repo->head(), b2->commit);
}

TEST_F(KernelRepoTest, AcceptFailsWithoutCommittingWhenTheUpdateFails) {
  std::string before = *repo->head();
  auto r = repo->accept(
      kGemm, submission({{"src/kernel.py", "v2\n"}}),
      [](const std::string&) -> Result<std::string> { return fail("bench_result.yaml at HEAD is corrupt"); }, "x",
      alice);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "bench_result.yaml at HEAD is corrupt");
  EXPECT_EQ(*repo->head(), before);
}

TEST_F(KernelRepoTest, AcceptRefusesHostileOrMalformedRequests) {
  std::string before = *repo->head();
  auto ok_src = submission({{"src/kernel.py", "x\n"}});
  auto outside = repo->accept(kGemm, submission({{"src/kernel.py", "x\n"}, {"README.md", "hi\n"}}), "b", "m", alice);
  ASSERT_FALSE(outside);
  EXPECT_NE(outside.error().message.find("README.md"), std::string::npos) << outside.error().message;

  auto empty = repo->accept(kGemm, submission({{".kernel_package/desc.yaml", "x"}}), "b", "m", alice);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("no file under src/"), std::string::npos) << empty.error().message;

  auto dotgit = repo->accept(kGemm, submission({{"src/.GIT/config", "x"}}), "b", "m", alice);
  ASSERT_FALSE(dotgit);
  EXPECT_NE(dotgit.error().message.find(".GIT"), std::string::npos) << dotgit.error().message;

  auto dotdot = repo->accept(kGemm, submission({{"src/../../escape.py", "x"}}), "b", "m", alice);
  EXPECT_FALSE(dotdot);
  EXPECT_FALSE(repo->accept("cuda/gemm", ok_src, "b", "m", alice)) << "not a package";
  EXPECT_FALSE(repo->accept("cuda/nothing/here", ok_src, "b", "m", alice)) << "no such kernel";
  EXPECT_FALSE(repo->accept(kGemm, ok_src, "b", "m", Person{"eve <evil@x>", "e@x"})) << "forged identity";
  EXPECT_FALSE(repo->accept(kGemm, ok_src, "b", "  \n\n", alice)) << "empty message";
  EXPECT_EQ(*repo->head(), before) << "no refused request moved main";
}

TEST_F(KernelRepoTest, HistoryListsTheCommitsTouchingAKernelNewestFirst) {
  auto a1 = repo->accept(kSoftmax, submission({{"src/kernel.py", "1\n"}}), "b1\n", "softmax one", alice);
  auto g1 = repo->accept(kGemm, submission({{"src/kernel.py", "1\n"}}), "b1\n", "gemm one", alice);
  auto a2 = repo->accept(kSoftmax, submission({{"src/kernel.py", "2\n"}}), "b2\n", "softmax two", Person{"bob", ""});
  ASSERT_TRUE(a1 && g1 && a2);

  auto h = repo->history(kSoftmax);
  ASSERT_TRUE(h) << h.error().message;
  ASSERT_EQ(h->size(), 3u) << "two accepts and the import";
  EXPECT_EQ((*h)[0].id, a2->commit);
  EXPECT_EQ((*h)[0].author.name, "bob");
  EXPECT_EQ((*h)[0].message, "softmax two\n");
  EXPECT_EQ((*h)[1].id, a1->commit);
  EXPECT_GT((*h)[0].time, 1700000000);

  std::string cli = git(tmp / "repo", std::string("log --format=%H main -- ") + kSoftmax).out;
  std::string mine;
  for (auto& c : *h) mine += c.id + "\n";
  EXPECT_EQ(mine, cli) << "same answer as git log -- <path>";

  auto limited = repo->history(kGemm, 1);
  ASSERT_TRUE(limited);
  ASSERT_EQ(limited->size(), 1u);
  EXPECT_EQ((*limited)[0].id, g1->commit);
}

TEST_F(KernelRepoTest, EvidenceGoesToItsOwnRefAndNeverToMain) {
  std::string main_before = *repo->head();
  auto e1 = repo->record_job_evidence("42", {{"benchmark_output.json", "{\"ok\":true}\n"},
                                             {"stderr.log", std::string("log with \xff bytes\n")}});
  ASSERT_TRUE(e1) << e1.error().message;
  auto e2 = repo->record_job_evidence("42", {{"benchmark_output.json", "{\"ok\":false}\n"}, {"sandbox.json", "{}"}});
  ASSERT_TRUE(e2) << e2.error().message;

  EXPECT_EQ(*repo->head(), main_before);
  EXPECT_EQ(git(tmp / "repo", "rev-parse refs/jobs/42").out, *e2 + "\n");
  EXPECT_EQ(git(tmp / "repo", "rev-parse refs/jobs/42^").out, *e1 + "\n") << "second evidence parented on the first";
  EXPECT_NE(git(tmp / "repo", "rev-parse --verify -q refs/jobs/42~2").rc, 0) << "the first evidence is parentless";
  EXPECT_EQ(git(tmp / "repo", "ls-tree --name-only refs/jobs/42").out, "benchmark_output.json\nsandbox.json\n");
  EXPECT_EQ(git(tmp / "repo", "merge-base --is-ancestor refs/jobs/42 main").rc, 1) << "evidence is not on main";

  auto read = repo->read_job_evidence("42");
  ASSERT_TRUE(read) << read.error().message;
  EXPECT_EQ(read->at("benchmark_output.json"), "{\"ok\":false}\n");
  EXPECT_EQ(read->size(), 2u);
  auto fsck = git(tmp / "repo", "fsck --strict");
  EXPECT_EQ(fsck.rc, 0) << fsck.out;
}

TEST_F(KernelRepoTest, EvidenceRefusesBadJobIdsAndFileNames) {
  for (std::string id : std::vector<std::string>{"", "../heads/main", "a/b", "x.lock", "has space", std::string(129, 'a')})
    EXPECT_FALSE(repo->record_job_evidence(id, {{"a.json", "{}"}})) << id;
  EXPECT_FALSE(repo->record_job_evidence("7", {}));
  EXPECT_FALSE(repo->record_job_evidence("7", {{"../x", "{}"}}));
  EXPECT_FALSE(repo->read_job_evidence("404"));
  EXPECT_NE(git(tmp / "repo", "show-ref").out.find("refs/heads/main"), std::string::npos);
  EXPECT_EQ(git(tmp / "repo", "for-each-ref refs/jobs").out, "") << "no refused call left a ref";
}

TEST_F(KernelRepoTest, ConcurrentAcceptsToOneKernelAllLandInALinearHistory) {
  constexpr int kThreads = 8;
  std::string start = *repo->head();
  std::vector<std::thread> threads;
  std::vector<Result<AcceptResult>> results(kThreads, fail("not run"));
  std::atomic<bool> go{false};
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      KernelRepo mine = *KernelRepo::open(tmp / "repo");  // each thread its own object too
      while (!go) std::this_thread::yield();
      results[i] = mine.accept(
          kSoftmax, submission({{"src/kernel.py", "thread " + std::to_string(i) + "\n"}}),
          [i](const std::string& cur) -> Result<std::string> { return cur + "- t" + std::to_string(i) + "\n"; },
          "accept from thread " + std::to_string(i), Person{"worker" + std::to_string(i), ""});
    });
  }
  go = true;
  for (auto& t : threads) t.join();
  int retried = 0;
  for (int i = 0; i < kThreads; ++i) {
    ASSERT_TRUE(results[i]) << results[i].error().message;
    retried += results[i]->attempts > 1;
  }
  EXPECT_EQ(git(tmp / "repo", "rev-list --count " + start + "..main").out, std::to_string(kThreads) + "\n");
  EXPECT_EQ(git(tmp / "repo", "rev-list --merges --count main").out, "0\n");
  // Linear: every commit after the start has exactly one parent, the one before it.
  auto parents = git(tmp / "repo", "log --format=%P " + start + "..main").out;
  std::istringstream ps(parents);
  for (std::string line; std::getline(ps, line);) EXPECT_EQ(line.size(), 40u) << "one parent: " << line;
  // None lost: every thread's commit is on main, and every update is in the bench_result.
  for (int i = 0; i < kThreads; ++i)
    EXPECT_EQ(git(tmp / "repo", "merge-base --is-ancestor " + results[i]->commit + " main").rc, 0) << i;
  std::string bench = *repo->read_file(std::string(kSoftmax) + "/.kernel_package/bench_result.yaml");
  for (int i = 0; i < kThreads; ++i) EXPECT_NE(bench.find("- t" + std::to_string(i) + "\n"), std::string::npos) << i;
  auto fsck = git(tmp / "repo", "fsck --strict");
  EXPECT_EQ(fsck.rc, 0) << fsck.out;
  RecordProperty("retried_accepts", retried);
}

// Several hosts write through one PostgreSQL advisory lock (repo_writer.hpp):
// eight writers, each with its own lock connection as separate processes
// would have, never race -- each lands on its first attempt.
TEST_F(KernelRepoTest, WritersWithTheStatesLockTakeTurnsAndNeverRace) {
  KZOO_REQUIRE_PREREQUISITE(testing::pg_unavailable());
  const std::string url = testing::pg_fresh_database();
  ASSERT_FALSE(url.empty());
  constexpr int kWriters = 8;
  std::string start = *repo->head();
  std::vector<std::thread> threads;
  std::vector<Result<AcceptResult>> results(kWriters, fail("not run"));
  std::atomic<bool> go{false};
  for (int i = 0; i < kWriters; ++i)
    threads.emplace_back([&, i] {
      auto mine = open_kernel_repo(tmp / "repo", url);
      if (!mine) return;
      while (!go) std::this_thread::yield();
      results[i] = mine->accept(
          kSoftmax, submission({{"src/kernel.py", "writer " + std::to_string(i) + "\n"}}),
          [i](const std::string& cur) -> Result<std::string> { return cur + "- w" + std::to_string(i) + "\n"; },
          "accept from writer " + std::to_string(i), Person{"writer" + std::to_string(i), ""});
    });
  go = true;
  for (auto& t : threads) t.join();
  for (int i = 0; i < kWriters; ++i) {
    ASSERT_TRUE(results[i]) << results[i].error().message;
    EXPECT_EQ(results[i]->attempts, 1) << "writer " << i << " raced another: the lock did not keep them apart";
  }
  EXPECT_EQ(git(tmp / "repo", "rev-list --count " + start + "..main").out, std::to_string(kWriters) + "\n");
  auto fsck = git(tmp / "repo", "fsck --strict");
  EXPECT_EQ(fsck.rc, 0) << fsck.out;
}

TEST_F(KernelRepoTest, AWriterWaitsWhileAnotherHostHoldsTheLock) {
  KZOO_REQUIRE_PREREQUISITE(testing::pg_unavailable());
  const std::string url = testing::pg_fresh_database();
  ASSERT_FALSE(url.empty());
  pqxx::connection other(url);  // another host's writer
  pqxx::nontransaction n(other);
  n.exec("SELECT pg_advisory_lock(" + std::to_string(kRepoWriterKey) + ")");
  auto mine = open_kernel_repo(tmp / "repo", url);
  ASSERT_TRUE(mine);
  const std::string head = *repo->head();
  std::atomic<bool> done{false};
  std::thread writer([&] {
    EXPECT_TRUE(mine->set_ref("refs/tags/checks", head));
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_FALSE(done) << "the ref moved while another host held the writer lock";
  EXPECT_NE(git(tmp / "repo", "rev-parse --verify -q refs/tags/checks").rc, 0);
  n.exec("SELECT pg_advisory_unlock(" + std::to_string(kRepoWriterKey) + ")");
  writer.join();
  EXPECT_TRUE(done);
  EXPECT_EQ(git(tmp / "repo", "rev-parse refs/tags/checks").out, head + "\n");
}

}  // namespace
}  // namespace kzoo::store
