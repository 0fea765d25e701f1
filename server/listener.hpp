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
/// `reuseport`; throws std::runtime_error naming the address and the reason on failure,
/// also when another socket is already bound there (so weft never joins a SO_REUSEPORT
/// group that another process opened).
std::vector<Listener> open_listeners(const std::vector<ListenAddress>& addresses, int backlog,
                                     bool reuseport, unsigned copies);

/// Binds one listening socket for `address` (used for the metrics endpoint too).
int open_listener(const ListenAddress& address, int backlog, bool reuseport);

/// Answers 503 on the accepted socket `fd` from `peer` and closes it, without a fiber: every
/// slot of limits.max_connections is held by a busy connection. Counted in the metrics and
/// the access log like any answer.
void refuse(ServerContext& ctx, int fd, const sockaddr_storage& peer);

/// Accepts connections on `fd` and starts a fiber serving `site` for each, in the context
/// `current` holds at its accept (reloads swap it), until `stop` is cancelled. Running out of
/// descriptors backs off (1 ms doubling to 100 ms) instead of spinning. Only the site's listeners
/// shed and pause under overload (limits.max_queue_wait): the metrics endpoint is most wanted then.
void accept_loop(CurrentContext& current, int fd, rt::CancelToken& stop, Site site = Site::files);

}  // namespace weft::http
