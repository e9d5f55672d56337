// The board's rules and arithmetic, against a real kernel_data repository
// (libgit2) and crafted check records. The whole service is exercised by
// tests/cli/board.sh.
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "kzoo/board/board.hpp"
#include "kzoo/board/rules.hpp"
#include "kzoo/board/score.hpp"
#include "kzoo/store/open_state.hpp"
#include "kzoo/store/test_support.hpp"

namespace kzoo::board {
namespace {

using nlohmann::json;
using store::testing::TempDir;

const std::vector<std::string> kKernels = {"a/one", "b/two", "c/three"};

std::string rules_text(const json& patch = json::object()) {
  json d = demo_rules(kKernels, "cpu");
  d["benchmark"].update(patch);
  return d.dump(2);
}

TEST(Rules, TheDemoRulesAreValid) {
  auto r = parse_rules(rules_text(), "scienceslack.json");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->version, 1);
  EXPECT_EQ(r->kernels, kKernels);
  EXPECT_EQ(r->device_class, "cpu");
  EXPECT_EQ(r->adopt, "auto");
  EXPECT_EQ(r->timed_runs, 100);
  EXPECT_EQ(r->metrics_file, "metrics.json");
}

TEST(Rules, ACatalogsBoardDefaultsAreCheckedNamingTheFix) {
  auto ok = catalog_board_version(R"({"version": 3, "reason": "new baselines"})", "board_defaults.json");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(*ok, 3);
  for (const std::string bad : {R"({"version": 0})", R"({"version": "2"})", R"({"version": 2.5})",
                                R"({"version": 1000001})", R"({"version": 18446744073709551615})", R"({})",
                                R"({"version": 2, "verison": 3})", R"({"version": 2, "reason": 7})", R"([2])",
                                R"({"version": 2)"}) {
    auto r = catalog_board_version(bad, "board_defaults.json");
    ASSERT_FALSE(r) << bad;
    EXPECT_NE(r.error().message.find("board_defaults.json"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("write it as {\"version\": N"), std::string::npos) << r.error().message;
  }
}

TEST(Rules, EachBrokenRuleIsNamedWithTheFix) {
  for (const auto& [patch, rule] : std::vector<std::pair<json, std::string>>{
           {{{"version", 0}}, "minimum"},
           {{{"status", "quiet"}}, "enum"},  // computed, never written
           {{{"adopt", "sometimes"}}, "enum"},
           {{{"kernels", json::array()}}, "minItems"},
           {{{"kernels", json::array({"a/one", "a/one"})}}, "uniqueItems"},
           {{{"kernels", json::array({"a kernel"})}}, "pattern"},
           {{{"surprise", 1}}, "additional"}}) {
    auto r = parse_rules(rules_text(patch), "scienceslack.json");
    ASSERT_FALSE(r) << patch.dump();
    EXPECT_NE(r.error().message.find("scienceslack.json"), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(rule), std::string::npos) << patch.dump() << ": " << r.error().message;
    EXPECT_NE(r.error().message.find("move the `checks` tag"), std::string::npos);
  }
  EXPECT_FALSE(parse_rules("{\"schema_version\": \"1\"", "x.json"));  // not JSON
}

// Rules the schema accepts but a check could not run under are refused where
// they are read (a push to main, an approval), not when a job starts.
TEST(Rules, APartitionTheChecksCannotRunOnIsRefusedWithTheGivenFix) {
  json over = demo_rules(kKernels, "cpu");
  over["benchmark"]["partitions"][0]["default_time"] = "02:00:00";  // over the 01:00:00 limit
  auto r = parse_rules(over.dump(), "scienceslack.json", "push again");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("board.partition"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("over time_limit"), std::string::npos) << r.error().message;
  EXPECT_TRUE(r.error().message.ends_with("push again")) << r.error().message;
  json nowhere = demo_rules(kKernels, "cpu");
  nowhere["benchmark"]["checks"][0]["partition"] = "gpu-big";
  auto n = parse_rules(nowhere.dump(), "scienceslack.json");
  ASSERT_FALSE(n);
  EXPECT_NE(n.error().message.find("\"gpu-big\""), std::string::npos) << n.error().message;
  EXPECT_NE(n.error().message.find("move the `checks` tag"), std::string::npos) << n.error().message;
}

TEST(Score, CaseSpeedUpsFollowTheMetricsDirection) {
  json base = {{"cases", {{{"id", "c0"}, {"metric", "GB/s"}, {"direction", "higher"}, {"value", 100.0}, {"time_us", 40.0}, {"roofline_us", 4.0}},
                          {{"id", "c1"}, {"metric", "us"}, {"direction", "lower"}, {"value", 50.0}, {"time_us", 50.0}, {"roofline_us", 5.0}}}}};
  json cand = {{"cases", {{{"id", "c0"}, {"metric", "GB/s"}, {"direction", "higher"}, {"value", 400.0}, {"time_us", 10.0}, {"roofline_us", 4.0}},
                          {{"id", "c1"}, {"metric", "us"}, {"direction", "lower"}, {"value", 25.0}, {"time_us", 25.0}, {"roofline_us", 5.0}}}}};
  auto f = kernel_figures(base, cand);
  ASSERT_TRUE(f.speedup);
  EXPECT_NEAR(*f.speedup, std::sqrt(4.0 * 2.0), 1e-12);
  EXPECT_NEAR(*f.eager_us, 90.0, 1e-12);
  EXPECT_NEAR(*f.time_us, 35.0, 1e-12);
  EXPECT_NEAR(*f.roofline_pct, 100.0 * 9.0 / 35.0, 1e-12);
  cand["cases"].erase(1);  // a case without a result: no speed-up at all
  auto g = kernel_figures(base, cand);
  EXPECT_FALSE(g.speedup);
  EXPECT_NE(g.note.find("c1"), std::string::npos);
  EXPECT_FALSE(kernel_figures(json{{"cases", json::array()}}, base).speedup);
}

TEST(Score, AKernelWithoutAResultCountsOne) {
  EXPECT_DOUBLE_EQ(board_score(kKernels, {}), 1.0);
  EXPECT_NEAR(board_score(kKernels, {{"a/one", 8.0}}), 2.0, 1e-12);
  EXPECT_NEAR(board_score(kKernels, {{"a/one", 2.0}, {"c/three", 4.0}}), 2.0, 1e-12);
  EXPECT_NEAR(board_score(kKernels, {{"not/on/board", 1000.0}}), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(geomean({}), 1.0);
}

TEST(Score, TheDeviceClassComesFromTheRunRecord) {
  EXPECT_EQ(result_device_class(json{{"device", "cuda"}, {"device_class", "h100"}}, json()), "h100");
  EXPECT_EQ(result_device_class(json{{"device", "cpu"}}, json()), "cpu");
  EXPECT_EQ(result_device_class(json(), json{{"arch", "cpu"}}), "cpu");
  EXPECT_EQ(result_device_class(json(), json{{"arch", "sm_90"}}), "");  // an arch alone names no class
}

TEST(Routes, NamesAreBranchSafe) {
  EXPECT_TRUE(valid_route_name("fast-softmax"));
  EXPECT_TRUE(valid_route_name("v2.try_1"));
  for (const char* bad : {"", "Upper", "a/b", "-x", "a..b", "x.lock", "x.", "a b", "\xc3\xa9"})
    EXPECT_FALSE(valid_route_name(bad)) << bad;
}

// A repository made from the source tree's catalog, with the demo rules tagged.
struct RepoFixture : ::testing::Test {
  TempDir tmp;
  std::optional<store::KernelRepo> repo;
  void SetUp() override {
    auto r = store::KernelRepo::init_from_catalog(KZOO_SOURCE_DIR "/catalog/kernel_data", tmp / "kd.git");
    ASSERT_TRUE(r) << r.error().message;
    repo.emplace(std::move(*r));
  }
  std::string commit_rules(const json& patch) {
    json d = json::parse(*repo->read_file(kRulesFile, "refs/heads/main"));
    d["benchmark"].update(patch);
    auto c = repo->commit_files("main", {{kRulesFile, d.dump(2)}}, "rules: change", {"m", "m@x"});
    EXPECT_TRUE(c) << c.error().message;
    return *c;
  }
};

TEST_F(RepoFixture, RulesAreReadOnlyAtTheChecksTag) {
  auto none = rules_in_force(*repo);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);  // no tag: the project declares no checks yet
  auto tagged = init_rules(*repo, "cpu");
  ASSERT_TRUE(tagged) << tagged.error().message;
  auto r = rules_in_force(*repo);
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->commit, *tagged);
  EXPECT_EQ((*r)->kernels.size(), 12u);  // every package of the catalog

  // Merged into main, not approved: nothing changes.
  std::string next = commit_rules({{"kernels", json::array({(*r)->kernels[0]})}});
  auto same = rules_in_force(*repo);
  EXPECT_EQ((*same)->commit, *tagged);
  EXPECT_EQ((*same)->kernels.size(), 12u);

  // The tag moves: it takes effect.
  ASSERT_TRUE(repo->set_ref(kChecksTag, next));
  auto moved = rules_in_force(*repo);
  EXPECT_EQ((*moved)->commit, next);
  EXPECT_EQ((*moved)->kernels.size(), 1u);

  // An invalid file at the tag is an error naming the commit and the fix.
  std::string broken = commit_rules({{"version", "two"}});
  ASSERT_TRUE(repo->set_ref(kChecksTag, broken));
  auto bad = rules_in_force(*repo);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find(broken.substr(0, 12)), std::string::npos) << bad.error().message;
}

TEST_F(RepoFixture, TheCatalogSetsTheVersionOfTheBoardInitStarts) {
  // catalog/kernel_data/board_defaults.json: version 2 since the eager baselines became the PyTorch calls.
  ASSERT_TRUE(init_rules(*repo, "cpu"));
  auto r = rules_in_force(*repo);
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->version, 2);
  auto vs = versions(*repo);
  ASSERT_TRUE(vs);
  EXPECT_EQ(*vs, std::vector<int>({2}));
}

TEST(Rules, ACatalogWithoutBoardDefaultsStartsAtVersionOne) {
  TempDir other;
  std::filesystem::create_directories(other / "cat/a/one/.kernel_package");
  std::filesystem::copy(KZOO_SOURCE_DIR "/catalog/kernel_data/h200/norm/softmax/bf16/softmax_eager",
                        other / "cat/a/one", std::filesystem::copy_options::recursive |
                                                 std::filesystem::copy_options::overwrite_existing);
  std::ofstream(other / "cat/.kernel_data").close();
  auto plain = store::KernelRepo::init_from_catalog(other / "cat", other / "kd.git");
  ASSERT_TRUE(plain) << plain.error().message;
  ASSERT_TRUE(init_rules(*plain, "cpu"));
  auto r = rules_in_force(*plain);
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->version, 1);
}

TEST_F(RepoFixture, ABrokenBoardDefaultsFileStopsInitNamingIt) {
  ASSERT_TRUE(repo->commit_files("main", {{kCatalogBoardFile, R"({"version": "two"})"}}, "catalog: break it", {"m", "m@x"}));
  auto r = init_rules(*repo, "cpu");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("board_defaults.json at the catalog's root: version is \"two\""), std::string::npos)
      << r.error().message;
  EXPECT_FALSE(*rules_in_force(*repo));  // nothing tagged
}

TEST_F(RepoFixture, RaisingTheVersionKeepsTheEarlierBoard) {
  auto v1 = init_rules(*repo, "cpu");
  ASSERT_TRUE(v1);
  const int first = (*rules_in_force(*repo))->version;
  std::string v2 = commit_rules({{"version", first + 1}, {"status", "active"}});
  ASSERT_TRUE(repo->set_ref(kChecksTag, v2));
  auto db = store::open_state("sqlite:" + (tmp / "state.db"));
  ASSERT_TRUE(db);
  auto now = store::system_now_ms();
  auto b2 = board_json(*repo, **db, std::nullopt, now);
  ASSERT_TRUE(b2 && *b2) << (b2 ? "" : b2.error().message);
  EXPECT_EQ((**b2)["version"], first + 1);
  EXPECT_EQ((**b2)["versions"], json::array({first, first + 1}));
  auto b1 = board_json(*repo, **db, first, now);
  ASSERT_TRUE(b1 && *b1);
  EXPECT_EQ((**b1)["rules_commit"], *v1);
  EXPECT_FALSE((**b1)["in_force"].get<bool>());
  auto b9 = board_json(*repo, **db, 9, now);
  ASSERT_TRUE(b9);
  EXPECT_FALSE(*b9);
}

TEST_F(RepoFixture, QuietIsComputedAfterTwoWeeksWithoutAScore) {
  ASSERT_TRUE(init_rules(*repo, "cpu"));
  auto db = store::open_state("sqlite:" + (tmp / "state.db"));
  ASSERT_TRUE(db);
  auto now = store::system_now_ms();
  auto fresh = board_json(*repo, **db, std::nullopt, now);
  EXPECT_EQ((**fresh)["status"], "active");
  auto later = board_json(*repo, **db, std::nullopt, now + kQuietAfterMs + 60000);
  EXPECT_EQ((**later)["status"], "quiet");
  EXPECT_EQ((**later)["status_set"], "active");
  // A status a maintainer set is never overridden by "quiet".
  commit_rules({{"status", "saturated"}});
  ASSERT_TRUE(repo->set_ref(kChecksTag, *repo->head("refs/heads/main")));
  auto sat = board_json(*repo, **db, std::nullopt, now + kQuietAfterMs + 60000);
  EXPECT_EQ((**sat)["status"], "saturated");
}

TEST_F(RepoFixture, AnAcceptOnARouteLandsOnItsBranchOnly) {
  auto main0 = repo->head("refs/heads/main");
  ASSERT_TRUE(main0);
  const std::string kid = "h200/norm/softmax/bf16/softmax_eager";
  package::PackageTree sub;
  sub.files.push_back({"src/softmax.py", "def softmax(x):\n    return x\n"});
  auto acc = repo->accept(kid, sub, [](const std::string& c) -> Result<std::string> { return c; }, "route accept",
                          {"alice", ""}, *main0, store::AcceptTarget{"routes/fast", *main0});
  ASSERT_TRUE(acc) << acc.error().message;
  EXPECT_FALSE(acc->incumbent_moved);
  EXPECT_EQ(*repo->head("refs/heads/main"), *main0);
  EXPECT_EQ(*repo->head("refs/heads/routes/fast"), acc->commit);
  EXPECT_EQ(acc->parent, *main0);
  auto refs = repo->list_refs(kRoutePrefix);
  ASSERT_TRUE(refs);
  EXPECT_EQ(*refs, std::vector<std::string>{"refs/heads/routes/fast"});
  auto bad = repo->accept(kid, sub, [](const std::string& c) -> Result<std::string> { return c; }, "x", {"a", ""},
                          *main0, store::AcceptTarget{"routes/..", *main0});
  EXPECT_FALSE(bad);
}

}  // namespace
}  // namespace kzoo::board
