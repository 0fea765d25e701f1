#include "server/listener.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/io.hpp"
#include "runtime/scheduler.hpp"
#include "server/connection.hpp"
#include "server/metrics.hpp"

namespace weft::http {

namespace io = weft::rt::io;

int open_listener(const ListenAddress& a, int backlog, bool reuseport) {
  sockaddr_storage ss{};
  socklen_t len;
  if (a.ipv6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(a.port);
    inet_pton(AF_INET6, a.host.c_str(), &s6->sin6_addr);
    len = sizeof *s6;
  } else {
    auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
    s4->sin_family = AF_INET;
    s4->sin_port = htons(a.port);
    inet_pton(AF_INET, a.host.c_str(), &s4->sin_addr);
    len = sizeof *s4;
  }
  int fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    throw std::runtime_error("listen " + a.to_string() + ": socket: " + std::strerror(errno));
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (a.ipv6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  // Accepted sockets inherit TCP_NODELAY from the listener on Linux (the child socket is a
  // copy of it): one system call per connection fewer than setting it after accept.
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, backlog) != 0) {
    int err = errno;
    ::close(fd);
    throw std::runtime_error("listen " + a.to_string() + ": " + std::strerror(err));
  }
  return fd;
}

std::vector<Listener> open_listeners(const std::vector<ListenAddress>& addresses, int backlog,
                                     bool reuseport, unsigned copies) {
  std::vector<Listener> out;
  try {
    for (const auto& a : addresses) {
      unsigned n = reuseport ? copies : 1;
      for (unsigned i = 0; i < n; ++i) out.push_back({a, open_listener(a, backlog, reuseport)});
    }
  } catch (...) {
    for (auto& l : out) ::close(l.fd);
    throw;
  }
  return out;
}

namespace {

// Resets a connection at once (SO_LINGER 0, then close: two system calls and no lingering),
// which tells its client straight away instead of letting it wait for a reply that would
// come after its timeout.
void shed(int fd) {
  linger lg{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  ::close(fd);
}

// Decides what becomes of a freshly accepted connection: reset when this processor is
// overloaded (its oldest ready fiber has waited past limits.shed_queue_delay), answered 503
// over limits.max_connections, otherwise served on a fiber of its own.
void admit(ServerContext& ctx, int c, const sockaddr_storage& peer) {
  rt::Processor* p = rt::Processor::current();
  unsigned shard = p->index();
  if (ctx.config.shed_queue_delay.count() > 0 && p->queue_delay() > ctx.config.shed_queue_delay) {
    shed(c);
    if (ctx.metrics) ctx.metrics->on_shed_connection(shard);
    return;
  }
  bool reject = ctx.open_connections.load(std::memory_order_relaxed) >= ctx.config.max_connections;
  if (ctx.metrics) {
    if (reject) {
      ctx.metrics->on_rejected_connection(shard);
    } else {
      ctx.metrics->on_connection_open(shard);
    }
  }
  auto* conn = new Connection(ctx, c, peer, reject);
  rt::spawn([conn] { Connection::start(conn); }).detach();
}

}  // namespace

void accept_loop(ServerContext& ctx, int fd, rt::CancelToken& stop) {
  auto backoff = std::chrono::milliseconds(1);
  while (true) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    int c = io::accept(fd, reinterpret_cast<sockaddr*>(&peer), &len, rt::kNoDeadline, &stop);
    if (c < 0) {
      if (c == -ECANCELED) return;
      if (c == -EMFILE || c == -ENFILE || c == -ENOBUFS || c == -ENOMEM) {
        // Out of descriptors or memory: wait for some to free up rather than spin on the
        // pending connection. Those in the backlog wait (or time out on the client side).
        spdlog::warn("accept: {}; backing off {} ms", std::strerror(-c), backoff.count());
        rt::sleep_for(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
        continue;
      }
      if (c == -ECONNABORTED || c == -EINTR || c == -EAGAIN || c == -EPROTO) continue;
      spdlog::error("accept: {}", std::strerror(-c));
      rt::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    backoff = std::chrono::milliseconds(1);
    admit(ctx, c, peer);
    // Drain what else the kernel has queued, without waiting (the acceptor's next turn comes
    // only after every fiber queued meanwhile); errors, EAGAIN included, end the batch, and
    // the next io::accept reports any that persists.
    for (unsigned i = 1; i < ctx.config.accept_batch; ++i) {
      // Over the connection limit the rest wait in the kernel's queue: accepting them only
      // to answer 503 and linger would spend the time the open ones need.
      if (ctx.open_connections.load(std::memory_order_relaxed) >= ctx.config.max_connections) {
        break;
      }
      len = sizeof peer;
      int more =
          ::accept4(fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (more < 0) break;
      admit(ctx, more, peer);
    }
  }
}

}  // namespace weft::http
