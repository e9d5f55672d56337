// The proc-receive hook and its framing (proc_receive.hpp).
#include "kzoo/gitserve/proc_receive.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "kzoo/format/json_text.hpp"

namespace kzoo::gitserve {
namespace {

using nlohmann::json;

bool read_exact(int fd, char* buf, std::size_t n) {
  while (n > 0) {
    ssize_t r = ::read(fd, buf, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    buf += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool hex40(const std::string& s) {
  return s.size() == 40 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// One line, no control characters: git shows a reason inside parentheses.
std::string one_line(std::string s) {
  for (auto& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  if (s.size() > 900) s = s.substr(0, 900) + "...";
  return s;
}

void say(int err, const std::string& line) { (void)write_all(err, line + "\n"); }

}  // namespace

long long monotonic_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<long long>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

json to_json(const std::vector<PushCommand>& cmds) {
  json list = json::array();
  for (const auto& c : cmds) list.push_back({{"old", c.old_id}, {"new", c.new_id}, {"ref", c.ref}});
  return {{"commands", list}};
}

Result<std::vector<PushCommand>> commands_from_json(const json& doc) {
  if (!doc.is_object() || !doc.contains("commands") || !doc["commands"].is_array())
    return fail("the hook's message is not {\"commands\": [...]}");
  std::vector<PushCommand> out;
  for (const auto& c : doc["commands"]) {
    if (!c.is_object() || !c.value("old", json()).is_string() || !c.value("new", json()).is_string() ||
        !c.value("ref", json()).is_string())
      return fail("a command is not {\"old\", \"new\", \"ref\"}");
    PushCommand p{c["old"], c["new"], c["ref"]};
    if (!hex40(p.old_id) || !hex40(p.new_id)) return fail("a command's object ids are not 40 hex digits");
    out.push_back(std::move(p));
  }
  if (out.empty() || out.size() > 1000) return fail("a push carries 1-1000 refs");
  return out;
}

json to_json(const PushAnswer& a) {
  json results = json::array();
  for (const auto& r : a.results) results.push_back({{"ref", r.ref}, {"ok", r.ok}, {"reason", r.reason}});
  return {{"results", results}, {"messages", a.messages}};
}

Result<PushAnswer> answer_from_json(const json& doc) {
  if (!doc.is_object() || !doc.value("results", json()).is_array()) return fail("the server's answer has no results");
  PushAnswer a;
  for (const auto& r : doc["results"]) {
    if (!r.is_object() || !r.value("ref", json()).is_string() || !r.value("ok", json()).is_boolean())
      return fail("a result is not {\"ref\", \"ok\", \"reason\"}");
    a.results.push_back({r["ref"], r["ok"].get<bool>(), r.value("reason", std::string())});
  }
  if (doc.contains("messages") && doc["messages"].is_array())
    for (const auto& m : doc["messages"])
      if (m.is_string()) a.messages.push_back(m);
  return a;
}

std::optional<std::string> read_pkt(int fd, bool* flush) {
  *flush = false;
  char len[4];
  if (!read_exact(fd, len, 4)) return std::nullopt;
  unsigned n = 0;
  for (char c : len) {
    int v = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    if (v < 0) return std::nullopt;
    n = n * 16 + static_cast<unsigned>(v);
  }
  if (n == 0 || n == 1) {  // flush-pkt, delim-pkt: both end a section here
    *flush = true;
    return std::string();
  }
  if (n < 4 || n > 65520) return std::nullopt;
  std::string payload(n - 4, '\0');
  if (!read_exact(fd, payload.data(), payload.size())) return std::nullopt;
  if (!payload.empty() && payload.back() == '\n') payload.pop_back();
  return payload;
}

bool write_pkt(int fd, const std::string& payload) {
  if (payload.size() + 4 > 65520) return false;
  return write_all(fd, fmt::format("{:04x}", payload.size() + 4) + payload).has_value();
}

bool write_flush(int fd) { return write_all(fd, "0000").has_value(); }

Result<void> write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return fail(fmt::format("write: {}", std::strerror(errno)));
    done += static_cast<std::size_t>(w);
  }
  return {};
}

Result<std::string> read_line(int fd, std::size_t cap, long long deadline_ms) {
  std::string out;
  char buf[4096];
  for (;;) {
    if (deadline_ms) {
      long long left = deadline_ms - monotonic_ms();
      if (left <= 0) return fail("timed out waiting for a line");
      pollfd p{fd, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
      if (r < 0 && errno != EINTR) return fail(fmt::format("poll: {}", std::strerror(errno)));
      if (r <= 0) continue;
    }
    // One byte at a time up to the newline would be slow for 1 MiB; peek instead.
    ssize_t r = ::recv(fd, buf, sizeof buf, MSG_PEEK);
    if (r < 0 && errno == ENOTSOCK) r = ::read(fd, buf, 1);  // a pipe in tests: byte by byte
    else if (r > 0) {
      const void* nl = std::memchr(buf, '\n', static_cast<std::size_t>(r));
      std::size_t take = nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - buf) + 1 : static_cast<std::size_t>(r);
      r = ::read(fd, buf, take);
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return fail(fmt::format("read: {}", std::strerror(errno)));
    if (r == 0) return fail(out.empty() ? "end of input" : "end of input inside a line");
    out.append(buf, static_cast<std::size_t>(r));
    if (out.back() == '\n') {
      out.pop_back();
      return out;
    }
    if (out.size() > cap) return fail(fmt::format("a line over {} bytes", cap));
  }
}

int run_proc_receive(int in, int out, int callback, int err) {
  // 1. Version negotiation: git sends "version=1\0<capabilities>" and a flush.
  bool flush = false;
  auto first = read_pkt(in, &flush);
  if (!first || flush || first->rfind("version=1", 0) != 0) {
    say(err, "kzoo: proc-receive: git did not start with version=1");
    return 1;
  }
  while (true) {
    auto p = read_pkt(in, &flush);
    if (!p) return 1;
    if (flush) break;
  }
  // No capabilities: kzoo takes no push options and needs no atomic mode.
  if (!write_pkt(out, std::string("version=1") + '\0') || !write_flush(out)) return 1;
  // 2. The commands: "<old> <new> <ref>", up to a flush.
  std::vector<PushCommand> cmds;
  while (true) {
    auto p = read_pkt(in, &flush);
    if (!p) return 1;
    if (flush) break;
    auto s1 = p->find(' '), s2 = s1 == std::string::npos ? s1 : p->find(' ', s1 + 1);
    if (s2 == std::string::npos) return 1;
    cmds.push_back({p->substr(0, s1), p->substr(s1 + 1, s2 - s1 - 1), p->substr(s2 + 1)});
  }
  // 3. Judged by the server, over the socket it handed down.
  PushAnswer answer;
  std::string problem;
  if (callback < 0) problem = std::string(kCallbackFdEnv) + " is not set: this hook runs only under kzoo serve";
  else if (auto w = write_all(callback, to_json(cmds).dump() + "\n"); !w) problem = w.error().message;
  if (problem.empty()) {
    auto line = read_line(callback, kMaxCallbackLine, monotonic_ms() + 600'000);
    if (!line) problem = line.error().message;
    else if (auto doc = format::parse_json(*line, "the server's answer", {.max_bytes = kMaxCallbackLine, .max_depth = 8}); !doc)
      problem = to_string(doc.error());
    else if (auto a = answer_from_json(*doc); !a) problem = a.error().message;
    else answer = std::move(*a);
  }
  if (!problem.empty()) {
    say(err, "kzoo: could not judge this push: " + one_line(problem));
    answer.results.clear();
    for (const auto& c : cmds) answer.results.push_back({c.ref, false, "kzoo could not judge this push; try again"});
  }
  for (const auto& m : answer.messages) say(err, m);
  // 4. One report per ref, in git's order; a ref the server left out is refused.
  for (const auto& c : cmds) {
    const RefResult* r = nullptr;
    for (const auto& x : answer.results)
      if (x.ref == c.ref) r = &x;
    bool ok = r && r->ok;
    std::string line = ok ? "ok " + c.ref : "ng " + c.ref + " " + one_line(r ? r->reason : "not judged");
    if (!write_pkt(out, line)) return 1;
  }
  return write_flush(out) ? 0 : 1;
}

}  // namespace kzoo::gitserve
