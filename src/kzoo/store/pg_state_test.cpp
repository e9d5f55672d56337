// What only the PostgreSQL engine promises (pg_state.hpp), on a real server:
// leases measured by the database's clock, claims that skip a job another
// connection has locked instead of waiting for it, and errors that name the
// database without its password.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "kzoo/store/open_state.hpp"
#include "kzoo/store/state_fixture.hpp"

namespace kzoo::store {
namespace {

class PgStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    KZOO_REQUIRE_PREREQUISITE(testing::pg_unavailable());
    url = testing::pg_fresh_database();
    ASSERT_FALSE(url.empty()) << "PostgreSQL did not start (its log is above)";
  }
  std::string url;
};

TEST_F(PgStateTest, LeasesRunOnTheDatabasesClock) {
  auto db = open_state(url);  // no test clock: the database's
  ASSERT_TRUE(db) << db.error().message;
  auto raw = open_pg_conn(url);
  ASSERT_TRUE(raw);
  auto s = (*db)->create_submission({"k", "alice", "", "/p", std::string(64, 'a')});
  ASSERT_TRUE(s && (*db)->enqueue(s->id));
  const UnixMs before = (*raw)->query("SELECT CAST(floor(extract(epoch FROM clock_timestamp()) * 1000) AS BIGINT)").at(0).i64(0);
  auto j = (*db)->claim_job("w1", 60);
  ASSERT_TRUE(j && *j) << (j ? "" : j.error().message);
  const UnixMs after = (*db)->now();
  EXPECT_GE(*(*j)->lease_expires_at, before + 60'000);
  EXPECT_LE(*(*j)->lease_expires_at, after + 60'000);
  EXPECT_TRUE((*db)->requeue_expired((*db)->now())->empty());
  EXPECT_EQ((*db)->requeue_expired(*(*j)->lease_expires_at)->size(), 1u);
}

TEST_F(PgStateTest, AClaimSkipsAJobAnotherConnectionHoldsInsteadOfWaiting) {
  auto db = open_state(url);
  ASSERT_TRUE(db) << db.error().message;
  std::int64_t first = 0, second = 0;
  for (std::int64_t* id : {&first, &second}) {
    auto s = (*db)->create_submission({"k", "alice", "", "/p", std::string(64, 'a')});
    auto j = (*db)->enqueue(s->id);
    ASSERT_TRUE(j);
    *id = j->id;
  }
  // Another connection locks the oldest queued job and keeps its transaction open.
  std::mutex m;
  std::condition_variable cv;
  bool locked = false, release = false;
  std::thread holder([&] {
    auto raw = open_pg_conn(url);
    ASSERT_TRUE(raw);
    (*raw)->write([&] {
      (*raw)->query("SELECT id FROM jobs WHERE id=$1 FOR UPDATE", {first});
      std::unique_lock lk(m);
      locked = true;
      cv.notify_all();
      cv.wait(lk, [&] { return release; });
    });
  });
  {
    std::unique_lock lk(m);
    cv.wait(lk, [&] { return locked; });
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto c = (*db)->claim_job("w1", 60);
  const auto waited = std::chrono::steady_clock::now() - t0;
  {
    std::lock_guard lk(m);
    release = true;
  }
  cv.notify_all();
  holder.join();
  ASSERT_TRUE(c && *c) << (c ? "nothing claimed" : c.error().message);
  EXPECT_EQ((*c)->id, second) << "the locked job was skipped, not waited for";
  EXPECT_LT(waited, std::chrono::seconds(2));
  auto next = (*db)->claim_job("w2", 60);
  ASSERT_TRUE(next && *next);
  EXPECT_EQ((*next)->id, first) << "once unlocked, the skipped job is claimed";
}

TEST(PgStateErrors, AnUnreachableServerIsBusyAndNamedWithoutItsPassword) {
  auto db = open_state("postgresql://kzoo:s3cret@/kzoo?host=/nonexistent-kzoo-dir&port=1");
  ASSERT_FALSE(db);
  EXPECT_EQ(db.error().kind, StateError::busy) << db.error().message;
  EXPECT_EQ(db.error().message.find("s3cret"), std::string::npos) << db.error().message;
  EXPECT_NE(db.error().message.find("kzoo:***@"), std::string::npos) << db.error().message;
}

}  // namespace
}  // namespace kzoo::store
