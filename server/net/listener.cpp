#include "server/net/listener.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <mutex>
#include <stdexcept>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/io.hpp"
#include "runtime/scheduler.hpp"
#include "server/core/processor.hpp"
#include "server/handler/response_head.hpp"
#include "server/http/status.hpp"
#include "server/net/admission_gate.hpp"
#include "server/net/connection.hpp"
#include "server/net/finish_request.hpp"
#include "server/net/response_writer.hpp"
#include "server/ops/access_log.hpp"
#include "server/ops/log_throttle.hpp"
#include "server/ops/metrics.hpp"

namespace weft::http {

namespace io = weft::rt::io;

namespace {

socklen_t to_sockaddr(const ListenAddress& a, sockaddr_storage& ss) {
  ss = {};
  if (a.ipv6) {
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
    s6->sin6_family = AF_INET6;
    s6->sin6_port = htons(a.port);
    inet_pton(AF_INET6, a.host.c_str(), &s6->sin6_addr);
    return sizeof *s6;
  }
  auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
  s4->sin_family = AF_INET;
  s4->sin_port = htons(a.port);
  inet_pton(AF_INET, a.host.c_str(), &s4->sin_addr);
  return sizeof *s4;
}

// A socket for `a` with the options every listener has, not yet bound.
int listener_socket(const ListenAddress& a, int family, bool reuseport) {
  int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    throw std::runtime_error("listen " + a.to_string() + ": socket: " + std::strerror(errno));
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  if (a.ipv6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  return fd;
}

// SO_REUSEPORT lets any socket of the same user join a port's group, so a second weft (or
// an NGINX with `reuseport`) on the same address would silently get part of the other's
// connections. A bind without SO_REUSEPORT fails while any socket is bound there, so one
// probe before the group is opened turns that into "address already in use". (A process
// binding in the moment between probe and group still can join: the check is best effort.)
void check_address_unused(const ListenAddress& a) {
  if (a.port == 0) return;  // an ephemeral port is new by definition
  sockaddr_storage ss;
  socklen_t len = to_sockaddr(a, ss);
  int fd = listener_socket(a, ss.ss_family, false);
  int rc = ::bind(fd, reinterpret_cast<sockaddr*>(&ss), len);
  int err = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error("listen " + a.to_string() + ": " + std::strerror(err));
}

}  // namespace

int open_listener(const ListenAddress& a, int backlog, bool reuseport, unsigned defer_accept_s) {
  sockaddr_storage ss;
  socklen_t len = to_sockaddr(a, ss);
  int fd = listener_socket(a, ss.ss_family, reuseport);
  // Accepted sockets inherit TCP_NODELAY from the listener on Linux (the child socket is a
  // copy of it): one system call per connection fewer than setting it after accept.
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // The kernel queues a connection for accept only once its first data arrived (NGINX's
  // `deferred`): the first receive then finds the request instead of arming a wait for it.
  if (defer_accept_s > 0) {
    int secs = static_cast<int>(defer_accept_s);
    setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &secs, sizeof secs);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0 || ::listen(fd, backlog) != 0) {
    int err = errno;
    ::close(fd);
    throw std::runtime_error("listen " + a.to_string() + ": " + std::strerror(err));
  }
  return fd;
}

unsigned defer_accept_seconds(const Config& config) {
  auto ms = static_cast<uint64_t>(config.timeouts_header.count());
  return static_cast<unsigned>(std::max<uint64_t>(1, (ms + 999) / 1000));
}

std::vector<Listener> open_listeners(const std::vector<ListenAddress>& addresses, int backlog,
                                     bool reuseport, unsigned copies, unsigned defer_accept_s) {
  std::vector<Listener> out;
  try {
    for (const auto& a : addresses) {
      unsigned n = reuseport ? copies : 1;
      if (reuseport) check_address_unused(a);
      for (unsigned i = 0; i < n; ++i) {
        const int fd = open_listener(a, backlog, reuseport, defer_accept_s);
        out.push_back({a, fd, std::make_shared<ListenerAdmission>(fd)});
      }
    }
  } catch (...) {
    for (auto& l : out) ::close(l.fd);
    throw;
  }
  return out;
}

void refuse(ServerContext& ctx, int fd, const sockaddr_storage& peer) {
  // Every slot is busy: the server is saturated, so this must cost next to nothing. No fiber,
  // no buffer and no lingering close: one non-blocking send of the whole 503 (a few hundred
  // bytes fit any fresh socket's buffer), a read of what the client sent already (so that
  // close() finds nothing unread and sends a FIN, not a reset that could overtake the
  // answer), and close.
  HeadBuffer h;
  build_refusal(h, HeadOrigin{ctx.config.server_name, ctx.dates}, 503);
  const std::string_view out = h.view();
  const ssize_t sent = ::send(fd, out.data(), out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
  char scratch[2048];
  for (int i = 0; i < 4 && ::recv(fd, scratch, sizeof scratch, MSG_DONTWAIT) > 0; ++i) {
  }
  ::shutdown(fd, SHUT_WR);
  io::close_detached(fd);  // an accepted connection: io.hpp's contract
  const uint64_t body = sent == static_cast<ssize_t>(out.size()) ? error_body(503).size() : 0;
  PeerText text;
  finish_request(ctx, {.peer = format_peer(peer, text),
                       .status = 503,
                       .body_sent = body,
                       .note = nullptr,  // no request
                       .notes = {}});
}

bool ListenerAdmission::claim_pause(rt::TimePoint now, rt::Duration gap) {
  std::lock_guard lock(mutex_);
  if (paused_ || (resumed_ != rt::TimePoint{} && now - resumed_ < gap)) return false;
  paused_ = true;
  return true;
}

void ListenerAdmission::end_pause(rt::TimePoint now) {
  std::lock_guard lock(mutex_);
  paused_ = false;
  resumed_ = now;
}

namespace {

// Resets a connection at once (SO_LINGER 0, then close: two system calls and no lingering),
// which tells its client straight away instead of letting it wait for a reply that would
// come after its timeout.
void shed(int fd) {
  linger lg{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  io::close_detached(fd);  // an accepted connection: io.hpp's contract
}

// Reads fd's TCP_INFO into `ti`; false when it cannot be read.
bool read_tcp_info(int fd, tcp_info& ti) {
  socklen_t len = sizeof ti;
  return ::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0;
}

// How long the connection just accepted waited in the kernel's listen queue, in ms. The
// kernel stamps a connection when its handshake completes and again when data arrives
// (tcpi_last_data_recv: milliseconds since then), so this is how long its request, or its
// empty handshake, has been waiting: one getsockopt, no clock of our own. 0 when unreadable.
uint64_t queue_wait_ms(int fd) {
  tcp_info ti{};
  return read_tcp_info(fd, ti) ? ti.tcpi_last_data_recv : 0;
}

// Decides what becomes of a freshly accepted connection: served on a fiber of its own in a
// slot of limits.max_connections (a free one, or the longest-idle connection's), else
// answered 503 at once.
void admit(ServerContext& ctx, int c, const sockaddr_storage& peer, Site site, bool tls) {
  const ProcessorMetrics metrics = ctx.processor_metrics();
  if (!ctx.slots.take()) {
    metrics.on_rejected_connection();
    if (tls) {
      io::close_detached(c);  // an accepted connection: io.hpp's contract
    } else {
      refuse(ctx, c, peer);
    }
    return;
  }
  metrics.on_connection_open();
  auto* conn = new Connection(ctx, c, peer, site, tls);
  rt::spawn([conn] { Connection::start(conn); }).detach();
}

// Steers a listening socket's admission gate (limits.queue_target) after an accept: the
// gate closes when the wait it predicts for a new arrival passes the target (AdmissionGate).
void steer_gate(ServerContext& ctx, AdmissionGate& gate, rt::TimePoint now) {
  const rt::Duration target = ctx.config.queue_target;
  if (target.count() == 0) return;
  if (gate.steer_sampled(target, now) > 0) {
    ctx.processor_metrics().on_gate_close();
    spdlog::debug("admission gate closed");
  }
}

}  // namespace

bool WaitBound::may_exceed(rt::TimePoint now, rt::Duration limit) {
  if (last_ == rt::TimePoint{}) return true;  // nothing known yet
  bound_ += now - last_;
  last_ = now;
  return bound_ > limit;
}

void WaitBound::measured(rt::TimePoint now, rt::Duration wait) {
  bound_ = wait;
  last_ = now;
}

namespace {

// Takes connection `c`, just accepted on `listener`: serves it (admit()), or, when
// it waited in the listen queue past limits.max_queue_wait (its client has likely given up), resets
// it and returns false: the queue went stale. Either way the admission gate follows the queue. The
// wait is read (a getsockopt) only when `bound` cannot rule it out.
bool take(ServerContext& ctx, const Listener& listener, int c, const sockaddr_storage& peer,
          Site site, WaitBound& bound) {
  ListenerAdmission& admission = *listener.admission;
  if (site == Site::metrics) {
    admit(ctx, c, peer, site, false);
    return true;
  }
  const rt::Duration limit = ctx.config.max_queue_wait;  // "0s": never read the wait
  const rt::TimePoint now = rt::now();
  bool stale = false;
  if (limit.count() != 0 && bound.may_exceed(now, limit)) {
    const uint64_t waited = queue_wait_ms(c);
    bound.measured(now, std::chrono::milliseconds(waited));
    stale = std::chrono::milliseconds(waited) > limit;
  }
  if (stale) {
    shed(c);
    ctx.processor_metrics().on_shed_connection();
    static LogThrottle shed_lines{1};  // a stale queue sheds thousands a second
    shed_lines.log(spdlog::level::warn,
                   "overload: reset a connection that waited over limits.max_queue_wait "
                   "({} ms) in the listen queue",
                   ctx.config.max_queue_wait.count());
  } else {
    admit(ctx, c, peer, site, listener.tls);
  }
  steer_gate(ctx, admission.gate, now);
  return !stale;
}

// The listen queue went stale: more connections arrive than this processor serves. Stops
// listening for a while (shutdown(SHUT_RD) on a listening socket; the port stays bound), so
// the kernel refuses new connections straight away, in the connecting client's own system
// call, where a reset from weft, or a served reply after the client's timeout, would cost
// the server as much CPU as a reply it could have given. The kernel resets what was queued
// behind the stale one (each reset costs about what a shed does). Listens again once half of
// the connections open at the pause have finished (fresh work before the open ones run out),
// after max_queue_wait at most, or at once when `stop` is cancelled.
void pause_listening(ServerContext& ctx, const Listener& listener, rt::CancelToken& stop) {
  const int fd = listener.fd;
  ListenerAdmission& admission = *listener.admission;
  unsigned queued = accept_queue_length(fd);  // what the kernel is about to reset
  if (!admission.claim_pause(rt::now(), ctx.config.max_queue_wait)) return;
  if (::shutdown(fd, SHUT_RD) != 0) {
    admission.end_pause({});
    return;  // not paused: keep accepting as before
  }
  ctx.processor_metrics().on_listen_pause(queued);
  // At most one line per socket per max_queue_wait (claim() above), so overload cannot
  // flood the log.
  spdlog::warn(
      "overload: a connection waited over limits.max_queue_wait ({} ms) in the listen queue; "
      "reset it and the {} queued behind it, and stopped accepting for a while",
      ctx.config.max_queue_wait.count(), queued);
  unsigned open_at = ctx.slots.open();
  auto paused_at = rt::now();
  auto until = paused_at + ctx.config.max_queue_wait;
  // Bounded: one check per millisecond for at most max_queue_wait.
  while (!stop.cancelled() && rt::now() < until && ctx.slots.open() > open_at / 2) {
    rt::sleep_for(std::chrono::milliseconds(1));
  }
  if (::listen(fd, ctx.config.backlog) != 0) {
    spdlog::error("listen again after an overload pause: {}", std::strerror(errno));
  } else {
    spdlog::info(
        "overload: accepting again after {} ms",
        std::chrono::duration_cast<std::chrono::milliseconds>(rt::now() - paused_at).count());
  }
  admission.end_pause(rt::now());
}

// After the turn's first accept: takes what else the kernel has queued without waiting, up to
// limits.accept_batch connections this turn (the acceptor's next turn comes only after every
// fiber queued meanwhile). Errors, EAGAIN included, end the turn; the next io::accept reports
// any that persists. Returns false when the queue went stale (see take()).
bool accept_more(ServerContext& ctx, const Listener& listener, Site site, WaitBound& bound) {
  const int fd = listener.fd;
  for (unsigned i = 1; i < ctx.config.accept_batch; ++i) {
    // Over the connection limit the rest wait in the kernel's queue: accepting them only
    // to answer 503 and linger would spend the time the open ones need.
    if (!ctx.slots.available()) return true;
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    int c = ::accept4(fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (c < 0) return true;
    if (!take(ctx, listener, c, peer, site, bound)) return false;
  }
  return true;
}

}  // namespace

void accept_loop(CurrentContext& current, const Listener& listener, rt::CancelToken& stop,
                 Site site) {
  const int fd = listener.fd;
  AdmissionGate& gate = listener.admission->gate;
  auto backoff = std::chrono::milliseconds(1);
  WaitBound bound;
  while (true) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    rt::Processor* p = rt::Processor::current();
    uint64_t rounds = p->rounds();
    // A closed admission gate with nothing left to accept opens after limits.queue_target.
    rt::TimePoint deadline = rt::kNoDeadline;
    if (site == Site::files && gate.is_closed()) {
      CurrentContext::Pin pin(current);  // a reload may retire the context meanwhile
      deadline = rt::now() + pin.ctx().config.queue_target;
    }
    int c = io::accept(fd, reinterpret_cast<sockaddr*>(&peer), &len, deadline, &stop);
    // Parked: the processor picked other fibers meanwhile (or this one moved).
    bool parked = rt::Processor::current() != p || p->rounds() != rounds;
    if (c < 0) {
      if (c == -ECANCELED) return;
      if (c == -ETIMEDOUT) {
        gate.open();  // nothing queued: let arrivals in
        continue;
      }
      if (c == -EMFILE || c == -ENFILE || c == -ENOBUFS || c == -ENOMEM) {
        // Out of descriptors or memory: wait for some to free up rather than spin on the
        // pending connection. Those in the backlog wait (or time out on the client side).
        spdlog::warn("accept: {}; backing off {} ms", std::strerror(-c), backoff.count());
        rt::sleep_for(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
        continue;
      }
      if (c == -ECONNABORTED || c == -EINTR || c == -EAGAIN || c == -EPROTO) continue;
      if (c == -EINVAL) {
        // Not listening: another acceptor sharing this socket (server.reuseport = false)
        // paused it under overload (pause_listening); it listens again within max_queue_wait.
        rt::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      spdlog::error("accept: {}", std::strerror(-c));
      rt::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    backoff = std::chrono::milliseconds(1);
    // The configuration in force now serves this connection to its end (a reload in
    // between changes only the connections accepted after it).
    CurrentContext::Pin pin(current);
    ServerContext& ctx = pin.ctx();
    bool fresh = take(ctx, listener, c, peer, site, bound);
    if (fresh) fresh = accept_more(ctx, listener, site, bound);
    // A stale queue behind a closed gate drains by resets as it is taken (the gate already
    // keeps new clients out). Otherwise (no gate, no socket filter here, or a queue that went
    // stale before the gate closed, as after a stop) the listener pauses.
    if (!fresh && !gate.is_closed()) pause_listening(ctx, listener, stop);
    // One turn per scheduling round on both backends. epoll's accept4 succeeds without
    // parking while the kernel's queue is non-empty, so without this the acceptor would take
    // the whole queue into the server at once (every connection then waits behind all the
    // others); io_uring's accept parks until its completion is reaped, which already ends the
    // turn (a yield there as well made the tail latency under a CPU cap worse).
    if (!parked) rt::yield();
  }
}

}  // namespace weft::http
