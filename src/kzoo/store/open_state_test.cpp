// The one constructor of the state (open_state.hpp): the configuration's URL
// chooses the engine; anything else is refused with the forms it takes.
#include <gtest/gtest.h>

#include "kzoo/store/open_state.hpp"
#include "kzoo/store/state_fixture.hpp"

namespace kzoo::store {
namespace {

TEST(OpenState, ASqliteUrlOpensTheFileItNames) {
  testing::TempDir tmp;
  auto db = open_state(default_state_url(tmp.path().string()));
  ASSERT_TRUE(db) << db.error().message;
  EXPECT_EQ((*db)->describe(), tmp / "state.db");
  EXPECT_TRUE(std::filesystem::exists(tmp / "state.db"));
}

TEST(OpenState, APostgresqlUrlOpensPostgresql) {
  KZOO_REQUIRE_PREREQUISITE(testing::pg_unavailable());
  const std::string url = testing::pg_fresh_database();
  ASSERT_FALSE(url.empty());
  auto db = open_state(url);
  ASSERT_TRUE(db) << db.error().message;
  EXPECT_EQ((*db)->describe(), url);
  ASSERT_TRUE((*db)->add_user("ann", Role::member));
  auto again = open_state(url);
  ASSERT_TRUE(again);
  EXPECT_TRUE((*again)->get_user("ann")) << "the second connection sees the first's commit";
}

TEST(OpenState, AnythingElseIsRefusedNamingTheForms) {
  for (std::string bad : {"", "state.db", "sqlite:", "mysql://db/kzoo", "postgresql:/x"}) {
    auto db = open_state(bad);
    ASSERT_FALSE(db) << bad;
    EXPECT_EQ(db.error().kind, StateError::invalid);
    EXPECT_NE(db.error().message.find("sqlite:PATH"), std::string::npos) << db.error().message;
    EXPECT_NE(db.error().message.find("postgresql://"), std::string::npos) << db.error().message;
  }
}

TEST(OpenState, PasswordsNeverReachMessages) {
  EXPECT_EQ(redact_state_url("postgresql://kzoo:pw@db.example:5432/kzoo"), "postgresql://kzoo:***@db.example:5432/kzoo");
  EXPECT_EQ(redact_state_url("postgresql://kzoo@db/kzoo"), "postgresql://kzoo@db/kzoo");
  EXPECT_EQ(redact_state_url("sqlite:/a:b@c"), "sqlite:/a:b@c");
}

}  // namespace
}  // namespace kzoo::store
