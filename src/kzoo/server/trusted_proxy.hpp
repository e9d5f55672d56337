// Which client a request comes from when the service sits behind load
// balancers (issue 22): a connection from a configured proxy (an address or
// CIDR network in `trusted_proxies`) carries the client's address in
// X-Forwarded-For; from anyone else that header is ignored, so a client cannot
// pose as another by sending it. The per-address connection cap, the handlers
// (req.remote_addr) and the audit trail then see the real client.
//
// The client is the right-most address of X-Forwarded-For that is not itself
// a trusted proxy (each proxy appends the address it saw; everything to the
// left of the first untrusted hop could have been written by the client).
// A header that does not parse, or that names only trusted proxies, leaves
// the proxy's own address.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kzoo/util/result.hpp"

namespace kzoo::server {

struct Network {
  std::array<std::uint8_t, 16> addr{};  // IPv4 as ::ffff:a.b.c.d
  int prefix = 128;                     // bits of addr that must match
};

// "10.0.0.1", "10.0.0.0/8", "fd00::/8", "::1": an error naming the entry otherwise.
Result<Network> parse_network(const std::string& text);

class TrustedProxies {
 public:
  TrustedProxies() = default;
  explicit TrustedProxies(std::vector<Network> nets) : nets_(std::move(nets)) {}
  bool empty() const { return nets_.empty(); }
  // True when `ip` (dotted IPv4 or IPv6 text) is one of the proxies.
  bool trusted(std::string_view ip) const;
  // The client behind `peer`: from the X-Forwarded-For values of `head` when
  // `peer` is trusted, else `peer`. `head` is the request head as received.
  std::string client(const std::string& peer, std::string_view head) const;

 private:
  std::vector<Network> nets_;
};

// The comma-separated X-Forwarded-For values of a request head, in order.
std::vector<std::string> forwarded_for(std::string_view head);

}  // namespace kzoo::server
