// Tests runtime/fd_generation: a number's generation is odd while it names an accepted
// connection, and each accept and close moves it on, so no two connections share one.
#include "runtime/fd_generation.hpp"

#include <gtest/gtest.h>

namespace weft::rt {
namespace {

// A number far above what this test process opens, so no other test touches it.
constexpr int kFd = 9'000;

TEST(FdGeneration, AcceptAndCloseEachMoveTheGenerationOn) {
  const uint32_t start = fd_generation::current(kFd);
  EXPECT_FALSE(fd_generation::is_connection(start));
  const uint32_t first = fd_generation::begin_connection(kFd);
  EXPECT_TRUE(fd_generation::is_connection(first));
  EXPECT_EQ(fd_generation::current(kFd), first);
  fd_generation::end_connection(kFd);
  EXPECT_FALSE(fd_generation::is_connection(fd_generation::current(kFd)));
  fd_generation::end_connection(kFd);  // a second close (or a new socket) changes nothing
  EXPECT_EQ(fd_generation::current(kFd), first + 1);
  const uint32_t second = fd_generation::begin_connection(kFd);
  EXPECT_TRUE(fd_generation::is_connection(second));
  EXPECT_NE(second, first);
}

// A connection closed without io::close leaves its number marked; the next accept under
// that number still gets a generation of its own.
TEST(FdGeneration, AcceptAfterAPlainCloseGetsANewGeneration) {
  const uint32_t first = fd_generation::begin_connection(kFd + 1);
  const uint32_t second = fd_generation::begin_connection(kFd + 1);
  EXPECT_TRUE(fd_generation::is_connection(second));
  EXPECT_NE(second, first);
  fd_generation::end_connection(kFd + 1);
}

// Numbers out of the table's range are never connections (the epoll backend then waits on
// them the oneshot way).
TEST(FdGeneration, NumbersOutOfRangeAreNeverConnections) {
  EXPECT_EQ(fd_generation::current(-1), 0u);
  EXPECT_EQ(fd_generation::begin_connection(-1), 0u);
  EXPECT_EQ(fd_generation::begin_connection(1 << 30), 0u);
  EXPECT_FALSE(fd_generation::is_connection(fd_generation::current(1 << 30)));
}

}  // namespace
}  // namespace weft::rt
