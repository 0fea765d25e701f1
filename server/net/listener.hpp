// Listening sockets and the accept loop.
//
// Each configured address gets one socket per processor with SO_REUSEPORT (the kernel
// spreads new connections over them, so each acceptor fiber has its own queue), or, with
// server.reuseport = false, one socket that an acceptor fiber per processor shares. IPv6
// sockets are IPV6_V6ONLY, so "[::]:80" and "0.0.0.0:80" can both be listed.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/cancel.hpp"
#include "server/core/config.hpp"
#include "server/net/admission_gate.hpp"
#include "server/net/connection.hpp"
#include "server/net/server_context.hpp"

namespace weft::http {

/// The admission state of one listening socket, shared by its acceptors (one, or one per
/// processor when server.reuseport = false): its gate (limits.queue_target), and whether one
/// of them paused it (limits.max_queue_wait; see pause_listening in listener.cpp). Only one
/// may pause it: shutdown(2) again would reset the queue refilled since, and a stale
/// connection accepted within max_queue_wait of the last resume was queued before that
/// pause, so it is no news. A mutex, held for a check, never across a system call or a park.
class ListenerAdmission {
 public:
  /// The admission of listening socket `fd` (which outlives it): gate open, not paused.
  explicit ListenerAdmission(int fd) : gate(fd) {}

  /// Claims the socket for a pause at `now`; false when it is paused or resumed less than
  /// `gap` ago.
  bool claim_pause(rt::TimePoint now, rt::Duration gap);

  /// Ends the pause claimed; the socket listens again from `now`.
  void end_pause(rt::TimePoint now);

  AdmissionGate gate;

 private:
  std::mutex mutex_;
  bool paused_ = false;
  rt::TimePoint resumed_{};
};

/// One listening socket and its admission state.
struct Listener {
  ListenAddress address;
  int fd = -1;
  std::shared_ptr<ListenerAdmission> admission;  // shared by the copies its acceptors hold
  bool tls = false;                              // server.listen_tls: connections speak TLS
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
/// the access log like any answer. (A TLS listener's connection is closed unanswered: a
/// plain 503 means nothing to a TLS client, and a handshake is what there is no room for.)
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
///
/// Where it does not hold, and why that is kept (issue 32, 2.10): the queue is FIFO by
/// handshake, but the wait read is tcpi_last_data_recv, the time since the connection's last
/// data (its handshake when none came). A connection whose request came late reads younger
/// than its handshake, so the bound set from it can be too low for the one behind it: A
/// completes its handshake at 0 s and sends its request at 1.5 s, B completes at 0.1 s and
/// sends at 0.2 s; both accepted at 2 s, A reads 0.5 s, and B (1.8 s) is not read and is
/// served instead of reset. No cheap sound bound exists: TCP_INFO has no handshake time, and
/// a bound that never fell below its last value would read every connection for good.
/// Kept because a miss costs little and does not last: the connection missed is served, as
/// every connection was before the limit existed (one response to a client that may have
/// left); the bound only grows until the next read, so reads resume within max_queue_wait of
/// accepting; and the case the limit is for, a queue the server is behind on, has HTTP clients
/// that send their request with the handshake (data and handshake ages then differ by a round
/// trip), where the bound is sound and every connection near the limit is read. The
/// admission gate, which samples the queue's length, does not depend on it.
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

/// Accepts connections on `listener` and starts a fiber serving `site` for each, in the context
/// `current` holds at its accept (reloads swap it), until `stop` is cancelled. Running out of
/// descriptors backs off (1 ms doubling to 100 ms) instead of spinning. Only the site's listeners
/// shed and pause under overload (limits.max_queue_wait): the metrics endpoint is most wanted then.
void accept_loop(CurrentContext& current, const Listener& listener, rt::CancelToken& stop,
                 Site site = Site::files);

}  // namespace weft::http
