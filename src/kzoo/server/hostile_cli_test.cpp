// The access and pull-request verbs of the kzoo binary under malformed
// arguments: a usage error naming the argument, never an internal error,
// and nothing issued or sent.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include "kzoo/server/hostile_fixture.hpp"

namespace kzoo::server {
namespace {

using namespace testing;

struct Run {
  int code = -1;
  std::string out, err;
};

// The kzoo binary with exactly these arguments (bytes as they are: no shell
// between), no $KZOO_TOKEN unless given.
Run kzoo(const std::vector<std::string>& args, const std::string& dir, const std::string& token = "") {
  std::vector<char*> argv{const_cast<char*>(KZOO_BINARY)};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::string tok = "KZOO_TOKEN=" + token;
  std::vector<char*> envp{const_cast<char*>("PATH=/usr/bin:/bin"), const_cast<char*>("HOME=/tmp")};
  if (!token.empty()) envp.push_back(tok.data());
  envp.push_back(nullptr);
  const std::string out = dir + "/cli.out", err = dir + "/cli.err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = -1;
  Run r;
  if (posix_spawn(&pid, KZOO_BINARY, &fa, nullptr, argv.data(), envp.data()) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  posix_spawn_file_actions_destroy(&fa);
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

using HostileCliTest = HostileFixture;

// An empty --agent or --runner name is a mistake (an unset variable in a
// script), never a request for a person's token, which may do far more.
TEST_F(HostileCliTest, AnEmptyAgentOrRunnerNameIssuesNoTokenRatherThanAPersonsToken) {
  const std::string data = tmp_ / "data";
  const std::string before = snapshot();
  for (const char* flag : {"--agent", "--runner"}) {
    auto r = kzoo({"token", "new", "mia", flag, "", "--data", data}, tmp_.path().string());
    EXPECT_NE(r.code, 0) << flag << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << flag << " printed a token: " << r.out;
    EXPECT_NE(r.err.find("name"), std::string::npos) << r.err;
  }
  EXPECT_EQ(snapshot(), before);
  auto ok = kzoo({"token", "new", "ann", "--agent", "claude", "--data", data}, tmp_.path().string());
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// Arguments that go to the server as JSON text must be UTF-8: the verb says
// which one is not, instead of failing inside the JSON library.
TEST_F(HostileCliTest, TextArgumentsThatAreNotUtf8AreUsageErrorsNamingTheArgument) {
  const std::int64_t pr = open_pull();
  const std::string id = std::to_string(pr), url = svc_->url(), bad = "caf\xe9 \xff";
  const std::string before = snapshot();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"comment", id, bad, "--server", url}, "text"},
      {{"close", id, "--why", bad, "--server", url}, "--why"},
      {{"merge-route", bad, "--into", "main", "--server", url}, "route"},
      {{"merge-route", "ann-fast", "--into", bad, "--server", url}, "--into"},
      {{"approve", bad, "--server", url}, "commit"},
  };
  for (const auto& [args, name] : cases) {
    auto r = kzoo(args, tmp_.path().string(), member_);
    EXPECT_EQ(r.code, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("UTF-8"), std::string::npos) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(name), std::string::npos) << args[0] << " names " << name << ": " << r.err;
  }
  EXPECT_EQ(snapshot(), before);
}

// An id past what the server's ids can be (18 digits) used to be clamped
// to 9223372036854775807 and sent, to come back as "no route".
TEST_F(HostileCliTest, AnIdThatIsNotAPositiveNumberIsAUsageErrorNeverClampedOrSent) {
  const std::string url = svc_->url();
  const std::string before = snapshot();
  for (const char* id : {"0", "-1", "5abc", "99999999999999999999", "1000000000000000000", "5/../6", " 5", "05x"}) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"pull", id}, {"merge", id}, {"close", id}, {"comment", id, "looks good"},
          {"release", id}}) {
      std::vector<std::string> argv = args;
      argv.insert(argv.end(), {"--server", url});
      auto r = kzoo(argv, tmp_.path().string(), maintainer_);
      EXPECT_EQ(r.code, 2) << args[0] << " " << id << ": " << r.err;
      EXPECT_EQ(r.err.find("HTTP"), std::string::npos) << args[0] << " " << id << " was sent: " << r.err;
      EXPECT_EQ(r.err.find("9223372036854775807"), std::string::npos) << args[0] << " " << id << ": " << r.err;
    }
  }
  EXPECT_EQ(snapshot(), before);
}

// A route name with '/' or ".." would reach the server as another path.
TEST_F(HostileCliTest, AMergeRouteNameThatIsNoRoutesIsAUsageErrorNamingTheArgument) {
  const std::string url = svc_->url();
  const std::string before = snapshot();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"merge-route", "../main", "--into", "main"}, "route"},
      {{"merge-route", "ann-fast/../x", "--into", "main"}, "route"},
      {{"merge-route", "a..b", "--into", "main"}, "route"},
      {{"merge-route", "Ann Fast", "--into", "main"}, "route"},
      {{"merge-route", "ann-fast", "--into", "routes/x"}, "--into"},
      {{"merge-route", "ann-fast", "--into", "x.lock"}, "--into"},
      {{"merge-route", "ann-fast", "--into", ""}, "--into"},
  };
  for (const auto& [args, name] : cases) {
    std::vector<std::string> argv = args;
    argv.insert(argv.end(), {"--server", url});
    auto r = kzoo(argv, tmp_.path().string(), member_);
    EXPECT_EQ(r.code, 2) << args[1] << " " << args[3] << ": " << r.err;
    EXPECT_EQ(r.err.find("HTTP"), std::string::npos) << "sent: " << r.err;
    EXPECT_NE(r.err.find(name + ": is not"), std::string::npos) << r.err;
  }
  EXPECT_EQ(snapshot(), before);
}

// What kzoo pull prints was written by others: a pull request's summary (the
// submission's, which may hold any text), and comments stored before the
// server refused control characters. None of it may drive the terminal.
TEST_F(HostileCliTest, APullRequestIsShownWithoutTheControlCharactersThatWouldDriveATerminal) {
  ASSERT_EQ(submit(member_, {{"route", "ann-fast"}}).status, 202);
  auto opened = submit(outsider_, {{"route", "ann-fast"},
                                   {"pull_request", "true"},
                                   {"optimization_summary", "fused\x1b]0;owned\x07\x1b[2J\rrewritten"}});
  ASSERT_EQ(opened.status, 202) << opened.text;
  const std::int64_t pr = opened.body["id"];
  db_->set_actor({"ola", ""});
  ASSERT_TRUE(db_->add_comment(pr, store::ReviewKind::comment, "old\x1b[31m red \xc2\x9b" "0m\nsecond line\tok"));
  for (const std::vector<std::string>& args : {std::vector<std::string>{"pull", std::to_string(pr)},
                                               std::vector<std::string>{"pulls", "--route", "ann-fast"}}) {
    std::vector<std::string> argv = args;
    argv.insert(argv.end(), {"--server", svc_->url()});
    auto r = kzoo(argv, tmp_.path().string());
    ASSERT_EQ(r.code, 0) << args[0] << ": " << r.err;
    for (char c : {'\x1b', '\x07', '\r'}) EXPECT_EQ(r.out.find(c), std::string::npos) << args[0] << ": " << r.out;
    EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos) << args[0] << ": " << r.out;
    if (args[0] == "pull") {
      EXPECT_NE(r.out.find("fused?]0;owned??[2J?rewritten"), std::string::npos) << r.out;
      EXPECT_NE(r.out.find("old?[31m red ?0m\nsecond line\tok"), std::string::npos) << r.out;
    }
  }
}

}  // namespace
}  // namespace kzoo::server
