// TlsStream: one TLS session over a connected socket, on the runtime's I/O: the server's side
// of a connection (TlsContext::new_session) or weft-load's client side.
//
// OpenSSL runs on memory buffers (two memory BIOs), never on the socket: the ciphertext goes
// in and out through rt::io's recv and send, so on io_uring the session's socket I/O is in the
// ring like a plain connection's, and a fiber that waits for the client parks as it would
// there; no processor ever blocks in the library. The cost is one copy of each record between
// the BIO and the socket, a memcpy against the encryption itself.
//
// A session that asks for kernel TLS (SSL_OP_ENABLE_KTLS, tls.ktls) runs its handshake on the
// socket instead, since OpenSSL hands the keys to the kernel only through a socket BIO. Where
// the kernel then took the sending side (kernel_sends), the connection writes plaintext to the
// socket itself, file bodies with sendfile/splice as over plain HTTP, and reads stay with the
// library there; where it refused, the session goes on over the memory buffers as above.
//
// OpenSSL's error queue belongs to the thread, and a fiber may resume on another processor
// after any wait: every call here empties the queue before it can wait.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include <sys/uio.h>

#include "runtime/cancel.hpp"
#include "runtime/clock.hpp"
#include "server/tls/tls_library.hpp"

namespace weft::http {

class TlsStream {
 public:
  /// Runs `session` (owned; its accept or connect state set) on the connected socket `fd`
  /// (not owned). A null session (no memory) makes every call fail with -ENOMEM.
  TlsStream(SSL* session, int fd);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  /// Completes the handshake by `deadline`; returns 0, -ETIMEDOUT, -ECANCELED, -ECONNRESET
  /// (the peer left), -EPROTO (not TLS, or the handshake failed; the alert was sent), or
  /// -EMSGSIZE (a ClientHello over bound_client_hello's limit; nothing sent).
  int handshake(rt::TimePoint deadline, rt::CancelToken* token = nullptr);

  /// Server side: gathers the client's ClientHello itself, handing it to the library only
  /// whole, and refuses one announcing more than `limit` bytes (tls.max_client_hello).
  void bound_client_hello(std::size_t limit) { hello_limit_ = limit; }

  /// Reads up to len bytes of plaintext: the count, 0 when the peer closed (close_notify or
  /// end of stream), or -errno as handshake.
  int64_t read(void* buf, std::size_t len, rt::TimePoint deadline,
               rt::CancelToken* token = nullptr);

  /// Writes all len bytes as records and sends them; returns len or -errno.
  int64_t write_all(const void* buf, std::size_t len, rt::TimePoint deadline,
                    rt::CancelToken* token = nullptr);

  /// Returns whether the kernel makes the records this session sends (kTLS), after the
  /// handshake: the connection then writes plaintext to the socket itself, and writev_all,
  /// write_all and seal fail with -EOPNOTSUPP.
  bool kernel_sends() const { return kernel_sends_; }

  /// Returns whether the session asked for kernel TLS (its handshake ran on the socket).
  bool asked_kernel() const;

  /// Writes the `count` slices of `iov` as records, sending them whenever a batch is waiting
  /// and, unless `more`, the rest before it returns (with `more` they are held for the next
  /// write, flush or close_notify, to share its packets: MSG_MORE's meaning). Returns the
  /// bytes written or -errno; adds to *sent the plaintext bytes whose records went out.
  int64_t writev_all(const iovec* iov, int count, bool more, rt::TimePoint deadline,
                     rt::CancelToken* token = nullptr, uint64_t* sent = nullptr);

  /// Encrypts len bytes into records held for the next send, without waiting; returns len
  /// or -EPROTO.
  int64_t seal(const void* buf, std::size_t len);

  /// Sends every record held (seal, writev_all with `more`); returns 0 or -errno. After a
  /// failed send the session is lost: every later call fails with -EPIPE (handshake, read,
  /// writes) or does nothing (close_notify).
  int64_t flush(rt::TimePoint deadline, rt::CancelToken* token = nullptr);

  /// Gives back the output buffer once its records are sent, and the input buffer once
  /// read (the connection goes idle: it then holds only the library's session).
  void trim();

  /// Returns the bytes of memory the records buffer holds (its capacity; tests).
  std::size_t records_held() const { return records_.capacity(); }

  /// Returns whether the library holds received bytes that read() has not returned yet
  /// (plaintext of an opened record, or ciphertext not yet opened): a wait for the socket
  /// to become readable would not wake for them.
  bool buffered() const;

  /// Sends close_notify, waiting for the socket no longer than `deadline` (a session ended
  /// without it cannot be resumed); records held go out first.
  void close_notify(rt::TimePoint deadline, rt::CancelToken* token = nullptr);

  /// Ends a completed session without sending anything (an idle connection closed by the
  /// server): it stays resumable, as after close_notify. A failed session is left as is.
  void quiet_close();

  /// Returns the negotiated version ("TLSv1.3"), valid after the handshake.
  const char* protocol() const;

  /// Returns the protocol ALPN chose ("h2", "http/1.1"), empty when none, after the handshake.
  std::string_view alpn() const;

  /// Returns the name the client asked for (SNI), or nullptr.
  const char* server_name() const;

  /// Returns whether the handshake resumed an earlier session (a ticket or the cache).
  bool resumed() const;

  /// Returns the OpenSSL session (for a client keeping it to resume).
  SSL* session() const { return ssl_; }

 private:
  // Receives what the socket holds (waiting for it) into the input BIO; 0 at end of stream.
  int64_t fill(rt::TimePoint deadline, rt::CancelToken* token);
  // After an OpenSSL call returned `rc`: flushes, then receives when the library wants
  // input; returns 1 to call it again, or the call's result (0 end of stream, -errno).
  int64_t settle(int rc, rt::TimePoint deadline, rt::CancelToken* token);
  // settle for a session on the socket: waits for the readiness the library wants.
  int64_t settle_socket(int err, rt::TimePoint deadline, rt::CancelToken* token);
  // After a handshake on the socket: stays there where the kernel took the sending side,
  // else moves to the memory buffers; 0 or -errno.
  int keep_socket_or_memory();
  // Gives the session the memory BIOs (drops it when there is no memory for them).
  void attach_memory();
  // Gives the session a BIO on the socket (kernel TLS asked), attaching the "tls" ULP where
  // the kernel has it.
  void attach_socket();
  void drop_session();
  // Receives until the ClientHello is whole (bound_client_hello); 0 or -errno as handshake.
  int await_client_hello(rt::TimePoint deadline, rt::CancelToken* token);
  // await_client_hello on the socket (kernel TLS asked): looks at the headers only.
  int peek_client_hello(rt::TimePoint deadline, rt::CancelToken* token);

  SSL* ssl_;
  BIO* in_ = nullptr;   // ciphertext from the client (owned by ssl_); null on the socket
  BIO* out_ = nullptr;  // ciphertext for the client (owned by ssl_): appends to records_
  // The records written and not yet sent. Kept between sends (a buffer grown anew for
  // every large body cost 15% of the CPU of 64 KiB responses), given back by trim().
  std::vector<char> records_;
  int fd_;
  bool socket_ = false;          // the session reads and writes the socket (kernel TLS asked)
  bool kernel_sends_ = false;    // the kernel makes the records it sends
  bool lost_ = false;            // a send failed: records were dropped (see flush)
  std::size_t hello_limit_ = 0;  // the ClientHello's bound while it is gathered; 0: done
};

}  // namespace weft::http
