// Virtual hosts: the host name of a request, name matching, and which site answers.
#include "server/site/vhost.hpp"

#include <gtest/gtest.h>

namespace weft::http {
namespace {

TEST(Vhost, HostWithoutPort) {
  EXPECT_EQ(host_without_port("b.test:8080"), "b.test");
  EXPECT_EQ(host_without_port("b.test"), "b.test");
  EXPECT_EQ(host_without_port("B.Test.:80"), "B.Test");
  EXPECT_EQ(host_without_port("[::1]:8080"), "[::1]");
  EXPECT_EQ(host_without_port("user@b.test:1"), "b.test");
  EXPECT_EQ(host_without_port(""), "");
}

TEST(Vhost, MatchesExactAndWildcardNamesIgnoringCase) {
  EXPECT_TRUE(host_matches("b.test", "B.TEST"));
  EXPECT_FALSE(host_matches("b.test", "a.b.test"));
  EXPECT_TRUE(host_matches("*.b.test", "www.b.test"));
  EXPECT_TRUE(host_matches("*.b.test", "a.WWW.b.test"));
  EXPECT_FALSE(host_matches("*.b.test", "b.test"));
  EXPECT_FALSE(host_matches("*.b.test", "xb.test"));
}

TEST(Vhost, ExactWinsThenTheLongestWildcardElseTheDefault) {
  Config c;
  for (const char* host : {"*.test", "*.b.test", "www.b.test"}) {
    VhostConfig v;
    v.host = host;
    c.vhosts.push_back(v);
  }
  std::vector<std::unique_ptr<SiteContext>> vhosts;
  for (std::size_t i = 0; i < c.vhosts.size(); ++i) {
    vhosts.push_back(std::make_unique<SiteContext>(c, c.vhosts[i], static_cast<uint16_t>(i + 1)));
  }
  SiteContext fallback(c);
  EXPECT_EQ(choose_site(vhosts, "www.b.test", fallback).number, 3);
  EXPECT_EQ(choose_site(vhosts, "x.b.test", fallback).number, 2);
  EXPECT_EQ(choose_site(vhosts, "a.test", fallback).number, 1);
  EXPECT_EQ(choose_site(vhosts, "other.example", fallback).number, 0);
  EXPECT_EQ(choose_site(vhosts, "", fallback).number, 0);
}

}  // namespace
}  // namespace weft::http
