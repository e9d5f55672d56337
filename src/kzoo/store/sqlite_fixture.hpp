// A fresh SQLite state database for each test, on a clock the test sets
// (`now`), without fsync: the fixture of the store's SQLite tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "kzoo/store/sqlite_state_db.hpp"
#include "kzoo/store/test_support.hpp"

namespace kzoo::store::testing {

class SqliteFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    SqliteOptions o;
    o.synchronous_full = false;
    o.clock = [this] { return now; };
    auto r = open_sqlite_state_db(path, o);
    ASSERT_TRUE(r) << r.error().message;
    db = std::move(*r);
  }

  TempDir tmp;
  std::string path = tmp / "state.db";
  UnixMs now = 1'700'000'000'000;
  std::unique_ptr<StateDb> db;
};

}  // namespace kzoo::store::testing
