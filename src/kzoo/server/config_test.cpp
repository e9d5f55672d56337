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

TEST(Config, TheStateServerIdAndTrustedProxiesComeFromTheFileOrTheEnvironmentAndAreChecked) {
  auto c = default_config(env_of({}));
  c.data_dir = "/d";
  EXPECT_EQ(c.state_url(), "sqlite:/d/state.db") << "SQLite in the data directory unless configured";
  EXPECT_FALSE(c.server_id.empty()) << "the host name by default";
  ASSERT_TRUE(apply_config_file(R"({"state": "postgresql://kzoo@db/kzoo", "trusted_proxies": ["10.0.0.0/8"]})",
                                "k.json", c));
  EXPECT_EQ(c.state_url(), "postgresql://kzoo@db/kzoo");
  ASSERT_TRUE(apply_env(env_of({{"KZOO_SERVER_ID", "front-2"}, {"KZOO_TRUSTED_PROXIES", "10.0.0.5, fd00::/8"}}), c));
  EXPECT_EQ(c.server_id, "front-2");
  EXPECT_EQ(c.trusted_proxies, (std::vector<std::string>{"10.0.0.5", "fd00::/8"}));
  EXPECT_TRUE(check_config(c));
  auto j = to_json(c);
  EXPECT_EQ(j["state"], "postgresql://kzoo@db/kzoo") << "the deployment's state goes into kzoo.json";
  EXPECT_FALSE(j.contains("server_id")) << "each server's own id never does";
  auto bad = c;
  bad.state = "mysql://db";
  EXPECT_NE(check_config(bad).error().message.find("sqlite:PATH"), std::string::npos);
  bad = c;
  bad.server_id = "a b";
  EXPECT_NE(check_config(bad).error().message.find("server_id"), std::string::npos);
  bad = c;
  bad.trusted_proxies = {"10.0.0.0/40"};
  EXPECT_NE(check_config(bad).error().message.find("10.0.0.0/40"), std::string::npos);
  EXPECT_FALSE(apply_config_file(R"({"trusted_proxies": "10.0.0.1"})", "k.json", c)) << "a list, not a string";
}

}  // namespace
}  // namespace kzoo::server
