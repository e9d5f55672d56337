// Pull requests and route merges under malformed and hostile input: every
// refusal is a 4xx JSON error that names the field, and changes nothing.
#include "kzoo/server/hostile_fixture.hpp"

namespace kzoo::server {
namespace {

using namespace testing;
using nlohmann::json;

using HostilePullsTest = HostileFixture;

// POST a body with Content-Length `length` and no bytes of it: what a client
// about to send a 10 MB comment hears before it sends any.
std::string head_only(int port, const std::string& path, const std::string& token, std::size_t length) {
  RawConn c(port);
  c.send("POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + bearer_header(token) +
         "Content-Length: " + std::to_string(length) + "\r\n\r\n");
  return c.read_response();
}

TEST_F(HostilePullsTest, ACommentUpToItsLimitOf10000BytesIsStoredWhole) {
  const std::int64_t pr = open_pull();
  const std::string comments = fmt::format("/api/pulls/{}/comments", pr);
  std::string accents;
  for (int i = 0; i < 5000; ++i) accents += "\xc3\xa9";  // é: 10000 bytes, sent as \u00e9 escapes by some clients
  for (const std::string& text : {std::string(10000, 'x'), accents}) {
    auto a = send("POST", comments, member_, {{"body", text}});
    ASSERT_EQ(a.status, 201) << a.text.substr(0, 300);
    EXPECT_EQ(a.body["body"], text);
  }
  // Escaped the way a strict ASCII client sends it: six bytes per character on the wire.
  std::string escaped = "{\"body\": \"";
  for (int i = 0; i < 5000; ++i) escaped += "\\u00e9";
  escaped += "\"}";
  auto a = send("POST", comments, member_, nullptr, escaped);
  ASSERT_EQ(a.status, 201) << a.text.substr(0, 300);
  auto shown = send("GET", fmt::format("/api/pulls/{}", pr), "");
  ASSERT_EQ(shown.body["comments"].size(), 3u);
  EXPECT_EQ(shown.body["comments"][2]["body"], accents) << "stored whole, not truncated";
}

TEST_F(HostilePullsTest, ACommentOverItsLimitIsRefusedNamingTheLimitAndChangesNothing) {
  const std::int64_t pr = open_pull();
  const std::string comments = fmt::format("/api/pulls/{}/comments", pr);
  const std::string before = snapshot();
  auto a = send("POST", comments, member_, {{"body", std::string(10001, 'x')}});
  EXPECT_EQ(a.status, 400) << a.text.substr(0, 300);
  EXPECT_EQ(error_of(a)["field"], "body");
  EXPECT_NE(a.text.find("10000"), std::string::npos) << a.text;
  // 10 MB: refused from its Content-Length, before a byte of it is sent.
  auto r = head_only(svc_->port(), comments, member_, 10u << 20);
  EXPECT_EQ(RawConn::status_of(r), 413) << r;
  EXPECT_NE(r.find("\"too_large\""), std::string::npos) << r;
  EXPECT_NE(r.find("10000 bytes"), std::string::npos) << "the refusal says what a comment may be: " << r;
  EXPECT_EQ(snapshot(), before);
}

TEST_F(HostilePullsTest, MalformedOrMistypedCommentBodiesAre400AndChangeNothing) {
  const std::int64_t pr = open_pull();
  const std::string comments = fmt::format("/api/pulls/{}/comments", pr);
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "[";
  for (int i = 0; i < 200; ++i) deep += "]";
  // {raw body, the field the error must name ("" for a body that is not a JSON object at all)}
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},
      {"not json", ""},
      {"{\"body\": \"abc", ""},
      {"[]", ""},
      {"null", ""},
      {"\"text\"", ""},
      {"{\"body\": \"a\", \"body\": \"b\"}", ""},  // a duplicate key: which one would be stored?
      {"{\"body\": [" + deep + "]}", ""},
      {"{\"body\": \"\xff\xfe\"}", ""},
      {"{\"body\": \"\\ud800\"}", ""},
      {"{\"body\": 5}", "body"},
      {"{\"body\": [\"a\"]}", "body"},
      {"{\"body\": null}", "body"},
      {"{\"body\": {\"a\": 1}}", "body"},
      {"{\"body\": true}", "body"},
      {"{}", "body"},
      {"{\"body\": \"x\", \"kind\": 5}", "kind"},
      {"{\"body\": \"x\", \"kind\": \"veto\"}", "kind"},
      {"{\"body\": \"x\", \"kind\": null}", "kind"},
  };
  const std::string before = snapshot();
  for (const auto& [raw, field] : cases) {
    auto a = send("POST", comments, member_, nullptr, raw);
    EXPECT_EQ(a.status, 400) << raw << ": " << a.text;
    auto e = error_of(a);
    EXPECT_FALSE(e.value("message", "").empty()) << raw;
    if (!field.empty()) {
      EXPECT_EQ(e["field"], field) << raw << ": " << a.text;
    }
  }
  EXPECT_EQ(snapshot(), before);
}

// Text that is stored and later printed on someone's terminal or page may
// not carry control characters: ESC starts terminal escape sequences, CR
// rewrites the line shown, NUL cuts C strings short.
TEST_F(HostilePullsTest, ControlCharactersInACommentAreRefusedNamingTheFieldAndTheFix) {
  const std::int64_t pr = open_pull();
  const std::string comments = fmt::format("/api/pulls/{}/comments", pr);
  const std::string before = snapshot();
  for (const std::string& text : {std::string("looks fine\x1b[2J\x1b]0;pwned\x07"), std::string("a\0b", 3),
                                  std::string("approved\rrejected"), std::string("bell\x07"), std::string("del\x7f"),
                                  std::string("c1 csi \xc2\x9b" "31m")}) {
    auto a = send("POST", comments, member_, {{"body", text}});
    EXPECT_EQ(a.status, 400) << json(text).dump() << ": " << a.text;
    auto e = error_of(a);
    EXPECT_EQ(e["field"], "body") << a.text;
    EXPECT_NE(a.text.find("control character"), std::string::npos) << a.text;
    EXPECT_NE(a.text.find("line breaks"), std::string::npos) << "the message says what may be sent: " << a.text;
  }
  EXPECT_EQ(snapshot(), before);
  // Line breaks and tabs are text.
  const std::string multiline = "first line\n\tindented\nthird";
  auto ok = send("POST", comments, member_, {{"body", multiline}});
  ASSERT_EQ(ok.status, 201) << ok.text;
  EXPECT_EQ(send("GET", fmt::format("/api/pulls/{}", pr), "").body["comments"][0]["body"], multiline);
}

TEST_F(HostilePullsTest, ACloseReasonIsCheckedLikeACommentAndARefusedCloseLeavesThePullOpen) {
  const std::int64_t pr = open_pull();
  const std::string close = fmt::format("/api/pulls/{}/close", pr);
  const std::string before = snapshot();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", ""},
      {"[\"why\"]", ""},
      {"{\"why\": 5}", "why"},
      {"{\"why\": [\"x\"]}", "why"},
      {"{\"why\": {\"a\": 1}}", "why"},
      {json{{"why", std::string(1001, 'x')}}.dump(), "why"},
      {json{{"why", "fine\x1b[31m red"}}.dump(), "why"},
      {json{{"why", std::string("cut\0off", 7)}}.dump(), "why"},
      {json{{"why", "one\rtwo"}}.dump(), "why"},
  };
  for (const auto& [raw, field] : cases) {
    auto a = send("POST", close, member_, nullptr, raw);
    EXPECT_EQ(a.status, 400) << raw << ": " << a.text;
    auto e = error_of(a);
    if (!field.empty()) {
      EXPECT_EQ(e["field"], field) << raw << ": " << a.text;
    }
  }
  EXPECT_EQ(snapshot(), before);
  EXPECT_EQ(db_->get_pull(pr)->state, store::PullState::open);
  // A reason of exactly 1000 bytes is kept whole.
  const std::string why(1000, 'w');
  auto closed = send("POST", close, member_, {{"why", why}});
  ASSERT_EQ(closed.status, 200) << closed.text;
  EXPECT_EQ(db_->get_submission(pr)->reasons, std::vector<std::string>{why});
}

TEST_F(HostilePullsTest, ADecidedPullRequestIsNotDecidedAgain) {
  const std::int64_t merged = open_pull();
  ASSERT_EQ(send("POST", fmt::format("/api/pulls/{}/merge", merged), member_).status, 200);
  std::string before = snapshot();
  for (const char* verb : {"merge", "close"}) {
    for (const std::string* tok : {&member_, &maintainer_}) {
      auto a = send("POST", fmt::format("/api/pulls/{}/{}", merged, verb), *tok);
      EXPECT_EQ(a.status, 409) << verb << ": " << a.text;
      EXPECT_EQ(error_of(a)["code"], "decided") << a.text;
      EXPECT_NE(a.text.find("merged already"), std::string::npos) << a.text;
    }
  }
  EXPECT_EQ(snapshot(), before);

  auto second = submit(outsider_, {{"route", "ann-fast"}, {"pull_request", "true"}});
  ASSERT_EQ(second.status, 202) << second.text;
  const std::int64_t closed = second.body["id"];
  ASSERT_EQ(send("POST", fmt::format("/api/pulls/{}/close", closed), outsider_).status, 200);
  before = snapshot();
  for (const char* verb : {"merge", "close"}) {
    auto a = send("POST", fmt::format("/api/pulls/{}/{}", closed, verb), maintainer_);
    EXPECT_EQ(a.status, 409) << verb << ": " << a.text;
    EXPECT_EQ(error_of(a)["code"], "decided") << a.text;
  }
  EXPECT_EQ(snapshot(), before);
}

TEST_F(HostilePullsTest, IdsThatAreNotAPositiveDecimalNumberOfAPullRequestAre404) {
  const std::int64_t pr = open_pull();
  const std::string before = snapshot();
  for (const std::string& id : {std::string("0"), std::string("-1"), std::string("5abc"), std::string("1e3"),
                                std::string("99999999999999999999"), std::string("9223372036854775808"),
                                std::string("999999999999999999"), std::string("%2e%2e"), std::string("1%2F..%2F2"),
                                std::string("+1"), std::string("%20") + std::to_string(pr),
                                std::to_string(pr) + "%20", std::to_string(pr) + "abc"}) {
    for (const char* suffix : {"", "/merge", "/close", "/comments"}) {
      const std::string path = "/api/pulls/" + id + suffix;
      auto a = send(*suffix ? "POST" : "GET", path, maintainer_, {{"body", "x"}, {"why", "x"}});
      EXPECT_EQ(a.status, 404) << path << ": " << a.text;
      EXPECT_FALSE(error_of(a).value("message", "").empty()) << path;
    }
  }
  // Path tricks reach no other pull request either. (An encoded slash is a
  // slash: httplib decodes the path before routing, so /api/pulls/5%2Fmerge
  // is the merge route, asked and authorized as such.)
  for (const std::string& path : {fmt::format("/api/pulls/{}/../{}/merge", pr + 1, pr),
                                  fmt::format("/api/pulls/{}/merge/", pr), fmt::format("/api/pulls/{}/./merge", pr)}) {
    auto a = send("POST", path, maintainer_);
    EXPECT_EQ(a.status, 404) << path << ": " << a.text;
  }
  EXPECT_EQ(snapshot(), before);
  auto list = send("GET", "/api/pulls?state=bogus", "");
  EXPECT_EQ(list.status, 400) << list.text;
  EXPECT_EQ(error_of(list)["field"], "state");
}

TEST_F(HostilePullsTest, ARouteMergeToABadTargetOrFromABadNameIsRefusedAndChangesNothing) {
  ASSERT_TRUE(db_->ensure_route("ann-fast", "ann"));
  auto repo = store::KernelRepo::open(tmp_ / "data/kernel_data.git");
  ASSERT_TRUE(repo->set_ref("refs/heads/routes/ann-fast", *repo->head("refs/heads/main")));
  ASSERT_TRUE(repo->commit_files("routes/ann-fast", {{kKernelId + "/src/softmax.py", "def softmax(x):\n    return x\n"}},
                                 "ann's", {"ann", "ann@x"}));
  const std::string merge = "/api/routes/ann-fast/merge";
  const std::string before = snapshot();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", ""},
      {"[\"main\"]", ""},
      {"{\"into\": 5}", "into"},
      {"{\"into\": null}", "into"},
      {"{\"into\": [\"main\"]}", "into"},
      {"{\"into\": \"\"}", "into"},
      {"{\"into\": \"Main\"}", "into"},
      {"{\"into\": \"../main\"}", "into"},
      {"{\"into\": \"a..b\"}", "into"},
      {"{\"into\": \"x.lock\"}", "into"},
      {"{\"into\": \"routes/x\"}", "into"},
      {"{\"into\": \"x\\u0000y\"}", "into"},
      {json{{"into", std::string(200, 'a')}}.dump(), "into"},
      {"{\"into\": \"ann-fast\"}", "into"},
  };
  for (const auto& [raw, field] : cases) {
    auto a = send("POST", merge, member_, nullptr, raw);
    EXPECT_EQ(a.status, 400) << raw << ": " << a.text;
    auto e = error_of(a);
    if (!field.empty()) {
      EXPECT_EQ(e["field"], field) << raw << ": " << a.text;
    }
  }
  // Names in the path that are no route's.
  for (const std::string& name : {std::string("a..b"), std::string("x.lock"), std::string("..%2Fmain"),
                                  std::string("ann-fast%2F..%2Fmain"), std::string("ann%20fast"), std::string("ANN"),
                                  std::string(70, 'a'), std::string("%00")}) {
    auto a = send("POST", "/api/routes/" + name + "/merge", member_, {{"into", "main"}});
    EXPECT_EQ(a.status, 404) << name << ": " << a.text;
    error_of(a);
  }
  EXPECT_EQ(snapshot(), before);
}

}  // namespace
}  // namespace kzoo::server
