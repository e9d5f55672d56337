// The HTTP API against a real server on 127.0.0.1, a real SQLite database and
// a real git repository initialised from a catalog built by the test.
#include "kzoo/server/service.hpp"

#include <regex>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include "kzoo/package/tarball.hpp"
#include "kzoo/server/client.hpp"
#include "kzoo/server/test_support.hpp"
#include "kzoo/store/kernel_repo.hpp"
#include "kzoo/store/open_state.hpp"

namespace kzoo::server {
namespace {

using namespace testing;
namespace fs = std::filesystem;

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_catalog(tmp_.path() / "catalog");
    ServerConfig cfg = default_config([](const std::string&) { return std::nullopt; });
    cfg.data_dir = tmp_ / "data";
    cfg.catalog = tmp_ / "catalog";
    cfg.listen_port = 0;
    cfg.max_upload_bytes = 64 * 1024;  // small, so the cap is cheap to cross
    cfg.threads = 4;
    svc_ = std::make_unique<RunningService>(cfg);
    token_ = make_token(tmp_ / "data");
  }

  Answer upload(const std::map<std::string, std::string>& files, const std::string& kernel_id = kKernelId,
                std::map<std::string, std::string> fields = {}) {
    auto tgz = package::package_tarball_bytes(tree_of(files), kernel_id);
    EXPECT_TRUE(tgz) << tgz.error().message;
    std::map<std::string, std::string> f = {{"kernel_id", kKernelId},
                                            {"submitter_id", "alice"},
                                            {"package_filename", "softmax.tar.gz"},
                                            {"optimization_summary", "fused max and sum"}};
    for (auto& [k, v] : fields) f[k] = v;
    auto a = upload_submission(svc_->url(), f, *tgz, "softmax.tar.gz", {}, 120, token_);
    EXPECT_TRUE(a) << a.error().message;
    return *a;
  }
  Answer get(const std::string& path) {
    auto a = http_get(svc_->url(), path);
    EXPECT_TRUE(a) << a.error().message;
    return *a;
  }
  std::vector<std::string> upload_dir() {
    std::vector<std::string> names;
    for (auto& e : fs::directory_iterator(tmp_.path() / "data" / "uploads")) names.push_back(e.path().filename());
    return names;
  }
  std::string raw(const std::string& request) {
    RawConn c(svc_->port());
    c.send(request);
    return c.read_response();
  }

  TempDir tmp_;
  std::unique_ptr<RunningService> svc_;
  std::string token_;
};

TEST_F(ServiceTest, AValidUploadIsQueuedWithOneJobAndStoredUnderItsDigest) {
  auto a = upload(package_files());
  ASSERT_EQ(a.status, 202) << a.text;
  EXPECT_EQ(a.body["state"], "queued");
  auto id = a.body["id"].get<std::int64_t>();
  EXPECT_EQ(a.body["links"]["self"], "/api/submissions/" + std::to_string(id));

  auto db = store::open_state(store::default_state_url((tmp_.path() / "data").string()));
  ASSERT_TRUE(db);
  EXPECT_EQ(*(*db)->count_jobs(store::State::queued), 1);
  auto s = (*db)->get_submission(id);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->submitter_id, "alice");
  EXPECT_EQ(s->summary, "fused max and sum");
  EXPECT_TRUE(fs::is_regular_file(s->package_path));
  EXPECT_EQ(s->sha256, a.body["sha256"]);
  auto names = upload_dir();
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].substr(0, 64), s->sha256);

  auto g = get("/api/submissions/" + std::to_string(id));
  ASSERT_EQ(g.status, 200);
  EXPECT_EQ(g.body["state"], "queued");
  EXPECT_EQ(g.body["final"], false);
  ASSERT_EQ(g.body["jobs"].size(), 1u);
  EXPECT_EQ(g.body["jobs"][0]["state"], "queued");
}

TEST_F(ServiceTest, AContentLengthOverTheCapIs413BeforeAnyBodyIsSent) {
  auto r = raw(post_head(100u << 20, bearer_header(token_)));
  EXPECT_EQ(RawConn::status_of(r), 413) << r;
  EXPECT_NE(r.find("\"too_large\""), std::string::npos);
}

// A client that sends its whole body before reading (as curl without "Expect:
// 100-continue" and git pushing a pack do) must read the refusal, not a
// reset: the server reads the rest of a refused body before it closes. The
// body is several times what the sockets' buffers hold, so a server that
// closed at the cap would fail one of these sends.
TEST_F(ServiceTest, AnUploadOverTheCapSentWholeStillReadsIts413) {
  const std::size_t size = 24u << 20;
  RawConn c(svc_->port());
  ASSERT_TRUE(c.send(post_head(size, bearer_header(token_))));
  const std::string piece(64 * 1024, 'x');
  for (std::size_t sent = 0; sent < size; sent += piece.size())
    ASSERT_TRUE(c.send(piece.substr(0, std::min(piece.size(), size - sent))))
        << "the server stopped reading after " << sent << " bytes";
  auto r = c.read_response();
  EXPECT_EQ(RawConn::status_of(r), 413) << r;
  EXPECT_NE(r.find("over this route's cap of"), std::string::npos) << r;
}

TEST_F(ServiceTest, APushOverTheCapSentInChunksStillReadsIts413NamingTheSizeAndTheCap) {
  RawConn c(svc_->port());
  ASSERT_TRUE(c.send("POST /git/kernel_data/git-receive-pack HTTP/1.1\r\nHost: x\r\n" + bearer_header(token_) +
                     "Content-Type: application/x-git-receive-pack-request\r\nTransfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = "10000\r\n" + std::string(0x10000, 'p') + "\r\n";  // 64 KiB, as git sends
  const int chunks = 384;                                                        // 24 MiB
  for (int i = 0; i < chunks; ++i)
    ASSERT_TRUE(c.send(chunk)) << "the server stopped reading after " << i << " chunks";
  ASSERT_TRUE(c.send("0\r\n\r\n"));
  auto r = c.read_response();
  ASSERT_EQ(RawConn::status_of(r), 413) << r;
  const std::uint64_t cap = 64 * 1024 + (1u << 20);  // max_upload_bytes + 1 MiB
  EXPECT_NE(r.find(fmt::format("the push of {} bytes is over the cap of {} bytes", chunks * 0x10000, cap)),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("push fewer or smaller files"), std::string::npos) << r;
  EXPECT_NE(r.find("Connection: close"), std::string::npos) << r;
}

TEST_F(ServiceTest, AFilePartOverTheCapIs413AndLeavesNoFile) {
  // Within the request cap (file cap + multipart allowance), over the file cap.
  std::string body = multipart({{"kernel_id", kKernelId}, {"submitter_id", "a"}, {"package_filename", "p.tar.gz"}},
                               std::string(100 * 1024, 'x'));
  auto r = raw(post_head(body.size(), bearer_header(token_)) + body);
  EXPECT_EQ(RawConn::status_of(r), 413) << r;
  EXPECT_NE(r.find("\"field\":\"package\""), std::string::npos) << r;
  EXPECT_TRUE(upload_dir().empty());
}

TEST_F(ServiceTest, AChunkedBodyIsRefusedBeforeTheServerReadsIt) {
  RawConn c(svc_->port());
  c.send("POST /api/submissions HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=XB\r\n"
         "Transfer-Encoding: chunked\r\n\r\n10\r\n0123456789abcdef\r\n");
  // The body never ends (no 0-chunk): an answer proves nothing waited for it.
  auto r = c.read_response();
  EXPECT_EQ(RawConn::status_of(r), 411) << r;
  EXPECT_NE(r.find("Content-Length"), std::string::npos);
  auto m = get("/metrics");
  EXPECT_NE(m.text.find("kzoo_upload_bytes_total 0\n"), std::string::npos) << m.text;
}

TEST_F(ServiceTest, AnEncodedBodyIsRefused) {
  std::string body = multipart({}, "x");
  auto r = raw(post_head(body.size(), "Content-Encoding: gzip\r\n" + bearer_header(token_)) + body);
  EXPECT_EQ(RawConn::status_of(r), 415) << r;
  EXPECT_NE(r.find("encoding_refused"), std::string::npos);
}

TEST_F(ServiceTest, MalformedMultipartIs400) {
  std::string body = "this is not multipart at all, no boundary anywhere";
  auto r = raw(post_head(body.size(), bearer_header(token_)) + body);
  EXPECT_EQ(RawConn::status_of(r), 400) << r;
  EXPECT_TRUE(upload_dir().empty());
}

TEST_F(ServiceTest, AMissingFieldIs400NamingIt) {
  std::string body = multipart({{"submitter_id", "alice"}, {"package_filename", "p.tar.gz"}}, "x");
  auto r = raw(post_head(body.size(), bearer_header(token_)) + body);
  EXPECT_EQ(RawConn::status_of(r), 400) << r;
  EXPECT_NE(r.find("\"field\":\"kernel_id\""), std::string::npos) << r;
}

// The submitter is the token's owner (docs/SECURITY.md); the envelope's field
// may only repeat it.
TEST_F(ServiceTest, ASubmitterIdOtherThanTheTokensOwnerIs403) {
  auto a = upload(package_files(), kKernelId, {{"submitter_id", "alice smith"}});
  EXPECT_EQ(a.status, 403) << a.text;
  EXPECT_EQ(a.body["error"]["code"], "submitter_mismatch");
  EXPECT_EQ(a.body["error"]["field"], "submitter_id");
  EXPECT_TRUE(upload_dir().empty());
}

TEST_F(ServiceTest, APackageFilenameThatIsNotTarGzIs400) {
  auto a = upload(package_files(), kKernelId, {{"package_filename", "softmax.zip"}});
  EXPECT_EQ(a.status, 400) << a.text;
  EXPECT_EQ(a.body["error"]["field"], "package_filename");
}

TEST_F(ServiceTest, AnUnknownKernelIs422AndRecordsNothing) {
  auto a = upload(package_files("hopper/norm/nope"), "hopper/norm/nope", {{"kernel_id", "hopper/norm/nope"}});
  EXPECT_EQ(a.status, 422) << a.text;
  EXPECT_EQ(a.body["error"]["code"], "unknown_kernel");
  EXPECT_EQ(get("/api/submissions/1").status, 404);
  EXPECT_TRUE(upload_dir().empty());
}

TEST_F(ServiceTest, AWrongTopLevelDirectoryIsRejectedNamingTheRule) {
  auto a = upload(package_files(), "hopper/norm/softmax/fp32/other");
  ASSERT_EQ(a.status, 422) << a.text;
  EXPECT_EQ(a.body["error"]["code"], "package_invalid");
  EXPECT_NE(a.text.find("tar.top-level"), std::string::npos) << a.text;
  // Recorded as rejected with its reasons; the bytes are not kept.
  auto g = get("/api/submissions/" + std::to_string(a.body["error"]["id"].get<int>()));
  EXPECT_EQ(g.body["state"], "rejected");
  ASSERT_FALSE(g.body["reasons"].empty());
  EXPECT_NE(g.body["reasons"][0].get<std::string>().find("tar.top-level"), std::string::npos);
  EXPECT_TRUE(upload_dir().empty());
}

TEST_F(ServiceTest, EvidenceInsideIsRejectedWithEveryViolation) {
  auto files = package_files();
  files["src/weights.npy"] = std::string("\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", 70);
  files["src/run.log"] = "step 1 loss 0.5\n";
  auto a = upload(files);
  ASSERT_EQ(a.status, 422) << a.text;
  const auto& vs = a.body["error"]["violations"];
  ASSERT_GE(vs.size(), 2u) << a.text;
  for (const auto& v : vs) EXPECT_EQ(v["rule"].get<std::string>().rfind("evidence.", 0), 0u) << v;
  auto db = store::open_state(store::default_state_url((tmp_.path() / "data").string()));
  EXPECT_EQ(*(*db)->count_jobs(store::State::queued), 0);
}

TEST_F(ServiceTest, KernelRoutesReadTheRepositoryAtHead) {
  auto l = get("/api/kernels");
  ASSERT_EQ(l.status, 200);
  ASSERT_EQ(l.body["kernels"].size(), 1u);
  EXPECT_EQ(l.body["kernels"][0]["kernel_id"], kKernelId);
  EXPECT_EQ(l.body["kernels"][0]["summary"], "Row softmax");
  EXPECT_EQ(l.body["kernels"][0]["metrics"]["small"]["metrics_best"]["latency_us"], 181.2);

  auto k = get("/api/kernels/" + kKernelId);
  ASSERT_EQ(k.status, 200) << k.text;
  EXPECT_EQ(k.body["desc"]["name"], "softmax");
  EXPECT_EQ(k.body["history"].size(), 1u);
  EXPECT_EQ(get("/api/kernels/hopper/none").status, 404);
}

TEST_F(ServiceTest, AJobLogIs404UntilItsEvidenceIsRecorded) {
  auto a = upload(package_files());
  ASSERT_EQ(a.status, 202);
  std::string path = "/api/jobs/" + std::to_string(a.body["job_id"].get<int>()) + "/log";
  auto before = get(path);
  EXPECT_EQ(before.status, 404);
  EXPECT_EQ(before.body["error"]["code"], "no_log");
  auto repo = store::KernelRepo::open((tmp_.path() / "data" / "kernel_data.git").string());
  ASSERT_TRUE(repo);
  ASSERT_TRUE(repo->record_job_evidence(std::to_string(a.body["job_id"].get<int>()),
                                        {{"stderr.log", "building...\nok\n"}}));
  auto after = get(path);
  EXPECT_EQ(after.status, 200);
  EXPECT_EQ(after.text, "building...\nok\n");
  EXPECT_EQ(get("/api/jobs/999/log").body["error"]["code"], "unknown_job");
}

TEST_F(ServiceTest, HealthAndUnknownRoutesAnswerJson) {
  EXPECT_EQ(get("/healthz").body["status"], "ok");
  auto n = get("/no/such/route");
  EXPECT_EQ(n.status, 404);
  EXPECT_EQ(n.body["error"]["code"], "not_found");
}

TEST_F(ServiceTest, MetricsAreValidPrometheusText) {
  ASSERT_EQ(upload(package_files()).status, 202);
  get("/api/kernels");
  // A request is counted once its response is written, just after the client
  // may already have read it: wait for the count to show.
  const std::string kernels_line = R"(kzoo_http_requests_total{route="/api/kernels",method="GET",status="200"} 1)";
  Answer m;
  for (int i = 0; i < 100; ++i) {
    m = get("/metrics");
    if (m.text.find(kernels_line) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(m.status, 200);
  std::regex sample(R"(^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*"(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")*\})? -?[0-9.eE+-]+$)");
  std::istringstream lines(m.text);
  std::string line;
  int samples = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    EXPECT_TRUE(std::regex_match(line, sample)) << line;
    ++samples;
  }
  EXPECT_GT(samples, 5);
  EXPECT_NE(m.text.find("kzoo_queue_depth 1\n"), std::string::npos) << m.text;
  EXPECT_NE(m.text.find("kzoo_submissions_total{outcome=\"queued\"} 1\n"), std::string::npos);
  EXPECT_NE(m.text.find(kernels_line), std::string::npos) << m.text;
}

TEST_F(ServiceTest, TheOpenApiDocumentDescribesEveryRoute) {
  auto doc = nlohmann::json::parse(openapi_json());
  for (const auto& r : routes()) {
    std::string method = r.method == "GET" ? "get" : "post";
    EXPECT_TRUE(doc["paths"].contains(r.path)) << r.path;
    EXPECT_TRUE(doc["paths"][r.path].contains(method)) << r.method << " " << r.path;
  }
  std::size_t operations = 0;  // a path may have several methods (GET and POST /api/submissions)
  for (const auto& [path, ops] : doc["paths"].items()) operations += ops.size();
  EXPECT_EQ(operations, routes().size()) << "every operation the document describes is a route";
  EXPECT_EQ(get("/api/openapi.json").body, doc);
}

}  // namespace
}  // namespace kzoo::server
