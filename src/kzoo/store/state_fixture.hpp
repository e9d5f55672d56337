// The fixture of the state's tests: each test runs once on SQLite and once on
// a real PostgreSQL (pg_test_server.hpp), on a fresh database and a clock the
// test sets (`now`). Where PostgreSQL is missing the PostgreSQL half is
// skipped, and under CI=true it fails (util/test_prerequisite.hpp).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "kzoo/store/pg_state.hpp"
#include "kzoo/store/pg_test_server.hpp"
#include "kzoo/store/sqlite_state.hpp"
#include "kzoo/store/test_support.hpp"
#include "kzoo/util/test_prerequisite.hpp"

namespace kzoo::store::testing {

enum class Engine { sqlite, postgresql };

inline std::string engine_name(const ::testing::TestParamInfo<Engine>& i) {
  return i.param == Engine::sqlite ? "sqlite" : "postgresql";
}

class StateTest : public ::testing::TestWithParam<Engine> {
 protected:
  void SetUp() override {
    if (GetParam() == Engine::postgresql) {
      KZOO_REQUIRE_PREREQUISITE(pg_unavailable());
      url = pg_fresh_database();
      ASSERT_FALSE(url.empty()) << "PostgreSQL did not start (its log is above)";
    } else {
      url = tmp / "state.db";
    }
    db = open();
    ASSERT_TRUE(db);
  }

  // Another connection to the test's database, on the test's clock.
  std::unique_ptr<StateDb> open() {
    auto r = try_open(url);
    if (!r) ADD_FAILURE() << r.error().message;
    return r ? std::move(*r) : nullptr;
  }
  StateResult<std::unique_ptr<StateDb>> try_open(const std::string& at) {
    return GetParam() == Engine::sqlite ? open_sqlite_state_db(at, sqlite_options()) : open_pg_state_db(at, pg_options());
  }
  // The engine alone, for statements the interfaces never run.
  std::unique_ptr<sql::Conn> raw() { return raw_at(url); }
  std::unique_ptr<sql::Conn> raw_at(const std::string& at) {
    auto r = GetParam() == Engine::sqlite ? open_sqlite_conn(at, sqlite_options()) : open_pg_conn(at, pg_options());
    if (!r) ADD_FAILURE() << r.error().message;
    return r ? std::move(*r) : nullptr;
  }
  // Another database, empty.
  std::string fresh_database() {
    static int n = 0;
    return GetParam() == Engine::sqlite ? tmp / ("other-" + std::to_string(n++) + ".db") : pg_fresh_database();
  }
  std::span<const sql::Migration> migrations() const {
    return GetParam() == Engine::sqlite ? sqlite_migrations() : pg_migrations();
  }

  // A received submission.
  Submission submit(std::string kernel = "cuda/softmax", std::string who = "alice") {
    auto s = db->create_submission({kernel, who, "faster", "/uploads/x.tar.gz", kSha});
    EXPECT_TRUE(s) << s.error().message;
    return *s;
  }
  // A submission with its job, queued.
  Job queued(int max_attempts = 3) {
    auto j = db->enqueue(submit().id, max_attempts);
    EXPECT_TRUE(j) << j.error().message;
    return *j;
  }
  // A queued job of a submission that came with token `token_id` and `bytes` of package.
  std::int64_t submit_with(const std::string& token_id, std::int64_t bytes, bool held = false) {
    auto s = db->create_submission({"cuda/softmax", "ann", "", "/u/x.tar.gz", kSha, token_id, bytes});
    EXPECT_TRUE(s) << s.error().message;
    auto j = db->enqueue(s->id, 3, held);
    EXPECT_TRUE(j) << j.error().message;
    return j->id;
  }
  static Token token(const std::string& id, const std::string& user, TokenKind kind = TokenKind::person,
                     const std::string& label = "") {
    Token t;
    t.id = id;
    t.user = user;
    t.kind = kind;
    t.label = label;
    t.hash = std::string(32, 'h');
    return t;
  }
  // "who action" of every audit row, oldest first.
  std::vector<std::string> actions() {
    std::vector<std::string> out;
    auto log = db->audit_log({INT64_MAX, 1000, std::nullopt});  // kept: a range-for over *temporary would dangle
    for (const auto& e : *log) out.insert(out.begin(), e.who + " " + e.action);
    return out;
  }
  State submission_state(std::int64_t id) { return db->get_submission(id)->state; }
  State job_state(std::int64_t id) { return db->get_job(id)->state; }
  static Completion accepted() { return {Outcome::accepted, {{"speedup", 1.5}}, {{"accept", true}}, {}, kCommit}; }

  static inline const std::string kSha = std::string(64, 'a');
  static inline const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

  TempDir tmp;
  std::string url;  // a SQLite path or a PostgreSQL URL
  std::atomic<UnixMs> now{1'700'000'000'000};
  std::unique_ptr<StateDb> db;

 private:
  SqliteOptions sqlite_options() {
    SqliteOptions o;
    o.synchronous_full = false;
    o.clock = [this] { return now.load(); };
    return o;
  }
  PgOptions pg_options() {
    PgOptions o;
    o.clock = [this] { return now.load(); };
    return o;
  }
};

#define KZOO_ON_BOTH_ENGINES(Suite)                                                                      \
  INSTANTIATE_TEST_SUITE_P(Engines, Suite,                                                               \
                           ::testing::Values(::kzoo::store::testing::Engine::sqlite,                     \
                                             ::kzoo::store::testing::Engine::postgresql),                \
                           ::kzoo::store::testing::engine_name)

#define EXPECT_REFUSED(expr, kind_)                                                                 \
  do {                                                                                              \
    auto r_ = (expr);                                                                               \
    ASSERT_FALSE(r_) << #expr " should have been refused";                                          \
    EXPECT_EQ(to_string(r_.error().kind), to_string(StateError::kind_)) << r_.error().message;      \
  } while (0)

}  // namespace kzoo::store::testing
