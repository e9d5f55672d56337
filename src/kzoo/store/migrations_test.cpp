// Schema migrations (sql_state.hpp migrate), on SQLite and on PostgreSQL:
// numbered, applied once each, refused when the database is newer than this
// kzoo, rolled back whole when one fails, and applied once by concurrent
// first opens.
#include <gtest/gtest.h>

#include <thread>

#include "kzoo/store/state_fixture.hpp"

namespace kzoo::store {
namespace {

using testing::StateTest;

class MigrationsTest : public StateTest {
 protected:
  std::int64_t applied(sql::Conn& c) { return c.query("SELECT count(*) FROM schema_version").at(0).i64(0); }
};
KZOO_ON_BOTH_ENGINES(MigrationsTest);

TEST(Migrations, BothEnginesNumberAndDescribeTheSameMigrations) {
  auto a = sqlite_migrations();
  auto b = pg_migrations();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].version, static_cast<int>(i + 1)) << "numbered 1, 2, 3... without gaps";
    EXPECT_EQ(a[i].version, b[i].version);
    EXPECT_EQ(a[i].description, b[i].description);
  }
}

TEST_P(MigrationsTest, OpensAtTheNewestSchemaVersion) {
  EXPECT_EQ(db->schema_version(), migrations().back().version);
  auto c = raw();
  ASSERT_TRUE(c);
  EXPECT_EQ(applied(*c), static_cast<std::int64_t>(migrations().size()));
}

TEST_P(MigrationsTest, ReopeningAppliesNoMigrationTwiceAndKeepsData) {
  auto s = submit();
  db.reset();
  for (int i = 0; i < 3; ++i) {
    auto again = open();
    ASSERT_TRUE(again);
    EXPECT_EQ(again->get_submission(s.id)->kernel_id, "cuda/softmax");
  }
  auto c = raw();
  ASSERT_TRUE(c);
  EXPECT_EQ(applied(*c), static_cast<std::int64_t>(migrations().size()));
}

TEST_P(MigrationsTest, RefusesADatabaseWrittenByANewerKzoo) {
  db.reset();
  raw()->exec("INSERT INTO schema_version VALUES (999, 'from the future', 0)");
  auto r = try_open(url);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, StateError::io);
  EXPECT_NE(r.error().message.find("999"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("newer"), std::string::npos) << r.error().message;
}

TEST_P(MigrationsTest, AFailingMigrationRollsBackEntirely) {
  auto c = raw_at(fresh_database());
  ASSERT_TRUE(c);
  const sql::Migration list[] = {{1, "one", "CREATE TABLE a(x INTEGER);"},
                                 {2, "two", "CREATE TABLE b(x INTEGER); INSERT INTO nowhere VALUES (1);"}};
  auto r = sql::migrate(*c, list);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("migration 2 (two)"), std::string::npos) << r.error().message;
  EXPECT_EQ(c->query("SELECT max(version) FROM schema_version").at(0).i64(0), 1);
  EXPECT_THROW(c->query("SELECT count(*) FROM b"), sql::EngineFailure) << "the half-applied migration left nothing behind";
  const sql::Migration fixed[] = {{1, "one", "CREATE TABLE a(x INTEGER);"}, {2, "two", "CREATE TABLE b(x INTEGER);"}};
  EXPECT_EQ(*sql::migrate(*c, fixed), 2);
}

// Migration 10 records the GPUs of one node each job needs. A version-9
// database's graded jobs need one, so any GPU runner takes them as before; a
// batch job needs the GPUs it asked for; and the claim filters on both.
TEST_P(MigrationsTest, Migration10GivesGradedJobsOneGpuAndBatchJobsTheirOwn) {
  const std::string at = fresh_database();
  auto conn = raw_at(at);
  ASSERT_TRUE(conn);
  auto old = sql::migrate(*conn, migrations().first(9));
  ASSERT_TRUE(old) << old.error().message;
  ASSERT_EQ(*old, 9);
  conn->exec("INSERT INTO submissions(kernel_id, submitter_id, package_path, sha256, created_at, updated_at, state) "
             "VALUES ('cuda/softmax', 'ann', '/u/x', $1, 1, 1, 'queued')",
             {std::string(64, 'a')});
  conn->exec("INSERT INTO jobs(submission_id, state, max_attempts, created_at, requires_cc) "
             "VALUES (1, 'queued', 3, 1, 90)");
  conn->exec("INSERT INTO jobs(submission_id, state, max_attempts, created_at, kind) VALUES (NULL, 'queued', 3, 2, 'batch')");
  conn->exec("INSERT INTO batch_jobs(job_id, owner, name, script, script_text, partition_name, time_s, cpus, memory_mb, "
             "gpus, base_commit, package_path, sha256) VALUES (2, 'ann', 'job.sbatch', 'job.sbatch', 'echo hi', 'main', "
             "60, 1, 1024, 4, $1, '/u/b', $2)",
             {std::string(40, 'b'), std::string(64, 'c')});
  conn.reset();
  auto opened = try_open(at);
  ASSERT_TRUE(opened) << opened.error().message;
  auto& d = **opened;
  EXPECT_EQ(d.schema_version(), 10);
  auto graded = d.get_job(1);
  ASSERT_TRUE(graded) << graded.error().message;
  EXPECT_EQ(graded->requires_gpus, 1);
  EXPECT_EQ(graded->requires_cc, 90) << "what migration 8 recorded stays";
  auto batch = d.get_job(2);
  ASSERT_TRUE(batch) << batch.error().message;
  EXPECT_EQ(batch->requires_gpus, 4);
  auto claimed = d.claim_job("node-2/gpu0", 60, {.compute_capability = 90, .gpus = 2});
  ASSERT_TRUE(claimed && *claimed) << (claimed ? "nothing claimed" : claimed.error().message);
  EXPECT_EQ((*claimed)->id, 1);
  EXPECT_EQ(d.get_job(2)->passed_over.rfind("node-2/gpu0 (2 GPUs) at ", 0), 0u) << d.get_job(2)->passed_over;
  EXPECT_ANY_THROW(raw_at(at)->exec("UPDATE jobs SET requires_gpus = -1 WHERE id = 2"))
      << "the schema holds a job's GPUs to zero or more";
}

TEST_P(MigrationsTest, ConcurrentFirstOpensApplyEachMigrationOnce) {
  const std::string at = fresh_database();
  std::vector<std::thread> threads;
  std::atomic<int> opened{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      auto r = try_open(at);
      if (r && (*r)->schema_version() == migrations().back().version) ++opened;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(opened, 4);
  auto c = raw_at(at);
  ASSERT_TRUE(c);
  EXPECT_EQ(applied(*c), static_cast<std::int64_t>(migrations().size()));
}

}  // namespace
}  // namespace kzoo::store
