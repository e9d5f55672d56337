// The board's maintainer routes, the audit trail's query and the runner API
// under malformed and hostile input: each refusal is a 4xx JSON error naming
// the field, and changes nothing.
#include "kzoo/server/hostile_fixture.hpp"
#include "kzoo/jobs/wire.hpp"

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

class HostileRunnerTest : public HostileFixture {
 protected:
  // ann's submission, claimed by the runner as node-1; its job id.
  std::int64_t claim() {
    auto s = submit(member_);
    EXPECT_EQ(s.status, 202) << s.text;
    auto c = send("POST", "/api/runner/claim", runner_, {{"worker", "node-1"}, {"lease_seconds", 60}});
    EXPECT_EQ(c.status, 200) << c.text;
    return c.body["job"]["id"];
  }
};

TEST_F(HostileRunnerTest, ALeaseOutsideOneSecondToADayIsRefusedNotWrapped) {
  ASSERT_EQ(submit(member_).status, 202);
  const std::string before = snapshot();
  // 2^32 + 60 would be a lease of 60 s if cut to 32 bits.
  for (const char* l : {"4294967356", "18446744073709551615", "-4294967236", "0", "-1", "86401", "\"60\"", "60.5",
                        "null", "[60]"}) {
    const std::string raw = std::string("{\"worker\": \"node-1\", \"lease_seconds\": ") + l + "}";
    auto a = send("POST", "/api/runner/claim", runner_, nullptr, raw);
    EXPECT_EQ(a.status, 400) << raw << ": " << a.text;
    EXPECT_EQ(error_of(a)["field"], "lease_seconds") << raw << ": " << a.text;
    EXPECT_NE(a.text.find("86400"), std::string::npos) << a.text;
  }
  EXPECT_EQ(snapshot(), before) << "a refused claim claimed a job";
  const std::int64_t job = send("POST", "/api/runner/claim", runner_, {{"worker", "node-1"}, {"lease_seconds", 60}})
                               .body["job"]["id"];
  const std::string held = snapshot();
  auto hb = send("POST", fmt::format("/api/runner/jobs/{}/heartbeat", job), runner_, nullptr,
                 "{\"worker\": \"node-1\", \"lease_seconds\": 4294967297}");
  EXPECT_EQ(hb.status, 400) << hb.text;
  EXPECT_EQ(error_of(hb)["field"], "lease_seconds");
  EXPECT_EQ(snapshot(), held) << "a refused heartbeat moved the lease";
}

TEST_F(HostileRunnerTest, AWorkerNameOrBodyThatIsNotOneIsRefused) {
  ASSERT_EQ(submit(member_).status, 202);
  const std::string before = snapshot();
  for (const std::string& raw :
       {std::string("not json"), std::string("[]"), std::string("null"), std::string("{}"), std::string("{\"worker\": 5}"),
        std::string("{\"worker\": \"\"}"), std::string("{\"worker\": \"a/b\"}"), std::string("{\"worker\": \"a\\u001bb\"}"),
        "{\"worker\": \"" + std::string(101, 'w') + "\"}", std::string("{\"worker\": [\"w\"]}")}) {
    auto a = send("POST", "/api/runner/claim", runner_, nullptr, raw);
    EXPECT_EQ(a.status, 400) << raw << ": " << a.text;
    error_of(a);
  }
  EXPECT_EQ(snapshot(), before);
  for (const char* id : {"0", "999999999999999999"}) {
    auto a = send("POST", fmt::format("/api/runner/jobs/{}/heartbeat", id), runner_, {{"worker", "node-1"}});
    EXPECT_EQ(a.status, 404) << id << ": " << a.text;
    EXPECT_EQ(error_of(a)["code"], "unknown_job");
  }
}

TEST_F(HostileRunnerTest, MistypedFieldsOfAnAcceptCompleteOrEvidenceAre400NotServerErrors) {
  const std::int64_t job = claim();
  const std::string base = fmt::format("/api/runner/jobs/{}", job);
  auto repo = store::KernelRepo::open(tmp_ / "data/kernel_data.git");
  const std::string head = *repo->head();
  auto ev = send("POST", base + "/evidence", runner_,
                 {{"worker", "node-1"}, {"message", "evidence"}, {"files", {{"stderr.log", jobs::base64_encode("ok\n")}}}});
  ASSERT_EQ(ev.status, 200) << ev.text;
  const std::string evidence = ev.body["commit"];
  const json doc = {{"cases", {{{"test_case_id", "small"}, {"status", "ok"}, {"correct", true}, {"metrics", {{"latency_us", 150.0}}}}}}};
  auto accept = [&](const json& author) {
    return json{{"worker", "node-1"}, {"message", "softmax: fused\n"}, {"measured_at", head},
                {"benchmark_output", doc}, {"evidence_commit", evidence}, {"author", author}};
  };
  const std::string before = snapshot();
  for (const json& author : {json{{"name", 5}}, json{{"name", nullptr}}, json{{"name", json::array()}}, json("ann"),
                             json(5), json::array()}) {
    auto a = send("POST", base + "/accept", runner_, accept(author));
    EXPECT_EQ(a.status, 400) << author.dump() << ": " << a.text;
    EXPECT_EQ(error_of(a)["field"], "author") << a.text;
  }
  for (const json& completion : {json{{"outcome", 5}}, json{{"outcome", nullptr}}, json{{"outcome", {"accepted"}}},
                                 json{{"outcome", "accepted"}, {"accepted_commit", 5}},
                                 json{{"outcome", "failed"}, {"reasons", "not a list"}}, json(nullptr), json("accepted")}) {
    auto a = send("POST", base + "/complete", runner_, {{"worker", "node-1"}, {"completion", completion}});
    EXPECT_EQ(a.status, 400) << completion.dump() << ": " << a.text;
    EXPECT_EQ(error_of(a)["field"], "completion") << a.text;
  }
  for (const json& files : {json{{"../x", jobs::base64_encode("x")}}, json{{"a", 5}}, json{{"a", "!!!not base64"}},
                            json::object(), json::array(), json("stderr.log")}) {
    auto a = send("POST", base + "/evidence", runner_, {{"worker", "node-1"}, {"message", "m"}, {"files", files}});
    EXPECT_EQ(a.status, 400) << files.dump() << ": " << a.text;
    EXPECT_EQ(error_of(a)["field"], "files") << a.text;
  }
  // A message that is no text is refused, not recorded as an empty one.
  for (const json& message : {json(5), json::array(), json::object()}) {
    auto a = send("POST", base + "/evidence", runner_,
                  {{"worker", "node-1"}, {"message", message}, {"files", {{"stderr.log", jobs::base64_encode("x")}}}});
    EXPECT_EQ(a.status, 400) << message.dump() << ": " << a.text;
    EXPECT_EQ(error_of(a)["field"], "message") << a.text;
  }
  EXPECT_EQ(snapshot(), before);
  // The job is still the runner's to finish.
  auto ok = send("POST", base + "/accept", runner_, accept(json{{"name", "ann"}}));
  EXPECT_EQ(ok.status, 200) << ok.text;
}

TEST_F(HostileRunnerTest, ARecoveryScanThatIsNotOneToTenThousandCommitsIsRefusedNotGuessed) {
  const std::int64_t job = claim();
  const std::string recovery = fmt::format("/api/runner/jobs/{}/recovery", job);
  for (const char* scan : {"abc", "0", "-5", "10001", "5abc", "", "99999999999999999999999", "1e3"}) {
    auto a = send("GET", recovery + "?scan=" + scan, runner_);
    EXPECT_EQ(a.status, 400) << scan << ": " << a.text;
    EXPECT_EQ(error_of(a)["field"], "scan") << scan << ": " << a.text;
  }
  for (const char* scan : {"1", "200", "10000"}) EXPECT_EQ(send("GET", recovery + "?scan=" + scan, runner_).status, 200) << scan;
}

}  // namespace
}  // namespace kzoo::server
