// Tests server/connection_slots: the count never passes the limit, a busy server refuses, the
// longest-idle connection's slot goes to a newcomer (and that connection learns it must
// close), and a reclaimed connection's close does not give its slot back twice.
#include "server/net/connection_slots.hpp"

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/net/connection.hpp"
#include "server/net/server_context.hpp"

namespace weft::http {
namespace {

TEST(ConnectionSlots, TheCountNeverPassesTheLimit) {
  ConnectionSlots slots(100);
  std::vector<std::thread> threads;
  std::atomic<int> taken{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        if (slots.take()) taken.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(taken.load(), 100);
  EXPECT_EQ(slots.open(), 100u);
  EXPECT_FALSE(slots.available());
}

class ConnectionSlotsTest : public ::testing::Test {
 protected:
  void SetUp() override { config_.max_connections = 2; }

  // A connection on one end of a socket pair, in a slot taken for it.
  Connection* make(ServerContext& ctx) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    peers_.push_back(fds[1]);
    sockaddr_storage peer{};
    peer.ss_family = AF_UNIX;
    return new Connection(ctx, fds[0], peer);
  }
  void TearDown() override {
    for (int fd : peers_) ::close(fd);
  }

  Config config_;
  std::vector<int> peers_;
};

TEST_F(ConnectionSlotsTest, TheLongestIdleMakesRoomAndBusyOnesDoNot) {
  ServerContext ctx(config_);
  ASSERT_TRUE(ctx.slots.take());
  Connection* older = make(ctx);
  ASSERT_TRUE(ctx.slots.take());
  Connection* younger = make(ctx);
  EXPECT_FALSE(ctx.slots.take()) << "both busy: nothing to reclaim";

  ctx.slots.enter_idle(older);
  ctx.slots.enter_idle(younger);
  EXPECT_EQ(ctx.slots.idle(), 2u);
  EXPECT_TRUE(ctx.slots.available());
  EXPECT_TRUE(ctx.slots.take()) << "the newcomer gets the longest-idle one's slot";
  EXPECT_EQ(ctx.slots.open(), 2u);
  EXPECT_EQ(ctx.slots.reclaimed(), 1u);
  EXPECT_FALSE(ctx.slots.leave_idle(older)) << "the reclaimed one must close";
  EXPECT_TRUE(ctx.slots.leave_idle(younger));
  EXPECT_EQ(ctx.slots.idle(), 0u);

  delete older;  // its slot belongs to the newcomer now: not given back
  EXPECT_EQ(ctx.slots.open(), 2u);
  delete younger;
  EXPECT_EQ(ctx.slots.open(), 1u);  // the newcomer's
}

TEST_F(ConnectionSlotsTest, AClosingIdleConnectionLeavesTheList) {
  ServerContext ctx(config_);
  ASSERT_TRUE(ctx.slots.take());
  Connection* c = make(ctx);
  ctx.slots.enter_idle(c);
  delete c;  // closed while idle (its client went away, or it timed out)
  EXPECT_EQ(ctx.slots.idle(), 0u);
  EXPECT_EQ(ctx.slots.open(), 0u);
  EXPECT_TRUE(ctx.slots.take());
}

}  // namespace
}  // namespace weft::http
