#include "server/tls/kernel_tls.hpp"

#include <fstream>
#include <string>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace weft::http {
namespace {

bool ulp_listed() {
  std::ifstream f("/proc/sys/net/ipv4/tcp_available_ulp");
  std::string word;
  while (f >> word) {
    if (word == "tls") return true;
  }
  return false;
}

// Attaches the "tls" upper layer to an established loopback connection: where kernel TLS is
// a module not yet loaded (Debian builds it as one), this loads it.
void probe_ulp() {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int client = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listener >= 0 && client >= 0 &&
      ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::listen(listener, 1) == 0 &&
      ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) == 0 &&
      ::connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    (void)::setsockopt(client, IPPROTO_TCP, TCP_ULP, "tls", 3);
  }
  if (client >= 0) ::close(client);
  if (listener >= 0) ::close(listener);
}

}  // namespace

bool kernel_tls_available() {
  static const bool available = [] {
    if (ulp_listed()) return true;
    probe_ulp();
    return ulp_listed();
  }();
  return available;
}

}  // namespace weft::http
