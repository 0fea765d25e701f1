// Tests server/listener's sockets: one SO_REUSEPORT socket per copy on the same port; an
// address another socket holds is refused with its name (weft never joins a foreign
// SO_REUSEPORT group); IPv6 listeners are V6ONLY, so "[::1]" and "127.0.0.1" coexist; and
// accepted sockets inherit TCP_NODELAY.
#include "server/net/listener.hpp"

#include <stdexcept>
#include <string>

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace weft::http {
namespace {

// A port nothing listens on now (bound once and released).
uint16_t free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

uint16_t port_of(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  return ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6&>(ss).sin6_port)
                                  : ntohs(reinterpret_cast<sockaddr_in&>(ss).sin_port);
}

void close_all(std::vector<Listener>& ls) {
  for (auto& l : ls) ::close(l.fd);
}

TEST(WaitBoundTest, ReadsTheWaitOnlyWhenTheBoundPassesTheLimit) {
  using std::chrono::milliseconds;
  const rt::Duration limit = milliseconds(1000);
  const rt::TimePoint t0 = rt::now();
  WaitBound b;
  EXPECT_TRUE(b.may_exceed(t0, limit));  // nothing known: read the first connection
  b.measured(t0, milliseconds(100));
  // A connection accepted 300 ms later waited at most 100 + 300 ms.
  EXPECT_FALSE(b.may_exceed(t0 + milliseconds(300), limit));
  EXPECT_FALSE(b.may_exceed(t0 + milliseconds(900), limit));  // 100 + 900 ms: not over
  EXPECT_TRUE(b.may_exceed(t0 + milliseconds(901), limit));   // 1,001 ms: read it again
  b.measured(t0 + milliseconds(901), milliseconds(20));
  EXPECT_FALSE(b.may_exceed(t0 + milliseconds(1400), limit));  // 20 + 499 ms
  // A long gap (the acceptor stalled) makes every next connection suspect at once.
  EXPECT_TRUE(b.may_exceed(t0 + milliseconds(5000), limit));
}

TEST(ListenerTest, OneReusePortSocketPerCopy) {
  uint16_t port = free_port();
  auto ls = open_listeners({{"127.0.0.1", port, false}}, 16, true, 3);
  ASSERT_EQ(ls.size(), 3u);
  for (const auto& l : ls) EXPECT_EQ(port_of(l.fd), port);
  close_all(ls);
  auto shared = open_listeners({{"127.0.0.1", port, false}}, 16, false, 3);
  EXPECT_EQ(shared.size(), 1u);  // without reuseport the acceptors share one socket
  close_all(shared);
}

TEST(ListenerTest, AnAddressInUseIsRefusedByName) {
  uint16_t port = free_port();
  auto ours = open_listeners({{"127.0.0.1", port, false}}, 16, true, 1);
  try {
    auto again = open_listeners({{"127.0.0.1", port, false}}, 16, true, 2);
    close_all(again);
    ADD_FAILURE() << "a second group joined the first one's port";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("in use"), std::string::npos) << e.what();
  }
  close_all(ours);
}

TEST(ListenerTest, IPv6AndIPv4OnOnePortCoexist) {
  uint16_t port = free_port();
  std::vector<Listener> ls;
  try {
    ls = open_listeners({{"::1", port, true}, {"127.0.0.1", port, false}}, 16, true, 1);
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("::1") != std::string::npos) {
      GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
    }
    throw;
  }
  ASSERT_EQ(ls.size(), 2u);
  int v6only = 0;
  socklen_t len = sizeof v6only;
  ::getsockopt(ls[0].fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, &len);
  EXPECT_EQ(v6only, 1);
  close_all(ls);
}

TEST(ListenerTest, AcceptedSocketsInheritNoDelay) {
  uint16_t port = free_port();
  int lfd = open_listener({"127.0.0.1", port, false}, 16, false);
  int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  int s = -1;
  for (int i = 0; i < 1000 && s < 0; ++i) {
    s = ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
    if (s < 0) ::usleep(1000);
  }
  ASSERT_GE(s, 0);
  int nodelay = 0;
  socklen_t len = sizeof nodelay;
  ::getsockopt(s, IPPROTO_TCP, TCP_NODELAY, &nodelay, &len);
  EXPECT_EQ(nodelay, 1);
  ::close(s);
  ::close(c);
  ::close(lfd);
}

}  // namespace
}  // namespace weft::http
