// ResponseWriter: turns Replies into bytes on one connection's socket.
//
// It writes each response's head (build_head, response_head.hpp), queues heads and small bodies in
// the connection's arena and sends them together (one sendmsg for a pipelined batch), and streams
// large bodies with sendfile or splice (io.body), or, by default, piece by piece: sendfile for what
// the page cache holds, reads through the I/O driver for the rest (page_cache.hpp), and
// multipart/byteranges bodies as their framing text between the parts' slices (each sent as a
// single range's would be). Every response is an Outgoing record from when it is queued until its
// bytes are out; then, or when sending fails, the writer tells its Owner, with the body bytes the
// client was actually sent; the Connection then ends the request (finish_request.hpp).
//
// Over TLS (use_tls) the same bytes go through the connection's TlsStream as records: queued
// slices with one write, a file body piece by piece read into pooled buffers (as the cold
// path reads, never sendfile or splice: the kernel cannot encrypt here), MSG_MORE becoming
// records held for the next send. The plain path pays one branch on the stream's pointer.
//
// Timeouts: any send that makes no progress for timeouts.send fails, and the connection is
// broken from then on (broken()): nothing more is sent on it.
//
// Threads: the owning connection's fiber only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "runtime/cancel.hpp"
#include "server/handler/connection_work.hpp"
#include "server/handler/reply.hpp"
#include "server/http/response.hpp"
#include "server/net/server_context.hpp"
#include "server/tls/tls_stream.hpp"

namespace weft::http {

class ResponseWriter {
 public:
  /// Who hears of each response's end (the Connection; a test).
  class Owner {
   public:
    /// Called once per response, when its bytes are sent or never will be; `body_sent` is
    /// how many of its body's bytes went out.
    virtual void on_finished(const Outgoing& response, uint64_t body_sent) = 0;

   protected:
    ~Owner() = default;
  };

  /// Writes to socket `fd` of client `peer` (its address text, for log lines; it outlives
  /// the writer) under `token`'s cancellation; `owner` hears of each response's end.
  ResponseWriter(ServerContext& ctx, int fd, const char* peer, rt::CancelToken& token, Owner& owner)
      : ctx_(ctx), fd_(fd), peer_(peer), token_(token), owner_(owner) {}

  /// Uses `w`'s queue from now on (null: none; the queue must then be empty).
  void attach(ConnectionWork* w) { work_ = w; }

  /// Sends through `tls` (the connection's, after its handshake; it outlives the writer's
  /// use of it) instead of the bare socket.
  void use_tls(TlsStream* tls) { tls_ = tls; }

  /// Queues or sends the answer `reply` to `req` (null: no request was parsed) with a
  /// "Connection: close" when `close`; returns false when the connection broke.
  bool write(const Reply& reply, const Request* req, bool close, const RequestNote& note);

  /// Sends everything queued; `flags` go to the send (MSG_MORE when a body follows);
  /// returns false when the connection broke.
  bool flush(int flags = 0);

  /// Finishes every queued response as unsent, dropping the queue (the connection ends).
  void abandon();

  /// Returns whether a send failed (the peer is gone or stuck): nothing more goes out.
  bool broken() const { return broken_; }

 private:
  // A body copied into the arena behind its head when it is at most this long: one
  // contiguous slice, one plain send.
  static constexpr std::size_t kCopyBodyMax = 1024;
  // io.body = "auto" sends a file body in pieces of at most this much, and asks the page
  // cache about each piece just before it goes: one probe per megabyte is noise beside
  // sending it, a piece is small enough that a partly cached file mostly goes inline, and a
  // sendfile of it reads no page that was not asked about.
  static constexpr uint64_t kResidencyRange = 1024 * 1024;
  // How long a file found wholly in the page cache is taken to stay there without asking
  // again. Evicting pages used this recently would take the whole page cache (or a memory
  // cgroup's) turning over within this time.
  static constexpr int64_t kResidentMemoNs = 100'000'000;
  // The smallest read of a cold piece: the room a socket must have before one is read
  // (else the writer waits for more). Picked: tcp_wmem's default send buffer; a smaller
  // read would only cost more reads per byte.
  static constexpr uint64_t kMinColdPiece = 16 * 1024;

  bool queue(const Outgoing& o, std::string_view head, const char* body, FileRef hold);
  void finish_sent(uint64_t sent, bool ok);
  // Empties the slices and the arena, dropping the references that held cached bytes.
  void clear_slices();
  bool stream(const Reply& reply, std::string_view head, const RequestNote& note);
  // Sends the body of a multipart 206: each part's head, then its bytes; then the end.
  bool send_parts(const Reply& reply, uint64_t* sent);
  // Sends bytes in memory (framing, a cached file's slice); adds what went out to *sent.
  bool send_bytes(char* data, std::size_t size, int flags, uint64_t* sent);
  bool send_bytes(iovec* iov, int count, int flags, uint64_t* sent);
  // `more`: other bytes follow this body's (a multipart's next part), for SPLICE_F_MORE.
  bool send_file_body(const FileEntry& file, uint64_t offset, uint64_t length, bool more,
                      uint64_t* sent);
  bool send_with_sendfile(const FileEntry& file, uint64_t offset, uint64_t length, uint64_t* sent);
  // io.body = "auto": piece by piece, each asked about just before it goes.
  bool send_auto(const FileEntry& file, uint64_t offset, uint64_t length, bool more,
                 uint64_t* sent);
  // Sends one piece of at most `length` cached bytes with one sendfile that does not wait
  // for room; returns the bytes sent (0: the socket was full, and now has room), or -1.
  int64_t send_resident_piece(const FileEntry& file, uint64_t offset, uint64_t length,
                              uint64_t* sent);
  // Sends one piece of at most `length` bytes that are not cached: once the socket has room,
  // reads what it takes through the I/O driver into a pooled buffer, held only for that read
  // and its send. `more`: bytes follow the `length`. Returns the bytes sent, or -1.
  int64_t send_cold_piece(const FileEntry& file, uint64_t offset, uint64_t length, bool more,
                          uint64_t* sent);
  // Returns the bytes the socket takes now (its send buffer less what waits in it), or -1
  // when it cannot tell.
  int64_t send_room() const;
  bool send_with_splice(const FileEntry& file, uint64_t offset, uint64_t length, bool more,
                        uint64_t* sent);
  // Returns the socket's room for a cold piece, waiting while it is under kMinColdPiece
  // (-1 when it cannot tell); nullopt when the wait failed (the connection is then broken).
  std::optional<int64_t> wait_for_room(const FileEntry& file);
  // Returns how much of `length` to read for one piece, given the socket's `room` (-1:
  // unknown): at most io.cold_read_size, and no less than kMinColdPiece.
  uint64_t piece_size(uint64_t length, int64_t room) const;
  // Returns whether [offset, offset + length) of `file` is in the page cache (a file found
  // wholly cached within kResidentMemoNs is taken to be, without asking).
  static bool piece_resident(const FileEntry& file, uint64_t offset, uint64_t length);
  // Over TLS: a file body piece by piece (send_tls_piece).
  bool send_tls_file(const FileEntry& file, uint64_t offset, uint64_t length, uint64_t* sent);
  // Over TLS: once the socket has room, reads what it takes into a pooled buffer (through the
  // cold path when the pages are not cached), seals it as records, gives the buffer back,
  // then sends the records. Returns the bytes sent, or -1.
  int64_t send_tls_piece(const FileEntry& file, uint64_t offset, uint64_t length, uint64_t* sent);
  void on_body_error(const FileEntry& file, int64_t result);
  rt::TimePoint send_deadline() const;

  ServerContext& ctx_;
  int fd_;
  const char* peer_;
  rt::CancelToken& token_;
  Owner& owner_;
  ConnectionWork* work_ = nullptr;
  TlsStream* tls_ = nullptr;
  bool broken_ = false;
};

}  // namespace weft::http
