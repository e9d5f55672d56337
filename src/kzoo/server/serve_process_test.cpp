// `kzoo serve` as a child process: killed mid-upload it leaves nothing a
// restart could take for a submission; SIGTERM stops it cleanly.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include <gtest/gtest.h>

#include "kzoo/server/client.hpp"
#include "kzoo/server/test_support.hpp"

namespace kzoo::server {
namespace {

using namespace testing;
namespace fs = std::filesystem;

struct Child {
  pid_t pid = -1;
  int port = 0;
};

// Starts `kzoo serve` and reads the port from its "listening on" line.
Child start_serve(const std::string& data, const std::string& catalog) {
  int out[2];
  if (pipe(out) != 0) throw std::runtime_error("pipe");
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(out[1], 1);
    close(out[0]);
    execl(KZOO_BINARY, KZOO_BINARY, "serve", "--data", data.c_str(), "--catalog", catalog.c_str(), "--listen",
          "127.0.0.1:0", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  FILE* f = fdopen(out[0], "r");
  char line[512] = {0};
  if (!fgets(line, sizeof line, f)) throw std::runtime_error("kzoo serve printed nothing");
  fclose(f);
  std::string s(line);
  auto colon = s.rfind(':', s.find(" (data"));
  c.port = std::stoi(s.substr(colon + 1));
  return c;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool has_incoming(const fs::path& uploads) {
  for (auto& e : fs::directory_iterator(uploads))
    if (e.path().filename().string().rfind(".incoming-", 0) == 0) return true;
  return false;
}

TEST(ServeProcess, KilledMidUploadLeavesNoSubmissionAndNoStaleFile) {
  TempDir tmp;
  write_catalog(tmp.path() / "catalog");
  const std::string data = tmp / "data";
  Child c = start_serve(data, tmp / "catalog");

  std::string body = multipart({{"kernel_id", kKernelId}, {"submitter_id", "a"}, {"package_filename", "p.tar.gz"}},
                               std::string(40000, 'x'));
  RawConn conn(c.port);
  ASSERT_TRUE(conn.send(post_head(body.size(), bearer_header(make_token(data, "a"))) + body.substr(0, body.size() / 2)));
  // Wait until the server is writing the file part, then kill it.
  auto uploads = fs::path(data) / "uploads";
  for (int i = 0; i < 200 && !has_incoming(uploads); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(has_incoming(uploads)) << "the upload never reached the disk";
  kill(c.pid, SIGKILL);
  EXPECT_EQ(wait_exit(c.pid), 128 + SIGKILL);

  Child again = start_serve(data, tmp / "catalog");
  EXPECT_FALSE(has_incoming(uploads));
  EXPECT_TRUE(fs::is_empty(uploads));
  auto s = http_get("http://127.0.0.1:" + std::to_string(again.port), "/api/submissions/1");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->status, 404) << s->text;
  kill(again.pid, SIGTERM);
  EXPECT_EQ(wait_exit(again.pid), 0) << "SIGTERM must stop kzoo serve cleanly";
}

TEST(ServeProcess, ASecondServerOnTheSameDataDirectoryIsRefused) {
  TempDir tmp;
  write_catalog(tmp.path() / "catalog");
  Child c = start_serve(tmp / "data", tmp / "catalog");
  auto r = store::testing::sh(std::string(KZOO_BINARY) + " serve --listen 127.0.0.1:0 --data " + (tmp / "data"));
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.out.find("another kzoo serve"), std::string::npos) << r.out;
  kill(c.pid, SIGINT);
  EXPECT_EQ(wait_exit(c.pid), 0);
}

}  // namespace
}  // namespace kzoo::server
