// Which client a request comes from behind load balancers (trusted_proxy.hpp):
// X-Forwarded-For is believed from configured proxies only, read from the
// right, and a header a client wrote itself never decides.
#include "kzoo/server/trusted_proxy.hpp"

#include <gtest/gtest.h>

namespace kzoo::server {
namespace {

TrustedProxies proxies(std::initializer_list<const char*> texts) {
  std::vector<Network> nets;
  for (const char* t : texts) {
    auto n = parse_network(t);
    EXPECT_TRUE(n) << t << ": " << n.error().message;
    if (n) nets.push_back(*n);
  }
  return TrustedProxies(std::move(nets));
}

std::string head(const std::string& xff) {
  return "GET / HTTP/1.1\r\nHost: x\r\n" + (xff.empty() ? "" : "X-Forwarded-For: " + xff + "\r\n") + "\r\n";
}

TEST(TrustedProxy, NetworksParseAsAddressesOrCidrAndBadOnesNameThemselves) {
  auto p = proxies({"10.0.0.5", "192.168.0.0/16", "fd00::/8", "::1"});
  EXPECT_TRUE(p.trusted("10.0.0.5"));
  EXPECT_FALSE(p.trusted("10.0.0.6"));
  EXPECT_TRUE(p.trusted("192.168.200.1"));
  EXPECT_FALSE(p.trusted("192.169.0.1"));
  EXPECT_TRUE(p.trusted("fd12::7"));
  EXPECT_TRUE(p.trusted("::1"));
  EXPECT_FALSE(p.trusted("not an address"));
  for (std::string bad : {"10.0.0.0/33", "fd00::/129", "10.0.0/8", "proxy.example", "10.0.0.0/", "10.0.0.0/x"}) {
    auto n = parse_network(bad);
    ASSERT_FALSE(n) << bad;
    EXPECT_NE(n.error().message.find(bad), std::string::npos) << n.error().message;
    EXPECT_NE(n.error().message.find("trusted_proxies"), std::string::npos);
  }
}

TEST(TrustedProxy, FromAProxyTheClientIsTheRightMostHopThatIsNotAProxy) {
  auto p = proxies({"10.0.0.0/8"});
  EXPECT_EQ(p.client("10.0.0.5", head("203.0.113.7")), "203.0.113.7");
  // The client wrote the left part itself; the proxies appended the rest.
  EXPECT_EQ(p.client("10.0.0.5", head("1.2.3.4, 203.0.113.7, 10.0.0.9")), "203.0.113.7");
  // Two headers read as one list, in order.
  EXPECT_EQ(p.client("10.0.0.5", "GET / HTTP/1.1\r\nx-forwarded-for: 198.51.100.1\r\nX-FORWARDED-FOR: 10.1.1.1\r\n\r\n"),
            "198.51.100.1");
  EXPECT_EQ(p.client("10.0.0.5", head("2001:db8::1")), "2001:db8::1");
}

TEST(TrustedProxy, FromAnyoneElseOrUnreadableTheHeaderIsIgnored) {
  auto p = proxies({"10.0.0.0/8"});
  EXPECT_EQ(p.client("203.0.113.7", head("198.51.100.1")), "203.0.113.7") << "a client cannot pose as another";
  EXPECT_EQ(p.client("10.0.0.5", head("")), "10.0.0.5");
  EXPECT_EQ(p.client("10.0.0.5", head("unknown")), "10.0.0.5");
  EXPECT_EQ(p.client("10.0.0.5", head("198.51.100.1, garbage")), "10.0.0.5") << "nothing left of an unreadable hop is believed";
  EXPECT_EQ(p.client("10.0.0.5", head("10.0.0.1, 10.0.0.2")), "10.0.0.5");
  EXPECT_EQ(TrustedProxies().client("10.0.0.5", head("198.51.100.1")), "10.0.0.5") << "no proxies configured";
}

}  // namespace
}  // namespace kzoo::server
