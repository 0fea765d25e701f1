// kernel_tls_available against the kernel itself.
#include "server/tls/kernel_tls.hpp"

#include <cerrno>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace weft::http {
namespace {

// The kernel itself is the oracle: attaching the "tls" upper layer to an established TCP
// socket succeeds exactly where kernel TLS exists (ENOENT where the module is absent).
TEST(KernelTls, AgreesWithTheKernel) {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const bool attached = ::setsockopt(client, IPPROTO_TCP, TCP_ULP, "tls", 3) == 0;
  const int why = errno;
  ::close(client);
  ::close(listener);
  EXPECT_EQ(kernel_tls_available(), attached) << "setsockopt(TCP_ULP, tls): " << why;
}

}  // namespace
}  // namespace weft::http
