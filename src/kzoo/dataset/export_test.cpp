// The dataset export on a real SQLite state and a real kernel_data repository:
// one record per case of every graded job, carrying the figures the service
// stored (never recomputed), each line valid against
// schemas/export_result.schema.json; the tasks as the catalog holds them;
// jobs that graded nothing contribute nothing.
#include "kzoo/dataset/export.hpp"

#include <fstream>

#include <gtest/gtest.h>

#include "kzoo/format/json_schema.hpp"
#include "kzoo/server/test_support.hpp"
#include "kzoo/store/open_state.hpp"

namespace kzoo::dataset {
namespace {

using nlohmann::json;
using server::testing::kKernelId;
using store::testing::TempDir;
using store::testing::write_file;

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

std::vector<json> lines_of(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(json::parse(line));
  return out;
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::testing::write_catalog(tmp_.path() / "catalog/kernel_data");
    write_file(tmp_.path() / "catalog/tasks/softmax/task.json", R"({"name": "softmax", "family": "norm"})");
    write_file(tmp_.path() / "catalog/tasks/rmsnorm/task.json", R"({"name": "rmsnorm", "family": "norm"})");
    auto repo = store::KernelRepo::init_from_catalog(tmp_ / "catalog/kernel_data", tmp_ / "kernel_data.git");
    ASSERT_TRUE(repo) << repo.error().message;
    repo_ = std::make_unique<store::KernelRepo>(std::move(*repo));
    auto db = store::open_state("sqlite:" + tmp_ / "state.db");
    ASSERT_TRUE(db) << db.error().message;
    db_ = std::move(*db);
  }

  // A submission graded to `outcome` with the judge's two cases, as the worker stores it.
  std::int64_t graded(store::Outcome outcome) {
    auto s = db_->create_submission({kKernelId, "ann", "fused", "/u/x.tar.gz", std::string(64, 'a')});
    EXPECT_TRUE(s) << s.error().message;
    EXPECT_TRUE(db_->enqueue(s->id, 3, false));
    auto j = db_->claim_job("w", 60);
    EXPECT_TRUE(j && *j);
    json doc = {{"cases",
                 {{{"test_case_id", "small"},
                   {"status", "ok"},
                   {"correct", true},
                   {"error_rel", 1e-7},
                   {"metrics", {{"latency_us", 181.2}}},
                   {"gates", {{"roofline", {{"value", 181.2}, {"limit", 90.6}, {"pass", true}}}}}},
                  {{"test_case_id", "large"},
                   {"status", "incorrect"},
                   {"correct", false},
                   {"error_rel", 0.3},
                   {"metrics", json::object()}}}}};
    json verdict = {{"outcome", outcome == store::Outcome::accepted ? "accepted" : "rejected"},
                    {"device_class", "h200"},
                    {"provenance", {{"torch", "2.11.0"}, {"judge", "7"}, {"gpu_name", "NVIDIA H200"}}},
                    {"cases",
                     {{{"test_case_id", "small"},
                       {"speedup", 1.25},
                       {"feedback",
                        {{"shape", "workload synthetic at M=64, N=64"},
                         {"params", {{"workload", "synthetic"}, {"shape", {{"M", 64}, {"N", 64}}}}},
                         {"metric", "latency_us"},
                         {"direction", "lower"},
                         {"value", 181.2},
                         {"time_us", 181.2},
                         {"roofline_us", 90.6},
                         {"roofline_pct", 50.0},
                         {"speedup_over_eager", 2.5}}}}}}};
    store::Completion c{outcome,
                        {{"benchmark_output", doc},
                         {"evidence_commit", std::string(40, 'e')},
                         {"check", {{"version", 3}, {"rules_commit", std::string(40, 'r')}, {"device_class", "h200"}}}},
                        verdict,
                        outcome == store::Outcome::accepted ? std::vector<std::string>{} : std::vector<std::string>{"slow"},
                        outcome == store::Outcome::accepted ? kCommit : ""};
    auto done = db_->complete((*j)->id, "w", c);
    EXPECT_TRUE(done) << done.error().message;
    return s->id;
  }

  TempDir tmp_;
  std::unique_ptr<store::KernelRepo> repo_;
  std::unique_ptr<store::StateDb> db_;
};

TEST_F(ExportTest, EveryCaseOfEveryGradedJobIsOneRecordCarryingWhatTheServiceStored) {
  const auto accepted = graded(store::Outcome::accepted);
  const auto rejected = graded(store::Outcome::rejected);
  // An intake rejection and a queued submission graded nothing: no records.
  auto intake = db_->create_submission({kKernelId, "ola", "", "-", std::string(64, 'b')});
  ASSERT_TRUE(db_->reject(intake->id, {"bad package"}, json{{"stage", "intake"}}));
  ASSERT_TRUE(db_->enqueue(db_->create_submission({kKernelId, "ola", "", "/u/y", std::string(64, 'c')})->id, 3, false));

  auto n = export_dataset(*db_, *repo_, tmp_ / "catalog/tasks", tmp_ / "out");
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->tasks, 2);
  EXPECT_EQ(n->jobs, 2);
  EXPECT_EQ(n->results, 4);

  auto results = lines_of(tmp_ / "out/results.jsonl");
  ASSERT_EQ(results.size(), 4u);
  for (const auto& r : results) {
    auto bad = format::SchemaSet::bundled().validate(r, "export_result", "results.jsonl");
    EXPECT_TRUE(bad.empty()) << r.dump() << "\n" << (bad.empty() ? "" : to_string(bad.front()));
  }
  const json& small = results[0];
  EXPECT_EQ(small["submission_id"], accepted);
  EXPECT_EQ(small["kernel_id"], kKernelId);
  EXPECT_EQ(small["task"], "softmax") << "from the package's desc.yaml";
  EXPECT_EQ(small["test_case_id"], "small");
  EXPECT_EQ(small["params"]["shape"]["M"], 64);
  EXPECT_EQ(small["device_class"], "h200");
  EXPECT_EQ(small["metric"], "latency_us");
  EXPECT_DOUBLE_EQ(small["value"].get<double>(), 181.2);
  EXPECT_DOUBLE_EQ(small["roofline_pct"].get<double>(), 50.0);
  EXPECT_DOUBLE_EQ(small["speedup_over_incumbent"].get<double>(), 1.25);
  EXPECT_DOUBLE_EQ(small["speedup_over_eager"].get<double>(), 2.5);
  EXPECT_EQ(small["verdict"], "accepted");
  EXPECT_EQ(small["commit"], kCommit);
  EXPECT_EQ(small["rules_version"], 3);
  EXPECT_EQ(small["software"]["torch"], "2.11.0");
  EXPECT_TRUE(small["graded_at"].is_string());

  const json& large = results[1];
  EXPECT_EQ(large["status"], "incorrect");
  EXPECT_TRUE(large["value"].is_null()) << "a failed case has no figure, and none is made up";
  EXPECT_TRUE(large["speedup_over_eager"].is_null());
  EXPECT_DOUBLE_EQ(large["error_rel"].get<double>(), 0.3);

  EXPECT_EQ(results[2]["submission_id"], rejected);
  EXPECT_EQ(results[2]["verdict"], "rejected");
  EXPECT_TRUE(results[2]["commit"].is_null());

  auto tasks = lines_of(tmp_ / "out/tasks.jsonl");
  ASSERT_EQ(tasks.size(), 2u);
  EXPECT_EQ(tasks[0]["name"], "rmsnorm") << "tasks in name order";
  EXPECT_EQ(tasks[1]["name"], "softmax");
}

TEST_F(ExportTest, AnEmptyServiceExportsEmptyFilesAndAnUnwritableFolderIsAnErrorNamingIt) {
  auto n = export_dataset(*db_, *repo_, "", tmp_ / "out");
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(n->results, 0);
  EXPECT_TRUE(lines_of(tmp_ / "out/results.jsonl").empty());
  write_file(tmp_.path() / "file", "x");
  auto bad = export_dataset(*db_, *repo_, "", tmp_ / "file/out");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("file/out"), std::string::npos) << bad.error().message;
}

}  // namespace
}  // namespace kzoo::dataset
