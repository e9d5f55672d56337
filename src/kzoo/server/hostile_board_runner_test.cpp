// The board's maintainer routes and the audit trail's query under malformed
// and hostile input: each refusal is a 4xx JSON error naming
// the field, and changes nothing.
#include "kzoo/server/hostile_fixture.hpp"

namespace kzoo::server {
namespace {

using namespace testing;
using nlohmann::json;

using HostileBoardTest = HostileFixture;

TEST_F(HostileBoardTest, ABoardVersionOutsideOneToIntMaxIsRefusedNotWrappedOntoAnotherBoard) {
  const std::string before = snapshot();
  // 2^32 + 1 would read as version 1 if cut to 32 bits; 2^64 - 1 as -1.
  for (const char* v : {"4294967297", "18446744073709551615", "9223372036854775807", "-4294967295", "2147483648", "0",
                        "-1", "1.0", "1e0", "\"1\"", "true", "[1]", "{}"}) {
    const std::string raw = std::string("{\"status\": \"flawed\", \"version\": ") + v + "}";
    auto a = send("POST", "/api/board/status", maintainer_, nullptr, raw);
    EXPECT_TRUE(a.status == 400 || a.status == 404) << raw << ": " << a.status << " " << a.text;
    EXPECT_EQ(error_of(a)["field"], "version") << raw << ": " << a.text;
  }
  EXPECT_EQ(snapshot(), before);
  EXPECT_FALSE(*db_->board_status(1)) << "board v1's status was set by a request naming another version";
}

TEST_F(HostileBoardTest, ABoardStatusThatIsNotOneOfTheFourIsRefusedNamingThem) {
  const std::string before = snapshot();
  // {raw body, the field the error must name ("" for a body that is not a JSON object at all)}
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"status\": 5}", "status"},          {"{\"status\": null}", "status"},
      {"{}", "status"},                         {"{\"status\": \"\"}", "status"},
      {"{\"status\": \"ACTIVE\"}", "status"}, {"{\"status\": \"active\\u001b[2J\"}", "status"},
      {"{\"status\": \"quiet\"}", "status"},  {"{\"status\": [\"active\"]}", "status"},
      {"not json", ""},                         {"[]", ""},
      {"{\"status\": \"active\", \"status\": \"flawed\"}", ""},
  };
  for (const auto& [raw, field] : cases) {
    auto a = send("POST", "/api/board/status", maintainer_, nullptr, raw);
    EXPECT_EQ(a.status, 400) << raw << ": " << a.text;
    auto e = error_of(a);
    if (!field.empty()) {
      EXPECT_EQ(e["field"], field) << raw << ": " << a.text;
    }
  }
  EXPECT_EQ(snapshot(), before);
}

TEST_F(HostileBoardTest, ApprovingRulesAtSomethingThatIsNotACommitOfKernelDataMovesNoTag) {
  const std::string before = snapshot();
  for (const std::string& raw :
       {std::string("{\"commit\": 5}"), std::string("{}"), std::string("{\"commit\": \"\"}"),
        "{\"commit\": \"" + std::string(39, 'a') + "\"}", "{\"commit\": \"" + std::string(40, 'A') + "\"}",
        "{\"commit\": \"" + std::string(41, 'a') + "\"}", "{\"commit\": \"" + std::string(40, 'g') + "\"}",
        std::string("{\"commit\": \"HEAD\"}"), std::string("{\"commit\": \"main\"}"),
        std::string("{\"commit\": \"../../refs/heads/main\"}")}) {
    auto a = send("POST", "/api/board/checks", maintainer_, nullptr, raw);
    EXPECT_EQ(a.status, 400) << raw << ": " << a.text;
    EXPECT_EQ(error_of(a)["field"], "commit") << raw;
  }
  // Well-formed, but no commit of kernel_data.
  auto a = send("POST", "/api/board/checks", maintainer_, {{"commit", std::string(40, 'a')}});
  EXPECT_EQ(a.status, 422) << a.text;
  EXPECT_EQ(error_of(a)["field"], "commit");
  EXPECT_EQ(snapshot(), before);
}

TEST_F(HostileBoardTest, AnAuditQueryOutOfRangeIsRefusedNamingTheParameter) {
  for (const char* q : {"limit=abc", "limit=0", "limit=1001", "limit=5abc", "limit=-1", "limit=99999999999999999999",
                        "limit=", "limit=1e3"}) {
    auto a = send("GET", std::string("/api/audit?") + q, maintainer_);
    EXPECT_EQ(a.status, 400) << q << ": " << a.text;
    EXPECT_EQ(error_of(a)["field"], "limit") << q << ": " << a.text;
  }
  for (const char* q : {"before=abc", "before=0", "before=-5", "before=1x", "before=99999999999999999999"}) {
    auto a = send("GET", std::string("/api/audit?") + q, maintainer_);
    EXPECT_EQ(a.status, 400) << q << ": " << a.text;
    EXPECT_EQ(error_of(a)["field"], "before") << q << ": " << a.text;
  }
  // A user that does not exist, or a name no user could have, is an empty page, not an error.
  for (const char* q : {"who=nobody", "who=%1B%5B2J", "who=%00"}) {
    auto a = send("GET", std::string("/api/audit?") + q, maintainer_);
    EXPECT_EQ(a.status, 200) << q << ": " << a.text;
    EXPECT_TRUE(a.body["entries"].empty()) << q;
  }
}

}  // namespace
}  // namespace kzoo::server
