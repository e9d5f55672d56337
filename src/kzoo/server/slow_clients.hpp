// A bounded slow-client load on loopback, for the front door's test and its
// benchmark (tests/load/slow_clients.cpp): `count` connections to
// 127.0.0.1:port that either trickle header bytes without ever finishing a
// request ("trickle") or send one request and then sit on the kept-alive
// connection ("idle"). A connection the server closes is opened again, so
// the pressure stays at `count`. Loopback only, at most 20 000 connections
// and one hour; it stops by itself when the time is up.
//
// The connections come from distinct loopback source addresses
// (127.0.(1+s/250).(1+s%250) for source s, per_source connections each), the
// way many clients would, so a per-address cap does not refuse them all.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace kzoo::server::testing {

struct SlowLoadConfig {
  int port = 0;
  int count = 100;
  enum Mode { trickle, idle } mode = trickle;
  int interval_ms = 1000;  // trickle: one byte per connection per interval (spread evenly)
  double seconds = 10;     // stops by itself after this
  int per_source = 50;     // connections per loopback source address
  int first_source = 0;    // source addresses in use start at this index (two loads apart)
};

struct SlowLoadReport {
  std::uint64_t connects = 0;       // connections opened (first ones and again after a close)
  std::uint64_t connect_failed = 0;
  std::uint64_t server_closed = 0;  // closed by the server (deadline, cap, error)
  std::uint64_t bytes_sent = 0;
  std::uint64_t responses = 0;      // idle: answers to the one request; trickle: refusals (408/503)
  int open_at_end = 0;
};

class SlowLoad {
 public:
  explicit SlowLoad(SlowLoadConfig cfg) : cfg_(cfg) {
    if (cfg_.count < 1 || cfg_.count > 20000) throw std::invalid_argument("count must be 1-20000");
    if (cfg_.seconds <= 0 || cfg_.seconds > 3600) throw std::invalid_argument("seconds must be in (0, 3600]");
    if (cfg_.port < 1 || cfg_.port > 65535) throw std::invalid_argument("port must be 1-65535");
    if (cfg_.interval_ms < 1 || cfg_.interval_ms > 60000) throw std::invalid_argument("interval_ms must be 1-60000");
    if (cfg_.per_source < 1) throw std::invalid_argument("per_source must be >= 1");
    if (cfg_.first_source < 0 || cfg_.first_source + cfg_.count / cfg_.per_source >= 250 * 250)
      throw std::invalid_argument("source addresses run past 127.0.250.250");
    rlimit rl{};
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < static_cast<rlim_t>(cfg_.count) + 64) {
      rl.rlim_cur = std::min<rlim_t>(rl.rlim_max, static_cast<rlim_t>(cfg_.count) + 64);
      setrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  ~SlowLoad() {
    stop();
    for (int fd : fds_)
      if (fd >= 0) ::close(fd);
  }

  // Opens every connection, then drives them from a thread of its own.
  void start() {
    fds_.assign(static_cast<std::size_t>(cfg_.count), -1);
    for (std::size_t i = 0; i < fds_.size(); ++i) open(i);
    thread_ = std::thread([this] { drive(); });
  }
  void stop() {
    stop_.store(true);
    stop_when_done();
  }
  // Waits until the time is up.
  void stop_when_done() {
    if (thread_.joinable()) thread_.join();
  }
  // Connections open now (sampled by the driving thread each round).
  int open_now() const { return open_.load(); }
  const SlowLoadReport& report() const { return report_; }  // after stop()

 private:
  static constexpr const char* kTrickleHead = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
  static constexpr const char* kIdleRequest = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

  void open(std::size_t i) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      ++report_.connect_failed;
      return;
    }
    std::size_t src = static_cast<std::size_t>(cfg_.first_source) + i / static_cast<std::size_t>(cfg_.per_source);
    sockaddr_in from{};
    from.sin_family = AF_INET;
    from.sin_addr.s_addr = htonl((127u << 24) | ((1u + static_cast<std::uint32_t>(src / 250)) << 8) |
                                 (1u + static_cast<std::uint32_t>(src % 250)));
    timeval tv{2, 0};  // a connect that waits in a full backlog gives up
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<std::uint16_t>(cfg_.port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
        ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
      ::close(fd);
      ++report_.connect_failed;
      return;
    }
    ++report_.connects;
    fds_[i] = fd;
    const char* first = cfg_.mode == SlowLoadConfig::trickle ? kTrickleHead : kIdleRequest;
    send_bytes(i, first, std::char_traits<char>::length(first));
  }

  void send_bytes(std::size_t i, const char* p, std::size_t n) {
    ssize_t w = ::send(fds_[i], p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) report_.bytes_sent += static_cast<std::uint64_t>(w);
    else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) drop(i);
  }

  void drop(std::size_t i) {
    ::close(fds_[i]);
    fds_[i] = -1;
    ++report_.server_closed;
  }

  // Reads whatever the server sent; false when it closed the connection.
  bool drain(std::size_t i) {
    char buf[4096];
    for (;;) {
      ssize_t n = ::recv(fds_[i], buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) {
        if (std::string_view(buf, static_cast<std::size_t>(n)).find("HTTP/1.1 ") != std::string_view::npos)
          ++report_.responses;
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return false;
      return true;
    }
  }

  // Visits one connection per slot, round robin, so bytes arrive at the
  // server evenly spread over each interval rather than in bursts.
  void drive() {
    using namespace std::chrono;
    auto t0 = steady_clock::now();
    auto end = t0 + duration_cast<steady_clock::duration>(duration<double>(cfg_.seconds));
    auto slot = duration_cast<steady_clock::duration>(milliseconds(cfg_.interval_ms)) / cfg_.count;
    if (slot < microseconds(1)) slot = microseconds(1);
    auto next = t0;
    std::size_t i = 0;
    int alive = 0;
    while (!stop_.load() && steady_clock::now() < end) {
      if (fds_[i] < 0) open(i);
      if (fds_[i] >= 0) {
        if (!drain(i)) drop(i);
        else if (cfg_.mode == SlowLoadConfig::trickle) send_bytes(i, "a", 1);
      }
      if (fds_[i] >= 0) ++alive;
      if (++i == fds_.size()) {
        i = 0;
        open_.store(alive);
        alive = 0;
      }
      next += slot;
      auto now = steady_clock::now();
      // Slots closer than 5 ms are served in one wake-up: fewer context
      // switches taken from the server under test.
      if (next > now + milliseconds(5)) std::this_thread::sleep_until(next);
      else if (now - next > milliseconds(100)) next = now;  // fell behind: do not burst to catch up
    }
    report_.open_at_end = 0;
    for (int fd : fds_) report_.open_at_end += fd >= 0;
  }

  SlowLoadConfig cfg_;
  std::vector<int> fds_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> open_{0};
  SlowLoadReport report_;
};

}  // namespace kzoo::server::testing
