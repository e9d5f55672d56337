#include "kzoo/server/trusted_proxy.hpp"

#include <arpa/inet.h>

#include <cctype>
#include <cstring>
#include <optional>

#include <fmt/format.h>

namespace kzoo::server {

namespace {

std::optional<std::array<std::uint8_t, 16>> parse_ip(std::string_view text) {
  std::string s(text);
  std::array<std::uint8_t, 16> a{};
  in_addr v4{};
  if (::inet_pton(AF_INET, s.c_str(), &v4) == 1) {
    a[10] = a[11] = 0xff;
    std::memcpy(&a[12], &v4, 4);
    return a;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, s.c_str(), &v6) == 1) {
    std::memcpy(a.data(), &v6, 16);
    return a;
  }
  return std::nullopt;
}

bool matches(const Network& n, const std::array<std::uint8_t, 16>& a) {
  int bits = n.prefix;
  for (int i = 0; i < 16 && bits > 0; ++i, bits -= 8) {
    std::uint8_t mask = bits >= 8 ? 0xff : static_cast<std::uint8_t>(0xff << (8 - bits));
    if ((a[i] & mask) != (n.addr[i] & mask)) return false;
  }
  return true;
}

std::string_view trim(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t' || v.back() == '\r')) v.remove_suffix(1);
  return v;
}

}  // namespace

Result<Network> parse_network(const std::string& text) {
  auto slash = text.find('/');
  auto ip = parse_ip(text.substr(0, slash));
  if (!ip)
    return fail(fmt::format("trusted_proxies: \"{}\" is not an IP address or CIDR network (10.0.0.5, 10.0.0.0/8, "
                            "fd00::/8)",
                            text));
  const bool v4 = text.substr(0, slash).find(':') == std::string::npos;
  Network n{*ip, 128};
  if (slash == std::string::npos) return n;
  const std::string bits = text.substr(slash + 1);
  const int max = v4 ? 32 : 128;
  if (bits.empty() || bits.size() > 3 || bits.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(bits) > max)
    return fail(fmt::format("trusted_proxies: \"{}\" has a prefix length that is not 0-{}", text, max));
  n.prefix = std::stoi(bits) + (v4 ? 96 : 0);
  return n;
}

bool TrustedProxies::trusted(std::string_view ip) const {
  auto a = parse_ip(ip);
  if (!a) return false;
  for (const auto& n : nets_)
    if (matches(n, *a)) return true;
  return false;
}

std::vector<std::string> forwarded_for(std::string_view head) {
  std::vector<std::string> out;
  constexpr std::string_view kName = "x-forwarded-for";
  std::size_t pos = head.find('\n');
  while (pos != std::string_view::npos && pos + 1 < head.size()) {
    std::size_t start = pos + 1, end = head.find('\n', start);
    std::string_view line = head.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    bool named = line.size() > kName.size() && line[kName.size()] == ':';
    for (std::size_t i = 0; named && i < kName.size(); ++i)
      named = std::tolower(static_cast<unsigned char>(line[i])) == kName[i];
    if (named) {
      std::string_view v = line.substr(kName.size() + 1);
      for (std::size_t c; (c = v.find(',')) != std::string_view::npos; v.remove_prefix(c + 1))
        out.emplace_back(trim(v.substr(0, c)));
      out.emplace_back(trim(v));
    }
    pos = end;
  }
  return out;
}

std::string TrustedProxies::client(const std::string& peer, std::string_view head) const {
  if (nets_.empty() || !trusted(peer)) return peer;
  auto hops = forwarded_for(head);
  for (auto it = hops.rbegin(); it != hops.rend(); ++it) {
    if (!parse_ip(*it)) return peer;  // a hop we cannot read: nothing left of it can be believed
    if (!trusted(*it)) return *it;
  }
  return peer;
}

}  // namespace kzoo::server
