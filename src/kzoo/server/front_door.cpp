#include "kzoo/server/front_door.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace kzoo::server {
namespace {

using Clock = std::chrono::steady_clock;

// File descriptors kept free for everything but client connections: the
// SQLite and git handles, upload files, pipes of the process.
constexpr std::uint64_t kFdReserve = 256;

// Per-client caps key on the IPv4 address or the IPv6 /64 (one host's usual
// allocation, so a host cannot escape the cap by rotating its interface id).
using ClientKey = std::array<std::uint8_t, 16>;

ClientKey client_key(const sockaddr_storage& a) {
  ClientKey k{};
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    k[10] = k[11] = 0xff;
    std::memcpy(&k[12], &v4.sin_addr, 4);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    std::memcpy(k.data(), &v6.sin6_addr, 16);
    if (!IN6_IS_ADDR_V4MAPPED(&v6.sin6_addr)) std::memset(&k[8], 0, 8);
  }
  return k;
}

// The per-client key of an address in text form (a forwarded client's).
ClientKey client_key(const std::string& ip) {
  sockaddr_storage a{};
  if (::inet_pton(AF_INET, ip.c_str(), &reinterpret_cast<sockaddr_in&>(a).sin_addr) == 1) a.ss_family = AF_INET;
  else if (::inet_pton(AF_INET6, ip.c_str(), &reinterpret_cast<sockaddr_in6&>(a).sin6_addr) == 1) a.ss_family = AF_INET6;
  return client_key(a);
}

void ip_and_port(const sockaddr_storage& a, std::string& ip, int& port) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &v4.sin_addr, buf, sizeof buf);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    inet_ntop(AF_INET6, &v6.sin6_addr, buf, sizeof buf);
    port = ntohs(v6.sin6_port);
  }
  ip = buf;
}

std::string canned(int status, const char* reason, const std::string& code, const std::string& message) {
  std::string body = fmt::format(R"({{"error":{{"code":"{}","message":"{}","field":null}}}})", code, message);
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n{}",
      status, reason, body.size(), status == 503 ? "Retry-After: 1\r\n" : "", body);
}

// One write that never blocks: a refusal is worth a try, never a wait. What
// the client sent already is read first: closing a socket with unread bytes
// resets it, and the reset can destroy the answer before the client reads it.
void send_and_close(int fd, const std::string& bytes) {
  char sink[16384];
  (void)::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
  (void)::send(fd, bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  ::close(fd);
}

// Reads and throws away up to `remaining` bytes of a body that the response
// left unread, until the client closes, `until` passes or the door stops. The
// response is whole by now: shutting the write side tells a client that reads
// until the end that it has it, whatever it does with the rest of its body.
void drain_unread(int fd, std::uint64_t remaining, Clock::time_point until, const std::atomic<bool>& stopping) {
  (void)::shutdown(fd, SHUT_WR);
  char sink[65536];
  while (remaining > 0 && !stopping.load()) {
    ssize_t n = ::recv(fd, sink, static_cast<std::size_t>(std::min<std::uint64_t>(sizeof sink, remaining)),
                       MSG_DONTWAIT);
    if (n > 0) {
      remaining -= static_cast<std::uint64_t>(n);
      continue;
    }
    if (n == 0) return;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return;
    // In slices, so that stopping the door is not held up by a silent client.
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(std::min<long long>(left, 250))) < 0 && errno != EINTR) return;
  }
}

// The value of a Content-Length header in a request head, -1 when there is
// none, -2 when the body's length is not known from it (Transfer-Encoding,
// several or malformed values): then the connection cannot be reused.
long long body_length(std::string_view head) {
  long long found = -1;
  std::size_t pos = head.find('\n');
  while (pos != std::string_view::npos && pos + 1 < head.size()) {
    std::size_t start = pos + 1;
    std::size_t end = head.find('\n', start);
    std::string_view line = head.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    auto named = [&](std::string_view name) {
      if (line.size() <= name.size() || line[name.size()] != ':') return false;
      for (std::size_t i = 0; i < name.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(line[i])) != name[i]) return false;
      return true;
    };
    if (named("transfer-encoding")) return -2;
    if (named("content-length")) {
      if (found != -1) return -2;
      std::string_view v = line.substr(15);
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == '\r' || v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
      if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string_view::npos) return -2;
      found = std::stoll(std::string(v));
    }
    pos = end;
  }
  return found;
}

// The socket of one request, as httplib reads and writes it. Reads serve the
// head (already peeked complete) first, then go to the socket for exactly
// what httplib asks; waits are bounded by the read and write timeouts.
class ConnStream final : public httplib::Stream {
 public:
  ConnStream(int fd, std::string head, const std::string& remote_ip, int remote_port, const std::string& local_ip,
             int local_port, int read_timeout_ms, int write_timeout_ms)
      : fd_(fd),
        head_(std::move(head)),
        remote_ip_(remote_ip),
        local_ip_(local_ip),
        remote_port_(remote_port),
        local_port_(local_port),
        read_ms_(read_timeout_ms),
        write_ms_(write_timeout_ms) {}

  bool is_readable() const override { return head_pos_ < head_.size() || wait(POLLIN, read_ms_); }
  bool is_writable() const override { return wait(POLLOUT, write_ms_); }

  ssize_t read(char* ptr, size_t size) override {
    if (head_pos_ < head_.size()) {
      size_t n = std::min(size, head_.size() - head_pos_);
      std::memcpy(ptr, head_.data() + head_pos_, n);
      head_pos_ += n;
      return static_cast<ssize_t>(n);
    }
    for (;;) {
      ssize_t n = ::recv(fd_, ptr, size, MSG_DONTWAIT);
      if (n >= 0) {
        body_read_ += static_cast<std::uint64_t>(n);
        if (n == 0) eof_ = true;
        return n;
      }
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !wait(POLLIN, read_ms_)) {
        read_failed_ = true;
        return -1;
      }
    }
  }

  ssize_t write(const char* ptr, size_t size) override {
    for (;;) {
      ssize_t n = ::send(fd_, ptr, size, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n >= 0) {
        sniff(ptr, static_cast<size_t>(n));
        return n;
      }
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !wait(POLLOUT, write_ms_)) return -1;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_ip_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = local_ip_;
    port = local_port_;
  }
  // httplib 0.11 (built without CPPHTTPLIB_USE_POLL) uses this only to refuse
  // descriptors past FD_SETSIZE, which its select() cannot watch. This stream
  // waits with poll(), so that limit is not ours: such descriptors read as
  // invalid, which passes the check.
  socket_t socket() const override { return fd_ < FD_SETSIZE ? fd_ : INVALID_SOCKET; }

  bool head_consumed() const { return head_pos_ == head_.size(); }
  std::uint64_t body_read() const { return body_read_; }
  bool eof() const { return eof_; }
  // A read timed out or failed: the client is not sending.
  bool read_failed() const { return read_failed_; }
  // The final response's head said "Connection: close".
  bool response_closes() const { return response_closes_; }

 private:
  bool wait(short events, int ms) const {
    pollfd p{fd_, events, 0};
    for (;;) {
      int r = ::poll(&p, 1, ms);
      if (r < 0 && errno == EINTR) continue;
      return r > 0 && (p.revents & (events | POLLHUP | POLLERR));
    }
  }

  // Watches the response heads written (a "100 Continue" may come first) for
  // the Connection header, so a response that promised to close does.
  void sniff(const char* p, size_t n) {
    if (head_done_) return;
    sniffed_.append(p, std::min(n, size_t{16384} - std::min(sniffed_.size(), size_t{16384})));
    for (;;) {
      auto end = sniffed_.find("\r\n\r\n");
      if (end == std::string::npos) {
        if (sniffed_.size() >= 16384) head_done_ = true;
        return;
      }
      std::string h = sniffed_.substr(0, end + 2);
      if (h.rfind("HTTP/1.1 1", 0) == 0) {  // an interim response: the final head follows
        sniffed_.erase(0, end + 4);
        continue;
      }
      for (auto& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      response_closes_ = h.find("\r\nconnection: close\r\n") != std::string::npos;
      head_done_ = true;
      sniffed_.clear();
      return;
    }
  }

  int fd_;
  std::string head_;
  std::size_t head_pos_ = 0;
  std::string remote_ip_, local_ip_;
  int remote_port_, local_port_;
  int read_ms_, write_ms_;
  std::uint64_t body_read_ = 0;
  bool eof_ = false;
  bool read_failed_ = false;
  std::string sniffed_;
  bool head_done_ = false;
  bool response_closes_ = false;
};

}  // namespace

struct FrontDoor::Impl {
  enum class State { reading, idle, working };

  struct Conn {
    int fd = -1;
    ClientKey key{};
    std::string remote_ip, local_ip;
    int remote_port = 0, local_port = 0;
    State state = State::reading;
    Clock::time_point deadline;
    std::list<Conn*>* timer = nullptr;  // the list holding it, when waiting
    std::list<Conn*>::iterator timer_it;
    std::size_t scanned = 0;   // head bytes already searched for its end
    std::size_t head_len = 0;  // set when the head is complete
    int served = 0;
    bool has_body = false;  // the request announced a body (set with head_len)
    bool keep = false;      // set by the worker: the connection may carry another request
    bool proxied = false;   // from a trusted proxy: keyed per request on the forwarded client
    bool counted = false;   // holds one of per_client[key]
    std::string client_ip;  // who the request is served as: remote_ip, or the forwarded client
  };

  FrontDoorLimits lim;
  RequestHandler handler;
  std::string refuse_total, refuse_client, timeout_408, too_large_431;

  int listen_fd = -1, epoll_fd = -1, wake_fd = -1, spare_fd = -1;
  std::uint64_t fd_soft = 0;
  std::atomic<bool> stopping{false};

  // Loop thread only.
  std::unordered_map<int, std::unique_ptr<Conn>> conns;
  std::map<ClientKey, int> per_client;
  std::list<Conn*> header_timers, idle_timers;  // each in deadline order: one timeout per list
  std::vector<char> peek_buf;
  std::deque<Conn*> held;  // complete requests past queue_max, in arrival order
  std::atomic<std::size_t> held_n{0};  // its size, for the workers

  // Shared with the workers.
  std::mutex mu;
  std::condition_variable work_cv;
  std::deque<Conn*> ready;     // complete heads waiting for a worker
  int ready_bodies = 0;        // of which with a body
  std::deque<Conn*> returned;  // served, back to the loop
  bool workers_stop = false;
  int body_busy = 0;           // workers serving a request with a body
  int body_cap = 1;            // at most this many at once (the rest are kept for requests without one)
  std::vector<std::thread> workers;

  mutable std::mutex stats_mu;
  FrontDoorStats st;

  ~Impl() {
    for (int fd : {listen_fd, epoll_fd, wake_fd, spare_fd})
      if (fd >= 0) ::close(fd);
    for (auto& [fd, c] : conns) ::close(fd);
  }

  template <class F>
  void count(F&& f) {
    std::lock_guard lock(stats_mu);
    f(st);
  }

  void wake() {
    std::uint64_t one = 1;
    (void)::write(wake_fd, &one, sizeof one);
  }

  void arm_timer(Conn* c, std::list<Conn*>& list, int seconds) {
    disarm_timer(c);
    c->deadline = Clock::now() + std::chrono::seconds(seconds);
    c->timer = &list;
    c->timer_it = list.insert(list.end(), c);
  }
  void disarm_timer(Conn* c) {
    if (c->timer) c->timer->erase(c->timer_it);
    c->timer = nullptr;
  }

  void close_conn(Conn* c, const std::string* farewell = nullptr) {
    disarm_timer(c);
    int fd = c->fd;
    if (c->state != State::working) ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    if (farewell) send_and_close(fd, *farewell);
    else ::close(fd);
    uncount(c);
    bool was_waiting = c->state != State::working;
    conns.erase(fd);
    count([&](FrontDoorStats& s) {
      --s.open;
      if (was_waiting) --s.waiting;
    });
  }

  void accept_some() {
    for (int i = 0; i < 256; ++i) {
      sockaddr_storage peer{};
      socklen_t len = sizeof peer;
      int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if ((errno == EMFILE || errno == ENFILE) && spare_fd >= 0) {
          // Out of descriptors: take the pending connection with the spare
          // one and close it, so the listening socket does not stay readable
          // and spin the loop.
          ::close(spare_fd);
          int x = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
          if (x >= 0) send_and_close(x, refuse_total);
          spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
          count([](FrontDoorStats& s) { ++s.refused_total_cap; });
          continue;
        }
        return;  // EAGAIN, or a transient failure (ENOBUFS): the next event retries
      }
      ClientKey key = client_key(peer);
      if (static_cast<int>(conns.size()) >= lim.max_connections) {
        send_and_close(fd, refuse_total);
        count([](FrontDoorStats& s) { ++s.refused_total_cap; });
        continue;
      }
      std::string peer_ip;
      int peer_port = 0;
      ip_and_port(peer, peer_ip, peer_port);
      const bool proxied = !lim.proxies.empty() && lim.proxies.trusted(peer_ip);
      auto it = per_client.find(key);
      if (!proxied && it != per_client.end() && it->second >= lim.max_connections_per_client) {
        send_and_close(fd, refuse_client);
        count([](FrontDoorStats& s) { ++s.refused_client_cap; });
        continue;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->key = key;
      c->proxied = proxied;
      c->remote_ip = c->client_ip = peer_ip;
      c->remote_port = peer_port;
      sockaddr_storage local{};
      socklen_t llen = sizeof local;
      if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) == 0)
        ip_and_port(local, c->local_ip, c->local_port);
      Conn* p = c.get();
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
      ev.data.ptr = p;
      if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        ::close(fd);
        continue;
      }
      if (!proxied) {
        ++per_client[key];
        c->counted = true;
      }
      conns.emplace(fd, std::move(c));
      arm_timer(p, header_timers, lim.header_timeout_s);
      count([](FrontDoorStats& s) {
        ++s.accepted;
        ++s.open;
        ++s.waiting;
      });
    }
  }

  // The connection has bytes (or closed): is its head complete?
  void on_readable(Conn* c, std::uint32_t events) {
    if (c->state == State::working) return;
    ssize_t n;
    do n = ::recv(c->fd, peek_buf.data(), peek_buf.size(), MSG_PEEK | MSG_DONTWAIT);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (events & (EPOLLERR | EPOLLHUP)) close_conn(c);
      return;
    }
    if (n <= 0) return close_conn(c);
    std::string_view seen(peek_buf.data(), static_cast<std::size_t>(n));
    // httplib ends a head at the first line that is exactly "\r\n".
    std::size_t from = c->scanned >= 2 ? c->scanned - 2 : 0;
    std::size_t end = seen.find("\n\r\n", from);
    if (end != std::string_view::npos && end + 3 <= lim.max_header_bytes) {
      c->head_len = end + 3;
      long long body = body_length(seen.substr(0, c->head_len));
      c->has_body = body != -1 && body != 0;
      if (c->proxied && !count_forwarded(c, seen.substr(0, c->head_len))) return;
      return dispatch(c);
    }
    if (seen.size() > lim.max_header_bytes || end != std::string_view::npos) {
      count([](FrontDoorStats& s) { ++s.headers_too_large; });
      return close_conn(c, &too_large_431);
    }
    c->scanned = seen.size();
    if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) return close_conn(c);  // the head can never complete
    if (c->state == State::idle) {
      // The next request has begun: its head now has the header deadline.
      c->state = State::reading;
      arm_timer(c, header_timers, lim.header_timeout_s);
    }
  }

  void uncount(Conn* c) {
    if (c->counted && --per_client[c->key] == 0) per_client.erase(c->key);
    c->counted = false;
  }

  // A complete head from a proxy: the client it forwards is who is counted
  // and served; false when that client is over its cap (then closed).
  bool count_forwarded(Conn* c, std::string_view head) {
    c->client_ip = lim.proxies.client(c->remote_ip, head);
    ClientKey key = client_key(c->client_ip);
    auto it = per_client.find(key);
    if (it != per_client.end() && it->second >= lim.max_connections_per_client) {
      count([](FrontDoorStats& s) { ++s.refused_client_cap; });
      close_conn(c, &refuse_client);
      return false;
    }
    ++per_client[key];
    c->key = key;
    c->counted = true;
    return true;
  }

  void dispatch(Conn* c) {
    disarm_timer(c);
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, nullptr);
    c->state = State::working;
    // Counted before a worker can see it, so the stats it renders include it.
    count([](FrontDoorStats& s) {
      --s.waiting;
      ++s.requests;
    });
    held.push_back(c);
    held_n.store(held.size());
    hand_over();
  }

  // Moves held requests to the workers' queue while it has room: queue_max
  // requests without a body and queue_max with one, so uploads waiting for
  // their share of the threads never fill the queue against reads. A burst
  // of complete requests waits here, in order, costing no thread; the server
  // is the slow party then, so no deadline applies.
  void hand_over() {
    if (held.empty()) return;
    std::size_t moved = 0;
    {
      std::lock_guard lock(mu);
      for (auto it = held.begin(); it != held.end();) {
        int bodies = ready_bodies, plain = static_cast<int>(ready.size()) - ready_bodies;
        if (bodies >= lim.queue_max && plain >= lim.queue_max) break;
        Conn* c = *it;
        if ((c->has_body ? bodies : plain) >= lim.queue_max) {
          ++it;
          continue;
        }
        ready.push_back(c);
        ready_bodies += c->has_body;
        it = held.erase(it);
        ++moved;
      }
      // Counted before mu is released: a worker may take, serve and answer a
      // request moved here before this thread runs another line, and the
      // stats read then must not still show it held.
      count([&](FrontDoorStats& s) { s.held = static_cast<std::int64_t>(held.size()); });
    }
    held_n.store(held.size());
    if (moved == 1) work_cv.notify_one();
    else if (moved > 1) work_cv.notify_all();
  }

  void take_back() {
    std::deque<Conn*> back;
    {
      std::lock_guard lock(mu);
      back.swap(returned);
    }
    for (Conn* c : back) {
      if (!c->keep || stopping.load()) {
        close_conn(c);
        continue;
      }
      if (c->proxied) uncount(c);  // the next request on it may be another client's
      c->state = State::idle;
      c->scanned = 0;
      c->head_len = 0;
      epoll_event ev{};
      ev.events = EPOLLIN | EPOLLRDHUP | EPOLLET;
      ev.data.ptr = c;
      // Added again, so bytes of a next request that came already are seen.
      if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        c->state = State::working;  // never registered: close without EPOLL_CTL_DEL
        close_conn(c);
        continue;
      }
      count([](FrontDoorStats& s) { ++s.waiting; });
      arm_timer(c, idle_timers, lim.keep_alive_timeout_s);
    }
    hand_over();  // each return is a worker freed
  }

  void expire(Clock::time_point now) {
    while (!header_timers.empty() && header_timers.front()->deadline <= now) {
      count([](FrontDoorStats& s) { ++s.header_timeouts; });
      close_conn(header_timers.front(), &timeout_408);
    }
    while (!idle_timers.empty() && idle_timers.front()->deadline <= now) {
      count([](FrontDoorStats& s) { ++s.idle_closed; });
      close_conn(idle_timers.front());
    }
  }

  int next_timeout_ms(Clock::time_point now) const {
    Clock::time_point next = Clock::time_point::max();
    if (!header_timers.empty()) next = std::min(next, header_timers.front()->deadline);
    if (!idle_timers.empty()) next = std::min(next, idle_timers.front()->deadline);
    if (next == Clock::time_point::max()) return -1;
    if (next <= now) return 0;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    return static_cast<int>(std::min<long long>(ms, 60'000));
  }

  void work() {
    for (;;) {
      Conn* c = nullptr;
      {
        std::unique_lock lock(mu);
        work_cv.wait(lock, [&] { return (c = pick()) != nullptr || (workers_stop && ready.empty()); });
        if (!c) return;
      }
      if (held_n.load() > 0) wake();  // room in the queue: the loop hands over what it holds
      serve(c);
      {
        std::lock_guard lock(mu);
        returned.push_back(c);
        if (c->has_body) --body_busy;
      }
      // A request with a body may have waited for the slot just freed.
      if (c->has_body) work_cv.notify_all();
      wake();
    }
  }

  // The oldest waiting request a worker may take (under mu): one with a body
  // only while fewer than body_cap are being served, so slow uploads (120 s
  // each at most) cannot take every thread from the requests without one.
  Conn* pick() {
    for (auto it = ready.begin(); it != ready.end(); ++it) {
      Conn* c = *it;
      if (c->has_body && body_busy >= body_cap) continue;
      if (c->has_body) {
        ++body_busy;
        --ready_bodies;
      }
      ready.erase(it);
      return c;
    }
    return nullptr;
  }

  // One request: the head (known complete) is read whole, then httplib parses
  // and routes it.
  void serve(Conn* c) {
    c->keep = false;
    std::string head(c->head_len, '\0');
    std::size_t got = 0;
    int ms = lim.read_timeout_s * 1000;
    while (got < head.size()) {
      ssize_t n = ::recv(c->fd, head.data() + got, head.size() - got, MSG_DONTWAIT);
      if (n > 0) {
        got += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      pollfd p{c->fd, POLLIN, 0};
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) || ::poll(&p, 1, ms) <= 0) return;
    }
    long long body = body_length(head);
    ConnStream strm(c->fd, std::move(head), c->client_ip, c->remote_port, c->local_ip, c->local_port, ms,
                    lim.write_timeout_s * 1000);
    ++c->served;
    bool last = c->served >= lim.keep_alive_max_requests || stopping.load();
    bool closed = false;
    bool ok = false;
    try {
      ok = handler(strm, last, closed);
    } catch (...) {  // httplib catches the routes' own; this is what escapes it (bad_alloc)
      ok = false;
    }
    // Reused only when the request was read exactly (else the rest of its
    // body would be taken for the next request) and nobody asked to close.
    std::uint64_t expected = body < 0 ? 0 : static_cast<std::uint64_t>(body);
    c->keep = ok && !last && !closed && !strm.response_closes() && !strm.eof() && strm.head_consumed() &&
              body != -2 && strm.body_read() == expected;
    // A response sent before its request's body was read in full (a refusal):
    // the rest is read first, within bounds, since a close over unread bytes
    // resets the connection and can destroy the answer before it is read.
    if (!c->keep && ok && body > 0 && strm.head_consumed() && !strm.eof() && !strm.read_failed() &&
        strm.body_read() < expected && expected <= lim.drain_max_bytes)
      drain_unread(c->fd, expected - strm.body_read(), Clock::now() + std::chrono::seconds(lim.drain_timeout_s),
                   stopping);
  }
};

FrontDoor::FrontDoor(FrontDoorLimits limits, RequestHandler handler) : impl_(std::make_unique<Impl>()) {
  auto& m = *impl_;
  m.lim = limits;
  m.handler = std::move(handler);
  m.refuse_total = canned(503, "Service Unavailable", "too_many_connections",
                          fmt::format("the server holds its maximum of {} connections: retry shortly",
                                      limits.max_connections));
  m.refuse_client = canned(503, "Service Unavailable", "too_many_connections",
                           fmt::format("this address holds its maximum of {} open connections: close some, or "
                                       "reuse them with keep-alive",
                                       limits.max_connections_per_client));
  m.timeout_408 = canned(408, "Request Timeout", "header_timeout",
                         fmt::format("the request head did not arrive within {} s", limits.header_timeout_s));
  m.too_large_431 = canned(431, "Request Header Fields Too Large", "header_too_large",
                           fmt::format("the request head is over {} bytes", limits.max_header_bytes));
  m.peek_buf.resize(limits.max_header_bytes + 1);
  // A quarter of the threads (at least one, given two) serve only requests
  // without a body.
  int reserved = limits.threads >= 2 ? std::max(1, limits.threads / 4) : 0;
  m.body_cap = std::max(1, limits.threads - reserved);
}

// run() must have returned (or never run) by now.
FrontDoor::~FrontDoor() = default;

const FrontDoorLimits& FrontDoor::limits() const { return impl_->lim; }
std::uint64_t FrontDoor::fd_limit() const { return impl_->fd_soft; }

FrontDoorStats FrontDoor::stats() const {
  std::lock_guard lock(impl_->stats_mu);
  return impl_->st;
}

std::string FrontDoor::render_metrics() const {
  FrontDoorStats s = stats();
  std::string o;
  o += "# HELP kzoo_connections Open connections: waiting for a request head (or kept alive), holding a complete "
       "request while every worker is busy, or queued and being served.\n";
  o += "# TYPE kzoo_connections gauge\n";
  o += fmt::format("kzoo_connections{{state=\"waiting\"}} {}\n", s.waiting);
  o += fmt::format("kzoo_connections{{state=\"held\"}} {}\n", s.held);
  o += fmt::format("kzoo_connections{{state=\"serving\"}} {}\n", s.open - s.waiting - s.held);
  o += "# HELP kzoo_connections_accepted_total Connections accepted under the caps.\n";
  o += "# TYPE kzoo_connections_accepted_total counter\n";
  o += fmt::format("kzoo_connections_accepted_total {}\n", s.accepted);
  o += "# HELP kzoo_connections_refused_total Connections refused with 503 at accept, by the cap reached.\n";
  o += "# TYPE kzoo_connections_refused_total counter\n";
  o += fmt::format("kzoo_connections_refused_total{{reason=\"total\"}} {}\n", s.refused_total_cap);
  o += fmt::format("kzoo_connections_refused_total{{reason=\"per_client\"}} {}\n", s.refused_client_cap);
  o += "# HELP kzoo_connections_closed_total Connections the server closed on a deadline or a size cap.\n";
  o += "# TYPE kzoo_connections_closed_total counter\n";
  o += fmt::format("kzoo_connections_closed_total{{reason=\"header_timeout\"}} {}\n", s.header_timeouts);
  o += fmt::format("kzoo_connections_closed_total{{reason=\"header_too_large\"}} {}\n", s.headers_too_large);
  o += fmt::format("kzoo_connections_closed_total{{reason=\"keep_alive_idle\"}} {}\n", s.idle_closed);
  return o;
}

Result<int> FrontDoor::bind(const std::string& host, int port) {
  auto& m = *impl_;
  // Room for every connection the caps allow, plus the service's own files.
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    std::uint64_t want = static_cast<std::uint64_t>(m.lim.max_connections) + kFdReserve;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
      rlimit raised = rl;
      raised.rlim_cur = rl.rlim_max == RLIM_INFINITY ? want : std::min<rlim_t>(rl.rlim_max, want);
      if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
    }
    m.fd_soft = rl.rlim_cur == RLIM_INFINITY ? ~std::uint64_t{0} : rl.rlim_cur;
    if (m.fd_soft < want) {
      if (m.fd_soft <= kFdReserve + 16)
        return fail(fmt::format("the file-descriptor limit ({}) leaves no room for connections: raise it "
                                "(ulimit -n) to at least {}",
                                m.fd_soft, want));
      m.lim.max_connections = static_cast<int>(m.fd_soft - kFdReserve);
    }
  }

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  if (int e = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res); e != 0)
    return fail(fmt::format("cannot listen on {}:{}: {}", host, port, gai_strerror(e)));
  int fd = -1;
  int err = 0;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // The kernel's own cap (somaxconn) applies: a burst of connections waits
    // there instead of being dropped and retried a second later.
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 4096) == 0) break;
    err = errno;
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0) return fail(fmt::format("cannot listen on {}:{}: {}", host, port, std::strerror(err)));

  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  std::string ip;
  int actual = 0;
  ip_and_port(bound, ip, actual);

  m.listen_fd = fd;
  m.epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
  m.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  m.spare_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (m.epoll_fd < 0 || m.wake_fd < 0) return fail(fmt::format("cannot start the listener: {}", std::strerror(errno)));
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = &m.listen_fd;
  ::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.listen_fd, &ev);
  ev.data.ptr = &m.wake_fd;
  ::epoll_ctl(m.epoll_fd, EPOLL_CTL_ADD, m.wake_fd, &ev);
  return actual;
}

bool FrontDoor::run() {
  auto& m = *impl_;
  if (m.listen_fd < 0) return false;
  for (int i = 0; i < m.lim.threads; ++i) m.workers.emplace_back([&m] { m.work(); });
  std::array<epoll_event, 256> events;
  bool failed = false;
  while (!m.stopping.load()) {
    int n = ::epoll_wait(m.epoll_fd, events.data(), static_cast<int>(events.size()), m.next_timeout_ms(Clock::now()));
    if (n < 0 && errno != EINTR) {
      failed = true;
      break;
    }
    for (int i = 0; i < n; ++i) {
      void* p = events[i].data.ptr;
      if (p == &m.listen_fd) {
        m.accept_some();
      } else if (p == &m.wake_fd) {
        std::uint64_t v;
        (void)::read(m.wake_fd, &v, sizeof v);
        m.take_back();
      } else {
        // Only a connection's own event closes or dispatches it, and each
        // descriptor appears once in a batch: the pointer is live here.
        m.on_readable(static_cast<Impl::Conn*>(p), events[i].events);
      }
    }
    m.expire(Clock::now());
  }
  // Stopping: no new connections, waiting ones closed; requests already
  // complete are served, then their connections closed.
  ::close(m.listen_fd);
  m.listen_fd = -1;
  std::vector<Impl::Conn*> waiting;
  for (auto& [fd, c] : m.conns)
    if (c->state != Impl::State::working) waiting.push_back(c.get());
  for (auto* c : waiting) m.close_conn(c);
  {
    std::lock_guard lock(m.mu);
    for (auto* c : m.held) {  // complete: served like the rest
      m.ready.push_back(c);
      m.ready_bodies += c->has_body;
    }
    m.held.clear();
    m.workers_stop = true;
  }
  m.work_cv.notify_all();
  for (auto& t : m.workers) t.join();
  m.workers.clear();
  m.take_back();
  return !failed;
}

void FrontDoor::stop() {
  if (!impl_->stopping.exchange(true) && impl_->wake_fd >= 0) impl_->wake();
}

}  // namespace kzoo::server
