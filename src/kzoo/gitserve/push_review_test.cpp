// The pushed-tree rules (push_review.hpp) on commits made by the real git
// CLI, and the proc-receive hook's two conversations (proc_receive.hpp):
// git's pkt-lines on one side, the server's JSON line on the other.
#include "kzoo/gitserve/push_review.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "kzoo/board/rules.hpp"
#include "kzoo/gitserve/proc_receive.hpp"
#include "kzoo/util/temp_dir.hpp"

namespace kzoo::gitserve {
namespace {

class PushReviewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = TempDirectory::make("kzoo-push-review");
    ASSERT_TRUE(d) << d.error().message;
    dir_.emplace(std::move(*d));
    git("init -q -b main .");
    write("k/.kernel_package/desc.yaml", "name: k\n");
    write("k/src/a.py", "A = 1\n");
    write("README", "hello\n");
    base_ = commit("base");
  }
  std::string root() const { return dir_->path(); }
  void git(const std::string& args) {
    const std::string cmd = "cd '" + root() + "' && GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git -c user.name=t "
                            "-c user.email=t@example.org " + args + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  void write(const std::string& rel, const std::string& text) {
    std::system(("mkdir -p \"$(dirname '" + root() + "/" + rel + "')\"").c_str());
    std::ofstream(root() + "/" + rel) << text;
  }
  std::string commit(const std::string& msg) {
    git("add -A .");
    git("commit -q --allow-empty -m " + msg);
    return head();
  }
  std::string head() {
    const std::string out = root() + "/.git/kzoo-head";  // outside the work tree, so never committed
    std::system(("cd '" + root() + "' && git rev-parse HEAD >" + out).c_str());
    std::string id;
    std::ifstream(out) >> id;
    return id;
  }
  PushReview review(const std::string& pushed, const package::TreeLimits& limits = {}) {
    auto r = review_push(root() + "/.git", base_, pushed, {"k"}, limits);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : PushReview{};
  }
  static std::string rules(const PushReview& r) {
    std::string s;
    for (const auto& v : r.violations) s += v.path + " " + v.rule + "\n";
    return s;
  }
  std::optional<TempDirectory> dir_;
  std::string base_;
};

TEST_F(PushReviewTest, AChangeUnderSrcNamesItsKernelAndBreaksNoRule) {
  write("k/src/a.py", "A = 2\n");
  write("k/src/b.py", "B = 1\n");
  auto r = review(commit("edit"));
  EXPECT_EQ(r.kernels, std::vector<std::string>{"k"});
  EXPECT_TRUE(r.violations.empty()) << rules(r);
}

TEST_F(PushReviewTest, ASymlinkIsRefusedNamingItsPathAndTheFix) {
  ASSERT_EQ(symlink("/etc/passwd", (root() + "/k/src/p.py").c_str()), 0);
  auto r = review(commit("link"));
  ASSERT_EQ(r.violations.size(), 1u) << rules(r);
  EXPECT_EQ(r.violations[0].path, "k/src/p.py");
  EXPECT_EQ(r.violations[0].rule, "git.symlink");
  EXPECT_NE(r.violations[0].detail.find("git rm --cached k/src/p.py"), std::string::npos);
}

TEST_F(PushReviewTest, AGitlinkIsASubmoduleAndIsRefused) {
  git("update-index --add --cacheinfo 160000," + base_ + ",k/src/vendor");
  git("commit -q -m sub");
  auto r = review(head());
  ASSERT_EQ(r.violations.size(), 1u) << rules(r);
  EXPECT_EQ(r.violations[0].rule, "git.submodule");
  EXPECT_EQ(r.violations[0].path, "k/src/vendor");
}

TEST_F(PushReviewTest, AttributesAndModulesFilesAreRefusedWherever) {
  write("k/src/.gitattributes", "*.py filter=evil\n");
  write("k/src/.gitmodules", "[submodule \"x\"]\n");
  auto r = review(commit("attrs"));
  EXPECT_TRUE(has_rule(r.violations, "git.attributes")) << rules(r);
  EXPECT_TRUE(has_rule(r.violations, "git.submodule")) << rules(r);
}

TEST_F(PushReviewTest, NamesEqualUnderCaseFoldingCollide) {
  write("k/src/A.py", "A = 3\n");
  auto r = review(commit("case"));
  ASSERT_TRUE(has_rule(r.violations, "git.case-collision")) << rules(r);
  EXPECT_NE(r.violations[0].detail.find("\"A.py\" and \"a.py\""), std::string::npos) << r.violations[0].detail;
}

TEST_F(PushReviewTest, DepthAndSizeCapsStopTheWalk) {
  write("k/src/d/d/d/d/d/f.py", "x = 1\n");
  write("k/src/big.py", std::string(5000, 'x'));
  package::TreeLimits lim;
  lim.max_depth = 5;
  lim.max_file_bytes = 4096;
  auto r = review(commit("deep"), lim);
  EXPECT_TRUE(has_rule(r.violations, "git.too-deep")) << rules(r);
  EXPECT_TRUE(has_rule(r.violations, "git.file-too-large")) << rules(r);
}

TEST_F(PushReviewTest, ChangesOutsideSrcOrOutsideEveryPackageAreRefused) {
  write("k/.kernel_package/desc.yaml", "name: forged\n");
  write("README", "changed\n");
  write("k2/src/x.py", "x = 1\n");
  auto r = review(commit("outside"));
  EXPECT_EQ(rules(r), "README git.outside-package\nk/.kernel_package/desc.yaml git.outside-src\nk2/src/x.py git.outside-package\n");
  EXPECT_TRUE(r.kernels.empty());
}

// A batch job's slurm-<id>.out lies at the top of its result: passed over
// when named, while every other rule still holds for it and for the rest.
TEST_F(PushReviewTest, AnIgnoredPathNeedNotLieInAPackageButTheRestIsJudged) {
  write("slurm-7.out", "hello\n");
  write("k/src/a.py", "A = 3\n");
  write("notes.txt", "x\n");
  auto r = review_push(root() + "/.git", base_, commit("job"), {"k"}, {}, ProjectFiles::refused, {"slurm-7.out"});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->kernels, std::vector<std::string>{"k"});
  EXPECT_EQ(rules(*r), "notes.txt git.outside-package\n");
}

TEST_F(PushReviewTest, ADeletedFileInSrcIsAChangeToItsKernel) {
  git("rm -q k/src/a.py");
  write("k/src/b.py", "B = 1\n");
  auto r = review(commit("swap"));
  EXPECT_EQ(r.kernels, std::vector<std::string>{"k"});
  EXPECT_TRUE(r.violations.empty()) << rules(r);
}

TEST_F(PushReviewTest, MergeBaseFindsTheCommonAncestor) {
  write("k/src/a.py", "A = 9\n");
  std::string pushed = commit("edit");
  auto mb = merge_base(root() + "/.git", pushed, base_);
  ASSERT_TRUE(mb && *mb);
  EXPECT_EQ(**mb, base_);
  EXPECT_TRUE(is_commit(root() + "/.git", pushed));
  EXPECT_FALSE(is_commit(root() + "/.git", std::string(40, '0')));
}

// ------------------------------------------------------- project files
// A maintainer's push to main of files outside every kernel's src/: listed
// instead of refused, then held to the rules the board applies when it reads
// them (review_project_change). On a repository holding a real catalog
// package, the demo rules and an AGENTS.md.

constexpr const char* kSoft = "h200/norm/softmax/bf16/softmax_eager";

class ProjectReviewTest : public PushReviewTest {
 protected:
  void SetUp() override {
    PushReviewTest::SetUp();
    std::filesystem::create_directories(root() + "/h200/norm/softmax/bf16");
    std::filesystem::copy(KZOO_SOURCE_DIR "/catalog/kernel_data/" + std::string(kSoft), root() + "/" + kSoft,
                          std::filesystem::copy_options::recursive);
    rules_ = board::demo_rules({kSoft}, "cpu");
    write_rules(rules_);
    write("AGENTS.md", "# Rules\n");
    base_ = commit("catalog");
    auto r = store::KernelRepo::open(root() + "/.git");
    ASSERT_TRUE(r) << r.error().message;
    repo_.emplace(std::move(*r));
  }
  void write_rules(const nlohmann::json& doc) { write("scienceslack.json", doc.dump(2) + "\n"); }
  PushReview listed(const std::string& pushed) {
    auto r = review_push(root() + "/.git", base_, pushed, {"k", kSoft}, {}, ProjectFiles::listed);
    EXPECT_TRUE(r) << r.error().message;
    return r ? *r : PushReview{};
  }
  Violations change(const std::string& pushed) {
    PushReview r = listed(pushed);
    EXPECT_TRUE(r.violations.empty()) << rules(r);
    return review_project_change(*repo_, pushed, r);
  }
  static std::string text(const Violations& vs) {
    std::string s;
    for (const auto& v : vs) s += to_string(v) + "\n";
    return s;
  }
  nlohmann::json rules_;
  std::optional<store::KernelRepo> repo_;
};

TEST_F(ProjectReviewTest, AMaintainersRulesAndAgentsChangeIsListedAndPasses) {
  rules_["benchmark"]["partitions"][0]["default_time"] = "00:20:00";
  write_rules(rules_);
  write("AGENTS.md", "# Rules\nBe kind.\n");
  const std::string pushed = commit("rules");
  PushReview r = listed(pushed);
  EXPECT_EQ(r.project_files, (std::vector<std::string>{"AGENTS.md", "scienceslack.json"}));
  EXPECT_TRUE(r.kernels.empty());
  EXPECT_TRUE(r.violations.empty()) << rules(r);
  EXPECT_TRUE(review_project_change(*repo_, pushed, r).empty());
}

TEST_F(ProjectReviewTest, TheSameChangeByAnyoneElseIsRefusedNamingWhoMay) {
  rules_["benchmark"]["partitions"][0]["default_time"] = "00:20:00";
  write_rules(rules_);
  write(std::string(kSoft) + "/.kernel_package/benchmark.py", "# mine\n");
  auto r = review_push(root() + "/.git", base_, commit("rules"), {"k", kSoft});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(rules(*r), std::string(kSoft) + "/.kernel_package/benchmark.py git.outside-src\nscienceslack.json "
                                            "git.outside-package\n");
  for (const auto& v : r->violations)
    EXPECT_NE(v.detail.find("only a maintainer's own token changes, by a push to main"), std::string::npos) << v.detail;
  EXPECT_TRUE(r->project_files.empty());
}

TEST_F(ProjectReviewTest, RulesThatAreNotJsonAreRefusedNamingTheFileAndTheFix) {
  write("scienceslack.json", "{\"schema_version\": \"1\",\n");
  auto vs = change(commit("broken"));
  ASSERT_EQ(vs.size(), 1u) << text(vs);
  EXPECT_EQ(vs[0].path, "scienceslack.json");
  EXPECT_EQ(vs[0].rule, "board.rules");
  EXPECT_NE(vs[0].detail.find("scienceslack.json as pushed"), std::string::npos) << vs[0].detail;
  EXPECT_NE(vs[0].detail.find("push again"), std::string::npos) << vs[0].detail;
}

TEST_F(ProjectReviewTest, RulesBreakingTheSchemaOrThePartitionAreRefusedWithTheRuleAndTheFix) {
  nlohmann::json bad = rules_;
  bad["benchmark"]["version"] = 0;
  write_rules(bad);
  auto vs = change(commit("schema"));
  ASSERT_EQ(vs.size(), 1u) << text(vs);
  EXPECT_EQ(vs[0].rule, "board.rules");
  EXPECT_NE(vs[0].detail.find("minimum"), std::string::npos) << vs[0].detail;
  EXPECT_NE(vs[0].detail.find("push again"), std::string::npos) << vs[0].detail;
  EXPECT_NE(vs[0].detail.find("`checks` tag"), std::string::npos) << vs[0].detail;

  bad = rules_;
  bad["benchmark"]["partitions"][0]["default_time"] = "03:00:00";  // over the 01:00:00 limit
  write_rules(bad);
  vs = change(commit("partition"));
  ASSERT_EQ(vs.size(), 1u) << text(vs);
  EXPECT_NE(vs[0].detail.find("board.partition"), std::string::npos) << vs[0].detail;
  EXPECT_NE(vs[0].detail.find("over time_limit"), std::string::npos) << vs[0].detail;

  git("rm -q scienceslack.json");
  vs = change(commit("gone"));
  ASSERT_EQ(vs.size(), 1u) << text(vs);
  EXPECT_EQ(vs[0].rule, "board.rules");
  EXPECT_NE(vs[0].detail.find("restore it"), std::string::npos) << vs[0].detail;
}

TEST_F(ProjectReviewTest, AMixedPushIsRefusedSayingToPushTheTwoApart) {
  write("AGENTS.md", "# Rules\nmore\n");
  write(std::string(kSoft) + "/src/softmax.py", "# faster\n");
  const std::string pushed = commit("mixed");
  PushReview r = listed(pushed);
  EXPECT_EQ(r.kernels, std::vector<std::string>{kSoft});
  auto vs = review_project_change(*repo_, pushed, r);
  ASSERT_EQ(vs.size(), 1u) << text(vs);
  EXPECT_EQ(vs[0].rule, "git.mixed-push");
  EXPECT_EQ(vs[0].path, "AGENTS.md");
  EXPECT_NE(vs[0].detail.find("push the project files first"), std::string::npos) << vs[0].detail;
}

TEST_F(ProjectReviewTest, TheTreeRulesStillHoldForProjectFiles) {
  ASSERT_EQ(symlink("/etc/passwd", (root() + "/docs.md").c_str()), 0);
  write(".gitattributes", "* filter=evil\n");
  write("notes/A.md", "a\n");
  write("notes/a.md", "a\n");
  PushReview r = listed(commit("hostile"));
  EXPECT_TRUE(has_rule(r.violations, "git.symlink")) << rules(r);
  EXPECT_TRUE(has_rule(r.violations, "git.attributes")) << rules(r);
  EXPECT_TRUE(has_rule(r.violations, "git.case-collision")) << rules(r);
}

TEST_F(ProjectReviewTest, APackagesBenchResultStaysTheServersEvenOnMain) {
  write(std::string(kSoft) + "/.kernel_package/bench_result.yaml", "cases: []\n");
  PushReview r = listed(commit("forged"));
  ASSERT_EQ(r.violations.size(), 1u) << rules(r);
  EXPECT_EQ(r.violations[0].rule, "git.outside-src");
  EXPECT_NE(r.violations[0].detail.find("a maintainer's included"), std::string::npos) << r.violations[0].detail;
}

TEST_F(ProjectReviewTest, AHarnessEditMustLeaveAValidPackage) {
  const std::string harness = std::string(kSoft) + "/.kernel_package/benchmark.py";
  std::ifstream in(root() + "/" + harness);
  const std::string was((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write(harness, was + "# reviewed by the maintainers\n");
  EXPECT_TRUE(change(commit("harness")).empty());
  write(std::string(kSoft) + "/.kernel_package/weights.pt", std::string("PK\x03\x04", 4) + std::string(64, 'x'));
  auto vs = change(commit("tensor"));
  EXPECT_FALSE(vs.empty()) << "a tensor in a package is refused on main too";
  for (const auto& v : vs) EXPECT_EQ(v.path.rfind(kSoft, 0), 0u) << to_string(v);
}

// ------------------------------------------------------------------ the hook

std::string pkt(const std::string& s) {
  char len[5];
  std::snprintf(len, sizeof len, "%04x", static_cast<unsigned>(s.size() + 4));
  return len + s;
}

TEST(ProcReceiveTest, RelaysGitsCommandsAndTheServersAnswerPerRef) {
  int git_in[2], git_out[2], cb[2];
  ASSERT_EQ(pipe(git_in), 0);
  ASSERT_EQ(pipe(git_out), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, cb), 0);
  const std::string a(40, 'a'), z(40, '0');
  const std::string from_git = pkt(std::string("version=1") + '\0' + "atomic\n") + "0000" +
                               pkt(z + " " + a + " refs/heads/routes/r\n") + pkt(z + " " + a + " refs/tags/t\n") + "0000";
  ASSERT_TRUE(write_all(git_in[1], from_git));
  ::close(git_in[1]);
  std::string question;
  std::thread server([&] {
    auto q = read_line(cb[1], kMaxCallbackLine, monotonic_ms() + 10000);
    question = q ? *q : "";
    PushAnswer ans;
    ans.results = {{"refs/heads/routes/r", true, ""}, {"refs/tags/t", false, "no tags"}};
    ans.messages = {"kzoo: submission 7"};
    (void)write_all(cb[1], to_json(ans).dump() + "\n");
  });
  int err[2];
  ASSERT_EQ(pipe(err), 0);
  EXPECT_EQ(run_proc_receive(git_in[0], git_out[1], cb[0], err[1]), 0);
  server.join();
  ::close(git_out[1]);
  ::close(err[1]);
  auto cmds = commands_from_json(nlohmann::json::parse(question));
  ASSERT_TRUE(cmds);
  ASSERT_EQ(cmds->size(), 2u);
  EXPECT_EQ((*cmds)[0].ref, "refs/heads/routes/r");
  std::string to_git(4096, '\0');
  to_git.resize(static_cast<std::size_t>(::read(git_out[0], to_git.data(), to_git.size())));
  EXPECT_EQ(to_git, pkt(std::string("version=1") + '\0') + "0000" + pkt("ok refs/heads/routes/r") +
                        pkt("ng refs/tags/t no tags") + "0000");
  std::string said(4096, '\0');
  said.resize(static_cast<std::size_t>(::read(err[0], said.data(), said.size())));
  EXPECT_EQ(said, "kzoo: submission 7\n");
}

TEST(ProcReceiveTest, WithoutTheServerEveryRefIsRefused) {
  int git_in[2], git_out[2], err[2];
  ASSERT_EQ(pipe(git_in), 0);
  ASSERT_EQ(pipe(git_out), 0);
  ASSERT_EQ(pipe(err), 0);
  const std::string a(40, 'a'), z(40, '0');
  ASSERT_TRUE(write_all(git_in[1], pkt("version=1\n") + "0000" + pkt(z + " " + a + " refs/heads/main\n") + "0000"));
  ::close(git_in[1]);
  EXPECT_EQ(run_proc_receive(git_in[0], git_out[1], -1, err[1]), 0);
  ::close(git_out[1]);
  std::string to_git(4096, '\0');
  to_git.resize(static_cast<std::size_t>(::read(git_out[0], to_git.data(), to_git.size())));
  EXPECT_NE(to_git.find("ng refs/heads/main kzoo could not judge this push"), std::string::npos) << to_git;
}

TEST(ProcReceiveTest, MalformedCommandsFromTheHookAreRefusedByTheServer) {
  EXPECT_FALSE(commands_from_json(nlohmann::json::parse(R"({"commands": []})")));
  EXPECT_FALSE(commands_from_json(nlohmann::json::parse(R"({"commands": [{"old": "x", "new": "y", "ref": "r"}]})")));
  EXPECT_FALSE(commands_from_json(nlohmann::json::parse(R"([1])")));
}

}  // namespace
}  // namespace kzoo::gitserve
