// The proc-receive hook of a push to kzoo (githooks(5) "proc-receive", git
// >= 2.29; the mechanism AGit-flow uses), and the message it exchanges with
// the server that started the push.
//
// `kzoo serve` runs git-http-backend with `receive.procReceiveRefs=refs`, so
// git-receive-pack hands EVERY pushed ref to this hook instead of updating
// it. The hook holds no authority of its own: it reads git's commands
// (pkt-lines on stdin), sends them as one JSON line on the socket the server
// passed down to it (KZOO_GIT_CALLBACK_FD, inherited through git-http-backend
// and git-receive-pack), and relays the server's answer: "ok <ref>" (the push
// was turned into submissions; the ref itself does not move) or "ng <ref>
// <reason>", plus lines on stderr that the client shows as "remote: ...".
// Only the server thread that authenticated the push holds the other end, so
// the socket is the capability: nothing to guess, replay or leak, and it dies
// with the push (docs/GIT.md says why this is not an HTTP callback).
//
//   hook -> server   {"commands": [{"old", "new", "ref"}]}\n
//   server -> hook   {"results": [{"ref", "ok", "reason"}], "messages": ["..."]}\n
//
// Both lines are capped (kMaxCallbackLine); anything else is an error that
// refuses every ref ("ng ... kzoo could not judge this push").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kzoo/util/result.hpp"

namespace kzoo::gitserve {

constexpr std::size_t kMaxCallbackLine = 1u << 20;
constexpr const char* kCallbackFdEnv = "KZOO_GIT_CALLBACK_FD";

struct PushCommand {
  std::string old_id, new_id, ref;  // 40 hex digits each (zeros: create / delete)
};
struct RefResult {
  std::string ref;
  bool ok = false;
  std::string reason;  // for ng: one line, shown by the client in parentheses
};
struct PushAnswer {
  std::vector<RefResult> results;
  std::vector<std::string> messages;  // shown as remote: lines
};

nlohmann::json to_json(const std::vector<PushCommand>& cmds);
Result<std::vector<PushCommand>> commands_from_json(const nlohmann::json& doc);
nlohmann::json to_json(const PushAnswer& a);
Result<PushAnswer> answer_from_json(const nlohmann::json& doc);

// pkt-line framing (gitprotocol-common(5)). read_pkt: the payload, "" for a
// flush-pkt (0000), nullopt at end of input or on a malformed length.
std::optional<std::string> read_pkt(int fd, bool* flush);
bool write_pkt(int fd, const std::string& payload);
bool write_flush(int fd);

// Reads one '\n'-terminated line of at most `cap` bytes from `fd`, waiting
// until `deadline_ms` (CLOCK_MONOTONIC milliseconds; 0: no deadline).
Result<std::string> read_line(int fd, std::size_t cap, long long deadline_ms = 0);
Result<void> write_all(int fd, const std::string& bytes);
long long monotonic_ms();

// The hook itself: git's protocol on `in`/`out`, the server on `callback`,
// messages on `err`. Returns the exit status (0 once every ref was answered).
int run_proc_receive(int in, int out, int callback, int err);

}  // namespace kzoo::gitserve
