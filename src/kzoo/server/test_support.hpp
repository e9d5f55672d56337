// Helpers for the server's tests and benchmark: a kernel_data catalog with
// one valid package built on disk, a Service running on an ephemeral port,
// and raw-socket requests for the hostile cases a well-behaved client cannot
// send.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "kzoo/access/token.hpp"
#include "kzoo/package/package_tree.hpp"
#include "kzoo/server/service.hpp"
#include "kzoo/store/open_state.hpp"
#include "kzoo/store/test_support.hpp"

namespace kzoo::server::testing {

using store::testing::TempDir;
using store::testing::write_file;

inline const std::string kKernelId = "hopper/norm/softmax/fp32/triton";

inline std::map<std::string, std::string> package_files(const std::string& kernel_id = kKernelId) {
  auto meta = [](const std::string& id) {
    return R"({"test_case_id": ")" + id + R"(", "params": {"workload": "synthetic", "shape": {"M": 64, "N": 64}},
     "primary_metric": "latency_us", "metrics": [{"name": "latency_us", "unit": "us", "direction": "lower"}],
     "tolerance": {"correctness_atol": 1e-3, "correctness_rtol": 1e-3}})";
  };
  return {
      {".kernel_package/desc.yaml", R"(schema_version: "1"
name: softmax
category: {arch: hopper, op_class: norm, sub_class: softmax, quant: fp32}
summary: Row softmax
description: Softmax over the last dimension of a 2-D fp32 tensor.
io_signature:
  - {name: x, direction: in, dtype: float32, shape: [M, N]}
  - {name: y, direction: out, dtype: float32, shape: [M, N]}
quantization: {scheme: none}
reference_sources:
  - {kind: task, ref: softmax}
)"},
      {".kernel_package/bench_result.yaml", "schema_version: \"1\"\nkernel_id: " + kernel_id +
                                                "\ncases:\n  - test_case_id: small\n    metrics_best: {latency_us: 181.2}\n"
                                                "    metrics_current: {latency_us: 182.9}\n"},
      {".kernel_package/build_test_env.py", "from kzoo_judge.entry import build_test_env\nbuild_test_env()\n"},
      {".kernel_package/benchmark.py",
       "import sys\n\nKERNEL_ZOO_TEST_CASE_METAS = [" + meta("small") +
           "]\n\nif __name__ == \"__main__\":\n    from kzoo_judge.entry import run_package_benchmark\n"
           "    sys.exit(run_package_benchmark(KERNEL_ZOO_TEST_CASE_METAS))\n"},
      {"src/softmax.py", "import torch\n\n\ndef softmax(x):\n    return torch.softmax(x, dim=-1)\n"},
  };
}

inline package::PackageTree tree_of(const std::map<std::string, std::string>& files) {
  package::PackageTree t;
  std::set<std::string> dirs;
  for (const auto& [path, content] : files) {
    t.files.push_back({path, content, false});
    for (auto p = path.find('/'); p != std::string::npos; p = path.find('/', p + 1)) dirs.insert(path.substr(0, p));
  }
  t.dirs.assign(dirs.begin(), dirs.end());
  return t;
}

// A catalog kernel_data root at `root` holding the one valid package.
inline void write_catalog(const std::filesystem::path& root) {
  write_file(root / ".kernel_data", "");
  for (const auto& [path, content] : package_files()) write_file(root / kKernelId / path, content);
}

// A Service on 127.0.0.1:<ephemeral> over a fresh data directory, served by
// a background thread until destroyed.
class RunningService {
 public:
  explicit RunningService(ServerConfig cfg) : cfg_(std::move(cfg)) {
    auto s = Service::open(cfg_);
    if (!s) throw std::runtime_error(s.error().message);
    svc_ = std::move(*s);
    auto p = svc_->bind();
    if (!p) throw std::runtime_error(p.error().message);
    port_ = *p;
    thread_ = std::thread([this] { svc_->run(); });
  }
  ~RunningService() {
    svc_->stop();
    thread_.join();
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const ServerConfig& cfg() const { return cfg_; }

 private:
  ServerConfig cfg_;
  std::unique_ptr<Service> svc_;
  int port_ = 0;
  std::thread thread_;
};

// A TCP connection to 127.0.0.1:port for hand-made requests.
class RawConn {
 public:
  explicit RawConn(int port, int timeout_s = 10) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("connect failed");
    timeval tv{timeout_s, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    // A server that stops reading fails a test's send instead of hanging it.
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  }
  ~RawConn() { ::close(fd_); }
  bool send(const std::string& bytes) {
    std::size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<std::size_t>(n);
    }
    return true;
  }
  // Everything until the server closes or the timeout passes.
  std::string read_all() {
    std::string out;
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }
  // One response: the head, then Content-Length bytes of body (a refused
  // request's connection may stay open for keep-alive, so reading until
  // close would only measure the keep-alive timeout).
  std::string read_response() {
    std::string out;
    char buf[4096];
    std::size_t head_end = std::string::npos, want = 0;
    for (;;) {
      if (head_end == std::string::npos && (head_end = out.find("\r\n\r\n")) != std::string::npos) {
        head_end += 4;
        auto cl = out.find("Content-Length: ");
        want = head_end + (cl != std::string::npos && cl < head_end ? std::stoul(out.substr(cl + 16)) : 0);
      }
      if (head_end != std::string::npos && out.size() >= want) return out;
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) return out;
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  // The status code of the first response line ("HTTP/1.1 411 ..."), or -1.
  static int status_of(const std::string& response) {
    if (response.rfind("HTTP/1.", 0) != 0 || response.size() < 12) return -1;
    return std::stoi(response.substr(9, 3));
  }

 private:
  int fd_ = -1;
};

// Issues a token of `kind` to `user` (who must exist) in `db` and returns its
// text, the only time it is seen.
inline std::string issue_token(store::StateDb& db, const std::string& user, store::TokenKind kind,
                               const std::string& label = "", std::optional<store::UnixMs> expires = std::nullopt,
                               store::TokenLimits limits = {}) {
  auto t = access::new_token();
  if (!t) throw std::runtime_error(t.error().message);
  store::Token row;
  row.id = t->id;
  row.hash = t->hash;
  row.user = user;
  row.kind = kind;
  row.label = label;
  row.expires_at = expires;
  row.limits = limits;
  auto r = db.add_token(row);
  if (!r) throw std::runtime_error(r.error().message);
  return t->text;
}

// A token for `user` (added with `role` when absent) in the data directory
// `data_dir`, with limits high enough that tests never meet them unless
// they mean to.
inline std::string make_token(const std::string& data_dir, const std::string& user = "alice",
                              store::Role role = store::Role::member,
                              store::TokenKind kind = store::TokenKind::person, const std::string& label = "") {
  auto db = store::open_state(store::default_state_url(data_dir));
  if (!db) throw std::runtime_error(db.error().message);
  if (!(*db)->get_user(user)) (void)(*db)->add_user(user, role);
  return issue_token(**db, user, kind, label, std::nullopt, {1'000'000, 1'000'000, 1ll << 50});
}

inline std::string bearer_header(const std::string& token) { return "Authorization: Bearer " + token + "\r\n"; }

// A multipart/form-data body with boundary "XB".
inline std::string multipart(const std::map<std::string, std::string>& fields, const std::string& file,
                             const std::string& filename = "p.tar.gz") {
  std::string b;
  for (const auto& [k, v] : fields) b += "--XB\r\nContent-Disposition: form-data; name=\"" + k + "\"\r\n\r\n" + v + "\r\n";
  b += "--XB\r\nContent-Disposition: form-data; name=\"package\"; filename=\"" + filename +
       "\"\r\nContent-Type: application/gzip\r\n\r\n" + file + "\r\n--XB--\r\n";
  return b;
}

inline std::string post_head(std::size_t length, const std::string& extra = "") {
  return "POST /api/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: multipart/form-data; boundary=XB\r\n" +
         extra + "Content-Length: " + std::to_string(length) + "\r\n\r\n";
}

}  // namespace kzoo::server::testing
