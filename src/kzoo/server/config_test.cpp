#include "kzoo/server/config.hpp"

#include <map>

#include <gtest/gtest.h>

namespace kzoo::server {
namespace {

EnvLookup env_of(std::map<std::string, std::string> m) {
  return [m](const std::string& k) -> std::optional<std::string> {
    auto it = m.find(k);
    if (it == m.end()) return std::nullopt;
    return it->second;
  };
}

TEST(Config, DefaultsListenOnLoopbackAndLiveUnderTheUsersDataHome) {
  auto c = default_config(env_of({{"HOME", "/home/u"}}));
  EXPECT_EQ(c.listen_host, "127.0.0.1");
  EXPECT_EQ(c.listen_port, 8321);
  EXPECT_EQ(c.data_dir, "/home/u/.local/share/kzoo");
  EXPECT_TRUE(check_config(c));
}

TEST(Config, TheFileThenTheEnvironmentOverrideDefaults) {
  auto c = default_config(env_of({}));
  ASSERT_TRUE(apply_config_file(R"({"listen": "0.0.0.0:9000", "threads": 3})", "k.json", c));
  EXPECT_EQ(c.listen_host, "0.0.0.0");
  EXPECT_EQ(c.threads, 3);
  ASSERT_TRUE(apply_env(env_of({{"KZOO_THREADS", "5"}, {"KZOO_LISTEN", "[::1]:80"}}), c));
  EXPECT_EQ(c.threads, 5);
  EXPECT_EQ(c.listen_host, "::1");
  EXPECT_EQ(c.listen_port, 80);
}

TEST(Config, UnknownKeysWrongTypesAndBadValuesAreErrorsNamingThem) {
  auto c = default_config(env_of({}));
  auto r = apply_config_file(R"({"thread": 3})", "k.json", c);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("unknown key \"thread\""), std::string::npos);
  r = apply_config_file(R"({"threads": "3"})", "k.json", c);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("threads"), std::string::npos);
  r = apply_env(env_of({{"KZOO_QUEUE_MAX", "lots"}}), c);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("KZOO_QUEUE_MAX"), std::string::npos);
  EXPECT_FALSE(parse_listen("8321", c));
  EXPECT_FALSE(parse_listen("h:70000", c));
  c.threads = 0;
  EXPECT_FALSE(check_config(c));
}

TEST(Config, AccessSettingsComeFromTheFileAndTheEnvironment) {
  auto c = default_config(env_of({}));
  EXPECT_FALSE(c.require_token_for_reads);  // reads are public by default
  ASSERT_TRUE(apply_config_file(R"({"require_token_for_reads": true, "limit_submissions_per_hour": 5,
                                    "limit_concurrent_jobs": 2, "limit_upload_bytes_per_day": 1000,
                                    "limit_comments_per_hour": 7})",
                                "k.json", c));
  EXPECT_TRUE(c.require_token_for_reads);
  EXPECT_EQ(c.limit_submissions_per_hour, 5);
  EXPECT_EQ(c.limit_concurrent_jobs, 2);
  EXPECT_EQ(c.limit_upload_bytes_per_day, 1000);
  EXPECT_EQ(c.limit_comments_per_hour, 7);
  ASSERT_TRUE(apply_env(env_of({{"KZOO_REQUIRE_TOKEN_FOR_READS", "false"}, {"KZOO_LIMIT_CONCURRENT_JOBS", "3"}}), c));
  EXPECT_FALSE(c.require_token_for_reads);
  EXPECT_EQ(c.limit_concurrent_jobs, 3);
  auto r = apply_config_file(R"({"require_token_for_reads": "yes"})", "k.json", c);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("require_token_for_reads"), std::string::npos);
  r = apply_env(env_of({{"KZOO_REQUIRE_TOKEN_FOR_READS", "maybe"}}), c);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("KZOO_REQUIRE_TOKEN_FOR_READS"), std::string::npos);
  c.limit_submissions_per_hour = -1;
  EXPECT_FALSE(check_config(c));
}

TEST(Config, TheWrittenFormReadsBackTheSame) {
  auto c = default_config(env_of({}));
  c.max_upload_bytes = 1 << 20;
  c.listen_port = 9999;
  c.require_token_for_reads = true;
  c.limit_upload_bytes_per_day = 12345;
  auto d = default_config(env_of({}));
  ASSERT_TRUE(apply_config_file(to_json(c).dump(), "k.json", d));
  EXPECT_EQ(to_json(d), to_json(c));
}

}  // namespace
}  // namespace kzoo::server
