// Connection: one client connection, served by one fiber from accept to close.
//
// The loop: parse what the buffer holds (llhttp through RequestParser); when a request is
// complete, ask the static handler for its Reply and give that to the ResponseWriter; drop
// the request's bytes and go on with a pipelined successor, or receive more. Responses to
// pipelined requests are queued and sent together when the buffer holds no further complete
// request. on_finished() runs once per response, after its bytes are sent (or the sending
// failed), and ends the request (finish_request.hpp).
//
// Timeouts: a request head must arrive within timeouts.header of its first byte (else 408);
// an idle keep-alive connection is closed after timeouts.keepalive; any send that makes no
// progress for timeouts.send ends the connection.
//
// TLS (a listen_tls connection): the fiber first completes the handshake, within
// timeouts.header of the accept (which also bounds the first request; a slow client's
// handshake waits without a fiber past timeouts.active_wait, as an idle connection), then runs the
// same loop with its bytes read through the TlsStream (ResponseWriter writes through it too). The
// session stays with the connection while it idles (the library releases its buffers);
// before idling on the socket the connection checks that the library holds no received
// bytes. A failed or timed-out handshake closes quietly; a closing connection sends
// close_notify with its last response.
//
// HTTP/2 (connection_h2.cpp): a TLS connection whose ALPN chose "h2", or a plain one that
// opens with the client preface when server.h2c is on, is handed to an H2Session for the
// rest of its life, on this fiber (it keeps its fiber and working state while it idles, up
// to http2.idle_timeout); drain() then wakes the session, which sends GOAWAY and finishes
// its streams.
//
// Threads: the fiber owns everything here; shutdown (another fiber) only calls drain() and
// cancel(), which touch the atomic flags and the cancel tokens.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "runtime/cancel.hpp"
#include "runtime/clock.hpp"
#include "server/files/file_entry.hpp"
#include "server/h2/session.hpp"
#include "server/net/response_writer.hpp"
#include "server/net/server_context.hpp"
#include "server/tls/tls_stream.hpp"

namespace weft::http {

/// A peer's address as text ("127.0.0.1", "::1"; "-" for any other family).
using PeerText = char[INET6_ADDRSTRLEN];

/// Writes the address of `peer` into `out` and returns it.
const char* format_peer(const sockaddr_storage& peer, PeerText& out);

/// What a listener serves: the site (static files), or the metrics endpoint.
enum class Site : std::uint8_t { files, metrics };

class Connection final : private ResponseWriter::Owner, private H2Service {
 public:
  /// Takes ownership of the accepted socket `fd` from `peer` to serve `site` (over TLS with
  /// ctx.tls's certificates when `tls`), in a slot the caller took for it (ctx.slots.take()),
  /// given back when it closes. Make it with new: it deletes itself when it closes.
  Connection(ServerContext& ctx, int fd, const sockaddr_storage& peer, Site site = Site::files,
             bool tls = false);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Serves `c` on the calling fiber until it closes (then deletes it, also when serving
  /// throws) or goes idle (then a readiness wait owns it and starts a new fiber when the
  /// client sends again).
  static void start(Connection* c);

  /// Shutdown: closes the connection now if it is idle; a busy one closes after its
  /// response. Any thread.
  void drain();

  /// Ends the connection's I/O at once (the grace period ran out). Any thread.
  void cancel() { token_.cancel(); }

  Connection* prev = nullptr;  // registry links, guarded by ServerContext::registry_mu
  Connection* next = nullptr;
  ConnectionSlots::Links slot;  // the idle list's links, guarded by ConnectionSlots

 private:
  enum class Outcome { closed, idle };

  static void on_ready(void* arg, int result);
  Outcome run();
  // Receives more of a request (`idle`: a new one); nullopt when bytes came, else the end.
  std::optional<Outcome> receive(bool idle);
  Outcome go_idle();
  // Runs a TLS connection's handshake: nullopt once complete, else the end (closed when it
  // failed, quietly; idle when the client is slow).
  std::optional<Outcome> handshake();
  // receive()'s read through the TLS session.
  int64_t receive_tls(char* into, std::size_t room, rt::TimePoint deadline);
  void acquire_work();
  void release_work();
  bool serve(const Request& req);
  // The answer of the site (or the metrics) to `req`, with its views into `work`.
  Reply decide(const Request& req, ConnectionWork& work);
  // HTTP/2 (connection_h2.cpp): with the client preface when h2c is on, nullopt when the
  // connection speaks HTTP/1.1; serve_h2 runs the session on what came (`first`) and after.
  std::optional<Outcome> sniff_h2c();
  Outcome serve_h2(std::span<const char> first);
  Reply answer(const Request& req, ConnectionWork& work) override;
  RequestNote note(const Request* req, rt::TimePoint started, std::string& text) override;
  int64_t read_file(const FileEntry& file, char* into, std::size_t len, uint64_t offset) override;
  void finished(int status, uint64_t body_sent, const RequestNote& note,
                std::string_view notes) override;
  // Answers `status` without a parsed request (503, 408, a malformed one) and closes.
  void fail_and_close(int status);
  RequestNote note_of(const Request* req, rt::TimePoint started);
  void on_finished(const Outgoing& response, uint64_t body_sent) override;
  bool must_linger(const Request& req) const;
  // Sends the last bytes and closes: lingering when `linger` or late_bytes().
  void close_after(bool linger);
  // Whether the client sent bytes the connection has not read (lingering_close "on").
  bool late_bytes() const;
  // Shuts the sending side and drops what the client still sends (NGINX's lingering close).
  void lingering_close();

  // Kept for the connection's life (a few hundred bytes: all an idle connection costs).
  ServerContext& ctx_;
  int fd_;
  Site site_;
  bool secure_;              // a listen_tls connection: tls_ is made by its first run
  bool handshaken_ = false;  // its handshake completed
  PeerText peer_ = "-";
  rt::CancelToken token_;
  std::atomic<bool> idle_{false};
  std::atomic<bool> h2_{false};  // an H2Session serves it: drain() cancels wake_
  rt::CancelToken wake_;         // the session's wait for the client, ended by a drain
  rt::ReadyWait ready_;
  unsigned requests_ = 0;
  std::size_t have_ = 0;  // bytes in the read area (0 whenever idle)
  bool drained_ = false;  // the last receive left the socket empty (it did not fill the room)
  bool linger_ = true;    // the last response's close must linger (must_linger)
  rt::TimePoint request_started_{};
  rt::TimePoint idle_deadline_{};  // end of the current wait for a request
  ResponseWriter writer_;
  std::unique_ptr<TlsStream> tls_;  // the TLS session, from the handshake on

  // Borrowed from the processor's pool while serving (see ConnectionWork).
  ConnectionWork* work_ = nullptr;
};

}  // namespace weft::http
