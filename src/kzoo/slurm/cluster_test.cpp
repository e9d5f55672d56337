// The Slurm client commands (cluster.hpp) and the dispatcher
// (dispatcher.hpp) against a real single-node cluster: submit, follow,
// record how a job ended, cancel; one batch job per queued job, never past
// --max-batch, and pending ones cancelled once no queued job needs them.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "kzoo/board/rules.hpp"
#include "kzoo/slurm/cluster.hpp"
#include "kzoo/slurm/dispatcher.hpp"
#include "kzoo/slurm/test_cluster.hpp"
#include "kzoo/store/open_state.hpp"
#include "kzoo/store/test_support.hpp"
#include "kzoo/util/test_prerequisite.hpp"

namespace kzoo::slurm {
namespace {

using store::testing::TempDir;

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KZOO_REQUIRE_PREREQUISITE(testing::cluster_unavailable());
    ASSERT_FALSE(testing::cluster_dir().empty()) << "the cluster did not start (its logs are above)";
  }
  std::string script(const std::string& body) {
    std::string p = tmp / ("job-" + std::to_string(++n_) + ".sh");
    std::ofstream(p) << "#!/bin/sh\n" << body << "\n";
    return p;
  }
  // Waits until Slurm no longer lists `id`, then asks how it ended.
  std::optional<BatchEnd> wait_end(const std::string& id) {
    for (int i = 0; i < 300; ++i) {
      auto q = squeue({id});
      if (q && !q->count(id)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    auto e = job_end(id);
    EXPECT_TRUE(e) << (e ? "" : e.error().message);
    if (!e) return std::nullopt;
    return *e;
  }
  TempDir tmp;
  int n_ = 0;
};

TEST_F(ClusterTest, ABatchJobIsSubmittedFollowedAndItsExitCodeRecorded) {
  auto id = sbatch({"--partition=main", "--time=0-00:01:00", "--output=" + tmp / "%j.log"}, script("echo ran; exit 3"));
  ASSERT_TRUE(id) << id.error().message;
  auto end = wait_end(*id);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->state, "FAILED");
  EXPECT_EQ(end->exit_code, 3);
  std::ifstream log(tmp / (*id + ".log"));
  std::string line;
  std::getline(log, line);
  EXPECT_EQ(line, "ran");
}

TEST_F(ClusterTest, ScancelStopsAJobAndUnknownJobsAreNoError) {
  auto id = sbatch({"--partition=main", "--time=0-00:05:00", "--output=/dev/null"}, script("sleep 300"));
  ASSERT_TRUE(id) << id.error().message;
  ASSERT_TRUE(scancel(*id));
  auto end = wait_end(*id);
  ASSERT_TRUE(end);
  EXPECT_EQ(end->state, "CANCELLED");
  auto none = squeue({"999999"});
  ASSERT_TRUE(none) << none.error().message;
  EXPECT_TRUE(none->empty());
  auto forgotten = job_end("999999");
  ASSERT_TRUE(forgotten);
  EXPECT_FALSE(*forgotten);
  auto refused = sbatch({"--partition=nowhere"}, script("true"));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("sbatch refused"), std::string::npos) << refused.error().message;
}

TEST_F(ClusterTest, TheDispatcherKeepsABatchJobPerQueuedJobAndCancelsTheOnesNoJobNeeds) {
  // The demo board: checks on partition main, 4 CPUs each, so the 4-CPU node
  // runs one batch job at a time and the next waits (Resources).
  std::filesystem::create_directories(tmp.path() / "kd");
  store::testing::write_file(tmp.path() / "kd/.kernel_data", "");
  store::testing::write_file(tmp.path() / "kd/k/.kernel_package/desc.yaml", "name: k\n");
  auto repo = store::KernelRepo::init_from_catalog(tmp / "kd", tmp / "repo");
  ASSERT_TRUE(repo) << repo.error().message;
  ASSERT_TRUE(board::init_rules(*repo, "cpu"));
  auto db = store::open_state(store::default_state_url(tmp.path().string()));
  ASSERT_TRUE(db);
  std::vector<std::int64_t> subs;
  for (int i = 0; i < 3; ++i) {
    auto s = (*db)->create_submission({"k", "alice", "", "/p", std::string(64, 'a')});
    ASSERT_TRUE(s && (*db)->enqueue(s->id));
    subs.push_back(s->id);
  }
  DispatchOptions o;
  o.worker = {"/bin/sh", "-c", "sleep 300"};  // a worker that never finishes: the batch jobs stay out
  o.dir = tmp / "slurm";
  o.max_batch = 2;
  auto d = Dispatcher::open(o, **db, *repo);
  ASSERT_TRUE(d) << d.error().message;
  ASSERT_TRUE(d->step());
  ASSERT_EQ(d->outstanding().size(), 2u) << "3 queued, at most --max-batch 2 out";
  int running = 0, pending = 0;
  for (int i = 0; i < 150 && running == 0; ++i) {  // until Slurm schedules the first
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_TRUE(d->step());
    running = pending = 0;
    for (const auto& [id, b] : d->outstanding()) (b.state == "RUNNING" ? running : pending) += 1;
  }
  EXPECT_EQ(running, 1);
  EXPECT_EQ(pending, 1) << "the node has room for one 4-CPU check";
  // Every queued job is cancelled: the pending batch job is not needed.
  for (auto id : subs) ASSERT_TRUE((*db)->cancel(id, "test"));
  ASSERT_TRUE(d->step());
  ASSERT_EQ(d->outstanding().size(), 1u);
  const std::string still = d->outstanding().begin()->first;
  EXPECT_EQ(d->outstanding().begin()->second.state, "RUNNING");
  ASSERT_TRUE(scancel(still));
  for (int i = 0; i < 100 && !d->outstanding().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_TRUE(d->step());
  }
  EXPECT_TRUE(d->outstanding().empty());
  // batch.jsonl: two submitted, one cancelled as not needed, one ended CANCELLED.
  std::ifstream in(tmp / "slurm/batch.jsonl");
  int submitted = 0, unneeded = 0, cancelled = 0;
  for (std::string line; std::getline(in, line);) {
    auto e = nlohmann::json::parse(line);
    submitted += e["event"] == "submitted";
    unneeded += e.value("why", "").find("no queued job needs it") != std::string::npos;
    cancelled += e["event"] == "ended" && e.value("state", "") == "CANCELLED";
  }
  EXPECT_EQ(submitted, 2);
  EXPECT_EQ(unneeded, 1);
  EXPECT_EQ(cancelled, 1) << "how the running one ended, as scontrol told it";
  // A restarted dispatcher finds nothing out.
  auto again = Dispatcher::open(o, **db, *repo);
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->outstanding().empty());
}

}  // namespace
}  // namespace kzoo::slurm
