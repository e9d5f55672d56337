// The service's listener: one event-driven thread owns every connection until
// its request head has fully arrived, and only then hands it to a worker
// thread, which serves exactly one request (httplib's router) and gives the
// connection back. cpp-httplib 0.11 alone gives each connection a thread from
// the moment it is accepted, so 8 clients trickling header bytes (or holding
// idle keep-alives) occupy all 8 threads and nothing else is answered.
//
// What the front door guarantees, whatever clients do:
// - A waiting connection (head incomplete, or kept alive between requests)
//   costs a file descriptor and a small record, never a thread.
// - The request head must be complete within header_timeout_s of the
//   connection's accept, or of its first byte after a kept-alive pause
//   (408 and close); a kept-alive connection sends its next request's first
//   byte within keep_alive_timeout_s (else closed). A head over
//   max_header_bytes gets 431 and close.
// - Open connections are capped in total and per client address (IPv4
//   address, IPv6 /64); one over a cap gets a fixed 503 written without
//   blocking and is closed at once: no thread, no timer, no memory kept.
//   Behind a trusted proxy the client is the one X-Forwarded-For names, and
//   the per-client cap counts its requests in flight on the proxy's
//   connections (a proxy's own address is never capped: everyone is behind it).
// - Complete requests go to the workers' queue, at most queue_max at once;
//   the rest wait in the front door in arrival order, holding no thread
//   (a burst is served late, never refused). A quarter of
//   the threads (at least one of two or more) serve only requests without a
//   body, so slow uploads, which hold a thread up to their own deadline,
//   cannot starve reads.
// - A refusal sent before the request's body was read reaches the client:
//   the rest of the body is read and thrown away (bounded) before the
//   connection closes, instead of being answered with a reset.
//
// How the head is watched without being consumed: the loop peeks at the
// socket (MSG_PEEK, edge-triggered epoll), so httplib later parses the same
// bytes from the socket as it always did. A worker reads exactly the head,
// then only what httplib asks for, so bytes of a pipelined next request stay
// in the socket for the loop to find.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <httplib.h>

#include "kzoo/server/body_drain.hpp"
#include "kzoo/server/trusted_proxy.hpp"
#include "kzoo/util/result.hpp"

namespace kzoo::server {

struct FrontDoorLimits {
  int threads = 8;
  int queue_max = 64;
  int header_timeout_s = 10;
  int keep_alive_timeout_s = 5;
  int read_timeout_s = 10;   // per socket read once a worker serves the request
  int write_timeout_s = 10;  // per socket write
  int max_connections = 4096;
  int max_connections_per_client = 64;
  std::size_t max_header_bytes = 16 * 1024;
  int keep_alive_max_requests = 100;
  // Load balancers (trusted_proxy.hpp): a connection from one is not capped
  // by its own address; each request on it counts against the client that
  // X-Forwarded-For names, and is served as coming from that client.
  TrustedProxies proxies;
  // A response that leaves part of a request's body unread (a refusal sent
  // before the body was read) is followed by reading that rest and throwing
  // it away, when the whole body is at most drain_max_bytes, for at most
  // drain_timeout_s: closing over unread bytes resets the connection, and the
  // client still sending would lose the answer (body_drain.hpp).
  std::uint64_t drain_max_bytes = kDrainFloor;
  int drain_timeout_s = static_cast<int>(kDrainTime.count());
};

// Serves one request read from `strm` and writes its response, as
// httplib::Server::process_request does: `last` asks for "Connection: close";
// `close` is set when the request asked for it. Returns false when the
// connection broke.
using RequestHandler = std::function<bool(httplib::Stream& strm, bool last, bool& close)>;

// Counters since start, and the connections open now.
struct FrontDoorStats {
  std::uint64_t accepted = 0;
  std::uint64_t refused_total_cap = 0;
  std::uint64_t refused_client_cap = 0;
  std::uint64_t header_timeouts = 0;     // 408
  std::uint64_t headers_too_large = 0;   // 431
  std::uint64_t idle_closed = 0;         // kept-alive connections closed after keep_alive_timeout_s
  std::uint64_t requests = 0;            // handed to workers
  std::int64_t open = 0;                 // open connections
  std::int64_t waiting = 0;              // of which waiting for a head (or kept alive)
  std::int64_t held = 0;                 // of which complete, waiting for room in the workers' queue
};

class FrontDoor {
 public:
  FrontDoor(FrontDoorLimits limits, RequestHandler handler);
  ~FrontDoor();
  FrontDoor(const FrontDoor&) = delete;
  FrontDoor& operator=(const FrontDoor&) = delete;

  // Listens on host:port (0 = a free port) and returns the port. Raises the
  // soft file-descriptor limit towards the hard one as max_connections needs;
  // where the hard limit is lower, the total cap is lowered to fit it
  // (limits() tells).
  Result<int> bind(const std::string& host, int port);
  // Serves until stop(); false if the listener could not run.
  bool run();
  // Stops accepting and closes waiting connections; requests already
  // complete are served (their responses say "Connection: close"). Any thread.
  void stop();

  // The limits in force (max_connections as lowered by the fd limit).
  const FrontDoorLimits& limits() const;
  // The process's soft RLIMIT_NOFILE after bind().
  std::uint64_t fd_limit() const;
  FrontDoorStats stats() const;
  // The stats in the Prometheus text format, appended to GET /metrics:
  // kzoo_connections{state}, kzoo_connections_accepted_total,
  // kzoo_connections_refused_total{reason}, kzoo_connections_closed_total{reason}.
  std::string render_metrics() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kzoo::server
