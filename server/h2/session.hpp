// H2Session: one HTTP/2 connection (RFC 9113), server side, on the connection's fiber.
//
// nghttp2 does the framing, HPACK, flow control, stream states and the protocol's own limits;
// this class feeds it the bytes the socket (or the TLS session) gives, answers each request
// when its HEADERS are complete, and writes what it asks to send. The fiber that runs run()
// owns the nghttp2 session and every stream: callbacks run inside nghttp2_session_mem_recv
// and mem_send on that fiber, and a file body's read in a data callback parks only it.
//
// A request is answered as over HTTP/1.1: the H2Service (the Connection) decides the Reply
// (static_handler.hpp, or the metrics), response_head.hpp builds its head, which becomes the
// HEADERS' fields (response_fields.hpp); the body is copied into what the stream keeps (a
// page, a multipart's framing), or referenced (a cached file's bytes held by its FileRef, an
// open file read through the I/O driver in DATA-sized pieces as the windows open: no stream
// holds a buffer of its own while it waits). Request bodies are read and dropped (nghttp2
// returns their window). A stream is ended in the metrics and the access log (protocol
// "HTTP/2.0") when it closes.
//
// Limits ([http2] in conf/weft.toml): concurrent streams, header list and HPACK table sizes
// are advertised in SETTINGS and enforced by nghttp2 (more streams: RST_STREAM
// REFUSED_STREAM); stream resets (Rapid Reset), CONTINUATION frames per header block and
// queued control-frame acknowledgements are nghttp2's options (past them: GOAWAY). weft adds
// the WINDOW_UPDATE flood budget, the idle timeout (no stream, nothing received: GOAWAY
// NO_ERROR) and the stalled-stream timeout (a stream that makes no progress, its window shut:
// RST_STREAM CANCEL).
//
// Priorities: SETTINGS_NO_RFC7540_PRIORITIES = 1, so nghttp2 schedules streams by RFC 9218's
// urgency and incremental flag (the `priority` field and PRIORITY_UPDATE), not the RFC 7540
// tree. No server push.
//
// Shutdown and reload: when the server drains (the wake token is cancelled), the session
// sends GOAWAY NO_ERROR with the last stream id it processed and finishes every stream it
// took; then run() returns. The token ends all I/O at once (the grace period ran out).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cancel.hpp"
#include "runtime/clock.hpp"
#include "server/core/config.hpp"
#include "server/h2/response_fields.hpp"
#include "server/h2/send_batch.hpp"
#include "server/handler/connection_work.hpp"
#include "server/handler/reply.hpp"
#include "server/handler/response_head.hpp"
#include "server/tls/tls_stream.hpp"

struct nghttp2_session;

namespace weft::http {

/// What a connection lends its HTTP/2 session: the answer to a request, and its end.
class H2Service {
 public:
  /// Returns the answer to `req` (its views into `work` live until the next call).
  virtual Reply answer(const Request& req, ConnectionWork& work) = 0;

  /// Returns what the access log will say of `req` (null: none was made), its text appended
  /// to `text`, the request having started at `started`.
  virtual RequestNote note(const Request* req, rt::TimePoint started, std::string& text) = 0;

  /// Reads up to `len` bytes of `file` at `offset` into `into` without blocking a processor
  /// (the I/O driver's read); returns the count (0: the file shrank) or -errno.
  virtual int64_t read_file(const FileEntry& file, char* into, std::size_t len,
                            uint64_t offset) = 0;

  /// Ends an answered request: `status`, `body_sent` body bytes framed, `note` whose text is
  /// in `notes`.
  virtual void finished(int status, uint64_t body_sent, const RequestNote& note,
                        std::string_view notes) = 0;

 protected:
  ~H2Service() = default;
};

/// The socket a session runs on, lent by the connection.
struct H2Wire {
  int fd = -1;
  TlsStream* tls = nullptr;          // reads through this session; null: cleartext (h2c)
  TlsStream* tls_send = nullptr;     // writes through it; null: to the socket (h2c, kTLS)
  rt::CancelToken* token = nullptr;  // cancelled: all I/O ends (the grace period ran out)
  rt::CancelToken* wake = nullptr;   // cancelled when the server begins to drain
  const std::atomic<bool>* draining = nullptr;  // the server's drain flag
  const char* peer = "-";                       // the client's address text, for log lines
};

struct H2Stream;

class H2Session {
 public:
  /// A session of `config`'s [http2] limits on `wire`, with `work`'s read area and handler
  /// state, answering through `service`; heads start with `origin`'s fields.
  H2Session(const Config& config, HeadOrigin origin, H2Wire wire, ConnectionWork& work,
            H2Service& service);
  ~H2Session();
  H2Session(const H2Session&) = delete;
  H2Session& operator=(const H2Session&) = delete;

  /// Serves the connection until it ends; `first` holds bytes already read from it (the
  /// client preface, or part of it). Returns true when the session ended with a GOAWAY sent
  /// (the close should linger so the client reads it), false when the client left or the
  /// socket broke.
  bool run(std::span<const char> first);

  // The steps of run(), without I/O (session.cpp; run() and its I/O are session_io.cpp):
  // what the fuzz target drives.

  /// Makes the nghttp2 session and queues the server's SETTINGS; false when out of memory.
  bool open();

  /// Takes bytes received from the client and answers every request they complete; false
  /// when the connection must end (a GOAWAY is queued).
  bool feed(std::span<const char> bytes);

  /// Appends what nghttp2 has to send to `out`, stopping once `out` holds `limit` bytes;
  /// returns the bytes appended (0: nothing more now), or -1 on a fatal error.
  int64_t produce(SendBatch& out, std::size_t limit);

  /// Returns whether the session still reads or writes (false: the connection is done).
  bool active() const;

  /// Returns the number of streams open now.
  std::size_t open_streams() const { return streams_.size(); }

 private:
  friend struct H2Callbacks;

  // Feeds received bytes to nghttp2; false when the connection must end (GOAWAY queued).
  bool take(const char* data, std::size_t size);
  void answer_ready();
  void answer(H2Stream& s);
  void make_body(H2Stream& s, const Reply& reply);
  // Writes everything nghttp2 has to send; false when the socket broke.
  bool send_pending();
  bool write_out();
  int64_t receive(rt::TimePoint deadline);
  rt::TimePoint next_deadline() const;
  void on_timeout();
  void begin_drain();
  void terminate(uint32_t code, std::string_view why);
  // Returns a stream for `id` (a spare one when there is), listed as open.
  H2Stream* take_stream(int32_t id);
  void close_stream(H2Stream* s);

  // Closed streams kept for reuse. Picked: a page's burst of requests reuses them.
  static constexpr std::size_t kSpareStreams = 16;

  const Config& config_;
  HeadOrigin origin_;
  H2Wire wire_;
  ConnectionWork& work_;
  H2Service& service_;
  nghttp2_session* session_ = nullptr;
  std::vector<H2Stream*> streams_;  // open streams (at most max_concurrent_streams + a few)
  std::vector<H2Stream*> spare_;    // closed streams kept for reuse (at most kSpareStreams)
  std::vector<int32_t> ready_;      // streams whose request is complete, not yet answered
  ResponseFields response_;         // the fields of the response being submitted
  SendBatch out_;                   // bytes to send, batched
  SendBatch* sink_ = &out_;         // the batch produce() fills (send_data appends to it)
  rt::TimePoint last_recv_{};
  unsigned window_updates_ = 0;  // WINDOW_UPDATEs since the last DATA frame sent
  bool calm_ = false;            // a flood was seen: GOAWAY ENHANCE_YOUR_CALM
  bool draining_ = false;        // GOAWAY sent for a drain
  bool goaway_ = false;          // a GOAWAY was queued
};

}  // namespace weft::http
