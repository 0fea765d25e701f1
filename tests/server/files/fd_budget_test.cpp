// Tests server/fd_budget: everything fits; the cache gives way to connections, never below its
// floor; splicing counts three descriptors per connection; the reserve grows with listeners,
// processors and limits.fd_reserve.
#include "server/files/fd_budget.hpp"

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

// A limit the configuration left unset is sized to the descriptor limit: no warning at start.
Config unset() {
  Config c;
  c.max_connections_auto = true;
  c.fd_cache_max_entries_auto = true;
  return c;
}

TEST(FdBudgetTest, UnsetLimitsFitTheDescriptorLimit) {
  for (uint64_t limit : {256u, 1024u, 4096u, 20000u, 1u << 20}) {
    Config c = unset();
    size_from_fd_limit(c, limit, 2, 2);
    FdBudget b = plan_fd_budget(c, limit, 2, 2);
    EXPECT_FALSE(b.lowered()) << limit << ": " << b.describe();
    EXPECT_LE(b.connections + b.reserve + b.cache_entries,
              std::max<uint64_t>(limit, 64 + 2 + 8 + 17))
        << limit;
    EXPECT_LE(c.max_connections, 10000u);
    EXPECT_LE(c.fd_cache_max_entries, 10000u);
  }
  Config c = unset();
  size_from_fd_limit(c, 1024, 1, 1);  // 1024 - 69 = 955: two thirds to connections
  EXPECT_EQ(c.max_connections, 636u);
  EXPECT_EQ(c.fd_cache_max_entries, 955u - 636u);
  c = unset();
  size_from_fd_limit(c, 1 << 20, 1, 1);  // plenty: the built-in 10000 each
  EXPECT_EQ(c.max_connections, 10000u);
  EXPECT_EQ(c.fd_cache_max_entries, 10000u);
}

TEST(FdBudgetTest, ExplicitLimitsAreKeptAndTheOtherTakesTheRest) {
  Config c = config_with(500, 123);  // both explicit: untouched
  size_from_fd_limit(c, 1024, 1, 1);
  EXPECT_EQ(c.max_connections, 500u);
  EXPECT_EQ(c.fd_cache_max_entries, 123u);
  c = unset();
  c.max_connections = 900;
  c.max_connections_auto = false;
  size_from_fd_limit(c, 1024, 1, 1);
  EXPECT_EQ(c.max_connections, 900u);
  EXPECT_EQ(c.fd_cache_max_entries, 55u);  // 955 - 900
  c = unset();
  c.fd_cache_max_entries = 900;
  c.fd_cache_max_entries_auto = false;
  size_from_fd_limit(c, 1024, 1, 1);
  EXPECT_EQ(c.max_connections, 955u / 2);                // connections keep at least half
  EXPECT_TRUE(plan_fd_budget(c, 1024, 1, 1).lowered());  // the explicit cache cannot fit: warned
}

TEST(FdBudgetTest, SplicingSizesConnectionsByTheirThreeDescriptors) {
  Config c = unset();
  c.body = BodyPath::splice;
  size_from_fd_limit(c, 1024, 1, 1);
  EXPECT_EQ(c.max_connections, 955u * 2 / 3 / 3);
  EXPECT_FALSE(plan_fd_budget(c, 1024, 1, 1).lowered());
}

}  // namespace
}  // namespace weft::http
