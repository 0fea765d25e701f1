// Tests server/fd_budget: everything fits; the cache gives way to connections, never below its
// floor; splicing counts three descriptors per connection; the reserve grows with listeners,
// processors and limits.fd_reserve.
#include "server/fd_budget.hpp"

#include <gtest/gtest.h>

namespace weft::http {
namespace {

Config config_with(unsigned connections, unsigned cache, BodyPath body = BodyPath::sendfile) {
  Config c;
  c.max_connections = connections;
  c.fd_cache_max_entries = cache;
  c.body = body;
  return c;
}

TEST(FdBudgetTest, EverythingFits) {
  FdBudget b = plan_fd_budget(config_with(1000, 500), 4096, 2, 2);
  EXPECT_EQ(b.connections, 1000u);
  EXPECT_EQ(b.reserve, 64u + 2 + 8);
  EXPECT_EQ(b.cache_entries, 500u);
  EXPECT_FALSE(b.lowered());
  EXPECT_NE(b.describe().find("limit 4096 >="), std::string::npos) << b.describe();
}

TEST(FdBudgetTest, TheCacheGivesWayToConnections) {
  FdBudget b = plan_fd_budget(config_with(10000, 10000), 16384, 1, 1);
  EXPECT_EQ(b.reserve, 64u + 1 + 4);
  EXPECT_EQ(b.cache_entries, 16384u - 10000 - 69);
  EXPECT_TRUE(b.lowered());
  EXPECT_NE(b.describe().find("lowered to 6315 entries"), std::string::npos) << b.describe();
}

TEST(FdBudgetTest, NeverBelowTheFloor) {
  FdBudget b = plan_fd_budget(config_with(10000, 10000), 1024, 1, 1);
  EXPECT_EQ(b.cache_entries, FdBudget::kMinCacheEntries);
  EXPECT_TRUE(b.lowered());
}

TEST(FdBudgetTest, ASmallCacheIsNotRaisedToTheFloor) {
  FdBudget b = plan_fd_budget(config_with(100, 4), 1 << 20, 1, 1);
  EXPECT_EQ(b.cache_entries, 4u);
  EXPECT_FALSE(b.lowered());
}

TEST(FdBudgetTest, SplicingNeedsAPipePairPerConnection) {
  FdBudget b = plan_fd_budget(config_with(1000, 100, BodyPath::splice), 1 << 20, 1, 1);
  EXPECT_EQ(b.connections, 3000u);
}

TEST(FdBudgetTest, TheReserveIsAConfigValue) {
  Config c = config_with(100, 100);
  c.fd_reserve = 1000;
  FdBudget b = plan_fd_budget(c, 1 << 20, 3, 4);
  EXPECT_EQ(b.reserve, 1000u + 3 + 16);
}

}  // namespace
}  // namespace weft::http
