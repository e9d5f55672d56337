// What only the SQLite engine promises (sqlite_state.hpp): WAL mode.
#include <SQLiteCpp/Database.h>
#include <gtest/gtest.h>

#include "kzoo/store/sqlite_state.hpp"
#include "kzoo/store/test_support.hpp"

namespace kzoo::store {
namespace {

TEST(SqliteState, OpensInWalMode) {
  testing::TempDir tmp;
  auto db = open_sqlite_state_db(tmp / "state.db");
  ASSERT_TRUE(db) << db.error().message;
  SQLite::Database raw(tmp / "state.db", SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA journal_mode").getString(), "wal");
}

}  // namespace
}  // namespace kzoo::store
