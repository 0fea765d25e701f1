// Listening sockets and the accept loop.
//
// Each configured address gets one socket per processor with SO_REUSEPORT (the kernel
// spreads new connections over them, so each acceptor fiber has its own queue), or, with
// server.reuseport = false, one socket that an acceptor fiber per processor shares. IPv6
// sockets are IPV6_V6ONLY, so "[::]:80" and "0.0.0.0:80" can both be listed.
#pragma once

#include <string>
#include <vector>

#include "runtime/io_driver.hpp"
#include "server/config.hpp"
#include "server/connection.hpp"
#include "server/server_context.hpp"

namespace weft::http {

struct Listener {
  ListenAddress address;
  int fd = -1;
};

/// Binds and listens on every address, `copies` sockets each with SO_REUSEPORT when
/// `reuseport`, with TCP_DEFER_ACCEPT of `defer_accept_s` seconds when not 0; throws
/// std::runtime_error naming the address and the reason on failure, also when another socket
/// is already bound there (so weft never joins a SO_REUSEPORT group that another process
/// opened).
std::vector<Listener> open_listeners(const std::vector<ListenAddress>& addresses, int backlog,
                                     bool reuseport, unsigned copies, unsigned defer_accept_s = 0);

/// Binds one listening socket for `address` (used for the metrics endpoint too), with
/// TCP_DEFER_ACCEPT of `defer_accept_s` seconds when not 0.
int open_listener(const ListenAddress& address, int backlog, bool reuseport,
                  unsigned defer_accept_s = 0);

/// Returns the TCP_DEFER_ACCEPT time for server.defer_accept: timeouts.header in whole
/// seconds (at least 1), so that a client that connects and sends nothing is handed to weft
/// (and then timed out by it) about when weft would have timed it out anyway.
unsigned defer_accept_seconds(const Config& config);

/// Answers 503 on the accepted socket `fd` from `peer` and closes it, without a fiber: every
/// slot of limits.max_connections is held by a busy connection. Counted in the metrics and
/// the access log like any answer.
void refuse(ServerContext& ctx, int fd, const sockaddr_storage& peer);

/// An upper bound on how long the next connection an acceptor takes has waited in its
/// listen queue, so that the acceptor reads that wait (a getsockopt of TCP_INFO) only when
/// it could pass limits.max_queue_wait, not once per connection.
///
/// Why it holds: the queue is FIFO, so a connection accepted now arrived after the one this
/// acceptor took before it, and has waited at most that one's wait plus the time between the
/// two accepts. The bound starts unknown (the first connection is read), is set to the wait
/// read, and grows by the time between accepts; under overload, where waits near the limit,
/// every connection is read again, and below it about one per limits.max_queue_wait.
class WaitBound {
 public:
  /// Advances the bound to an accept at `now`; returns whether the wait may exceed `limit`
  /// (then the caller reads it and calls measured()).
  bool may_exceed(rt::TimePoint now, rt::Duration limit);

  /// Records `wait`, read for the connection accepted at `now`.
  void measured(rt::TimePoint now, rt::Duration wait);

 private:
  rt::Duration bound_{};
  rt::TimePoint last_{};  // of the previous accept; {}: nothing known yet
};

/// Accepts connections on `fd` and starts a fiber serving `site` for each, in the context
/// `current` holds at its accept (reloads swap it), until `stop` is cancelled. Running out of
/// descriptors backs off (1 ms doubling to 100 ms) instead of spinning. Only the site's listeners
/// shed and pause under overload (limits.max_queue_wait): the metrics endpoint is most wanted then.
void accept_loop(CurrentContext& current, int fd, rt::CancelToken& stop, Site site = Site::files);

}  // namespace weft::http
