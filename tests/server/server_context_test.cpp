// Tests server/server_context: the pool lends working state with an empty queue and a fresh
// parser and reuses what is given back; pipes come sized and are reused only when clean; the
// connection registry reaches every live connection for shutdown.
#include "server/server_context.hpp"

#include <vector>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace weft::http {
namespace {

TEST(ResourcePoolTest, WorkIsLentEmptyAndReused) {
  Config config;
  ResourcePool pool(config, 8192, 65536);
  ConnectionWork* w = pool.take_work();
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->read_cap, 8192u);
  EXPECT_EQ(w->iov_count, 0);
  EXPECT_EQ(w->outgoing_count, 0);
  // Leave state behind, as a connection that ends mid-batch would.
  w->iov_count = 3;
  w->arena_used = 100;
  w->outgoing_count = 2;
  w->notes = "GET /x";
  pool.give_work(w);
  ConnectionWork* again = pool.take_work();
  EXPECT_EQ(again, w);  // reused, not allocated: its pages are already touched
  EXPECT_EQ(again->iov_count, 0);
  EXPECT_EQ(again->arena_used, 0u);
  EXPECT_EQ(again->outgoing_count, 0);
  EXPECT_TRUE(again->notes.empty());
  pool.give_work(again);
}

TEST(ResourcePoolTest, TrimFreesOnlyWhatAPeriodLeftUnused) {
  Config config;
  ResourcePool pool(config, 4096, 65536);
  std::vector<ConnectionWork*> burst;
  for (int i = 0; i < 12; ++i) burst.push_back(pool.take_work());
  for (ConnectionWork* w : burst) pool.give_work(w);
  EXPECT_EQ(pool.trim(2), 0u) << "all twelve were in use in this period";
  ConnectionWork* steady = pool.take_work();  // one in use now and then
  pool.give_work(steady);
  EXPECT_EQ(pool.trim(2), 9u) << "eleven never used since the last trim, two kept";
  ConnectionWork* next = pool.take_work();
  EXPECT_EQ(next, steady) << "the warm one stays, on top";
  pool.give_work(next);
}

TEST(ResourcePoolTest, PipesAreSizedAndReusedOnlyWhenClean) {
  Config config;
  ResourcePool pool(config, 4096, 65536);
  auto p = pool.take_pipe();
  ASSERT_GE(p.first, 0);
  EXPECT_GE(::fcntl(p.second, F_GETPIPE_SZ), 65536);
  pool.give_pipe(p, true);
  auto q = pool.take_pipe();
  EXPECT_EQ(q, p);           // a clean pipe comes back
  pool.give_pipe(q, false);  // dirty (bytes may be left in it): closed, not kept
  EXPECT_EQ(::fcntl(q.first, F_GETFD), -1);
  EXPECT_EQ(::fcntl(q.second, F_GETFD), -1);
  auto r = pool.take_pipe();  // a new one
  ASSERT_GE(r.first, 0);
  pool.give_pipe(r, true);
}

}  // namespace
}  // namespace weft::http
