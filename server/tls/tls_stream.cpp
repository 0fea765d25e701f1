#include "server/tls/tls_stream.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <new>
#include <utility>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include "runtime/io.hpp"
#include "server/tls/kernel_tls.hpp"

namespace weft::http {
namespace {

// What settle() tells the loop around an OpenSSL call.
constexpr int64_t kDone = 0;   // the call succeeded (and its output is sent)
constexpr int64_t kAgain = 1;  // input arrived: call it again
constexpr int64_t kEnd = 2;    // the peer closed (close_notify or end of stream)

// A receive takes at most this much at a time: requests are small, and the buffer lives on
// the fiber's stack (a larger record just takes several receives).
constexpr std::size_t kReceive = 4096;
// Plaintext per SSL_write: one full record.
constexpr std::size_t kRecord = 16 * 1024;
// Records are sent once this much is waiting, so a large body is not encrypted whole into
// memory before its first byte leaves.
constexpr long kSendBatch = 64 * 1024;

// What the bytes a server has gathered say of the client's first flight (RFC 8446 §5.1, §4).
enum class Hello : std::uint8_t {
  partial,    // a ClientHello not yet whole
  whole,      // the whole ClientHello is in
  too_large,  // it announces more than the bound, or its records take more than twice it
  other,      // no ClientHello in handshake records: the library answers that itself
};

// Reads the records at the start of `p` (len bytes) as the carriers of a ClientHello no
// larger than `limit` (its 4-byte header included). Allocates nothing.
Hello client_hello(const unsigned char* p, std::size_t len, std::size_t limit) {
  unsigned char head[4] = {};
  std::size_t got = 0;  // handshake bytes the whole records and the last part hold
  std::size_t pos = 0;
  while (pos + 5 <= len) {
    if (p[pos] != 22) return pos == 0 ? Hello::other : Hello::whole;  // the library judges
    const std::size_t record = std::size_t{p[pos + 3]} << 8 | p[pos + 4];
    const std::size_t here = std::min(record, len - pos - 5);
    for (std::size_t i = 0; i < here && got + i < 4; ++i) head[got + i] = p[pos + 5 + i];
    got += here;
    if (got >= 4) {
      if (head[0] != 1) return Hello::other;  // not a ClientHello
      const std::size_t want =
          4 + (std::size_t{head[1]} << 16 | std::size_t{head[2]} << 8 | head[3]);
      if (want > limit) return Hello::too_large;
      if (got >= want) return Hello::whole;
    }
    if (here < record) break;
    pos += 5 + record;
  }
  if (len > 0 && p[0] != 22) return Hello::other;
  // Many tiny records would hold the buffer past the bound without announcing anything.
  return len > 2 * limit + 5 ? Hello::too_large : Hello::partial;
}

// The output BIO: the library's records appended to the stream's vector (BIO data). Written
// here rather than a memory BIO (BIO_s_mem) because that one wipes its whole buffer on every
// reset, and grows by reallocations that copy and wipe the old one (BUF_MEM_grow_clean):
// 7% and 15% of the CPU of 64 KiB responses over TLS. Ciphertext is on the wire anyway.
int records_write(BIO* b, const char* data, int len) {
  auto* records = static_cast<std::vector<char>*>(BIO_get_data(b));
  BIO_clear_retry_flags(b);
  if (len <= 0) return 0;
  try {
    records->insert(records->end(), data, data + len);
  } catch (const std::bad_alloc&) {
    return -1;  // the library fails the write: the connection ends
  }
  return len;
}

long records_ctrl(BIO* b, int cmd, long /*num*/, void* /*ptr*/) {
  auto* records = static_cast<std::vector<char>*>(BIO_get_data(b));
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;  // sent by TlsStream::flush, not by the library
    case BIO_CTRL_PENDING:
    case BIO_CTRL_WPENDING:
      return records ? static_cast<long>(records->size()) : 0;
    default:
      return 0;
  }
}

int records_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

// The method, made once per process.
const BIO_METHOD* records_method() {
  static BIO_METHOD* method = [] {
#ifdef WEFT_WITH_WOLFSSL
    BIO_METHOD* m = BIO_meth_new(WOLFSSL_BIO_UNDEF, "weft records");  // no index to take
#else
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "weft records");
#endif
    if (m) {
      BIO_meth_set_write(m, records_write);
      BIO_meth_set_ctrl(m, records_ctrl);
      BIO_meth_set_create(m, records_create);
    }
    return m;
  }();
  return method;
}

// Whether `ssl` asks for kernel TLS (never with a library that has none).
bool asks_kernel(SSL* ssl) {
#ifdef WEFT_LIBRARY_KTLS
  return ssl && (SSL_get_options(ssl) & SSL_OP_ENABLE_KTLS) != 0;
#else
  (void)ssl;
  return false;
#endif
}

// Whether the kernel took the sending / receiving side of a session on the socket.
bool kernel_took(SSL* ssl, bool sending) {
#ifdef WEFT_LIBRARY_KTLS
  return sending ? BIO_get_ktls_send(SSL_get_wbio(ssl)) : BIO_get_ktls_recv(SSL_get_rbio(ssl));
#else
  (void)ssl;
  (void)sending;
  return false;
#endif
}

// Whether a failed call on the socket saw the peer leave: a system error (a reset), or end
// of stream where a record was due (OpenSSL 3's unexpected-EOF reason). Any system error
// counts: the library keeps errno to itself, and on the memory buffers a reset ends the
// connection just the same (recv's -ECONNRESET), so callers need not tell them apart.
bool peer_left(int err) {
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
  if (err == SSL_ERROR_SSL)
    return ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
#endif
  return err == SSL_ERROR_SYSCALL;
}

}  // namespace

TlsStream::TlsStream(SSL* session, int fd) : ssl_(session), fd_(fd) {
  if (asks_kernel(ssl_)) {
    attach_socket();
    return;
  }
  attach_memory();
}

void TlsStream::attach_socket() {
  // The library hands the keys to the kernel only through a socket BIO (after the handshake),
  // so the handshake runs on the socket: non-blocking, waiting for readiness through rt::io
  // (settle_socket). The BIO is made by hand, not with SSL_set_fd, which attaches the "tls"
  // ULP itself on every connection: where the module is missing that asks the kernel to load
  // it each time (a modprobe on the processor, with CAP_NET_ADMIN). weft attaches it only
  // where the start-up probe found it; elsewhere the library's key hand-over fails at once
  // and the session falls back to its own records.
  BIO* socket = BIO_new(BIO_s_socket());
  if (!socket) {
    drop_session();
    return;
  }
  BIO_set_fd(socket, fd_, BIO_NOCLOSE);
  SSL_set_bio(ssl_, socket, socket);  // one reference, for both directions
  if (kernel_tls_available()) (void)::setsockopt(fd_, IPPROTO_TCP, TCP_ULP, "tls", 3);
  socket_ = true;
}

void TlsStream::attach_memory() {
  in_ = BIO_new(BIO_s_mem());
  out_ = records_method() ? BIO_new(records_method()) : nullptr;
  if (out_) BIO_set_data(out_, &records_);
  if (!in_ || !out_) {  // no memory: every call fails with -ENOMEM
    drop_session();
    return;
  }
  // An empty input buffer means "not yet", not end of stream: the library then asks for more.
  BIO_set_mem_eof_return(in_, -1);
  if (ssl_) SSL_set_bio(ssl_, in_, out_);  // frees a socket BIO set before (not the fd)
}

void TlsStream::drop_session() {
  if (ssl_) SSL_free(ssl_);  // with the BIOs it holds
  ssl_ = nullptr;
}

TlsStream::~TlsStream() {
  if (ssl_) {
    SSL_free(ssl_);  // and its BIOs with it
  } else {
    BIO_free(in_);
    BIO_free(out_);
  }
}

int64_t TlsStream::flush(rt::TimePoint deadline, rt::CancelToken* token) {
  if (lost_) return -EPIPE;
  if (records_.empty()) return 0;
  int64_t r =
      rt::io::send_all(fd_, records_.data(), records_.size(), MSG_NOSIGNAL, deadline, token);
  records_.clear();  // everything in it went out, or the session is lost
  if (r < 0) {
    // How much of the records left is unknown: the client could not open the next one, so
    // nothing more may be sent or awaited (a handshake or read that timed out here would
    // otherwise idle and go on with a gap in the stream).
    lost_ = true;
    return r;
  }
  return 0;
}

void TlsStream::trim() {
  if (records_.empty()) std::vector<char>().swap(records_);
  // The input buffer keeps the capacity its largest receive gave it: a fresh one instead
  // (SSL_set_bio frees the old one, keeping the output one, unchanged), so an idle session
  // holds no buffer of its own.
  if (in_ && !socket_ && ssl_ && BIO_ctrl_pending(in_) == 0) {
    if (BIO* fresh = BIO_new(BIO_s_mem())) {
      BIO_set_mem_eof_return(fresh, -1);
      SSL_set_bio(ssl_, fresh, out_);
      in_ = fresh;
    }
  }
}

int TlsStream::await_client_hello(rt::TimePoint deadline, rt::CancelToken* token) {
  // OpenSSL grows its handshake buffer to the length a ClientHello announces as soon as the
  // message's 4-byte header arrives (up to 131 KB, zero-filled), and holds it while the client
  // stalls. Gathered here instead, in the input buffer as its bytes come, and handed to the
  // library whole: a stalled client holds what it sent, never more than the bound.
  if (hello_limit_ == 0) return 0;  // a client, or gathered already
  if (socket_) return peek_client_hello(deadline, token);
  while (true) {
    char* data = nullptr;
    const long len = BIO_get_mem_data(in_, &data);
    switch (client_hello(reinterpret_cast<const unsigned char*>(data),
                         len > 0 ? static_cast<std::size_t>(len) : 0, hello_limit_)) {
      case Hello::whole:
      case Hello::other:
        hello_limit_ = 0;  // gathered: the library takes it from here
        return 0;
      case Hello::too_large:
        return -EMSGSIZE;
      case Hello::partial:
        break;
    }
    const int64_t n = fill(deadline, token);
    if (n < 0) return static_cast<int>(n);
    if (n == 0) return -ECONNRESET;
  }
}

int TlsStream::peek_client_hello(rt::TimePoint deadline, rt::CancelToken* token) {
  // On the socket the library reads for itself: its first 9 bytes (the record's header and
  // the handshake message's) are looked at where they lie, the socket waking only once all
  // of them are there (SO_RCVLOWAT), and a ClientHello announcing more than the bound
  // refused before the library reads it.
  int lowat = 9;
  (void)::setsockopt(fd_, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
  const int r = rt::io::poll(fd_, POLLIN, deadline, token);
  lowat = 1;
  (void)::setsockopt(fd_, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof lowat);
  if (r < 0) return r;  // looked at again when the connection wakes
  const std::size_t limit = std::exchange(hello_limit_, 0);
  unsigned char head[9];
  const ssize_t n = ::recv(fd_, head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
  if (n < static_cast<ssize_t>(sizeof head)) return 0;  // the end of the stream: the library's
  // A first record too short for the message's header would hide it: no client sends that.
  if (head[0] == 22 && (head[3] << 8 | head[4]) < 4) return -EPROTO;
  return client_hello(head, sizeof head, limit) == Hello::too_large ? -EMSGSIZE : 0;
}

int64_t TlsStream::fill(rt::TimePoint deadline, rt::CancelToken* token) {
  char buf[kReceive];
  int64_t n = rt::io::recv(fd_, buf, sizeof buf, 0, deadline, token);
  if (n > 0) BIO_write(in_, buf, static_cast<int>(n));
  return n;
}

int64_t TlsStream::settle(int rc, rt::TimePoint deadline, rt::CancelToken* token) {
  const int err = SSL_get_error(ssl_, rc);
  if (socket_) return settle_socket(err, deadline, token);
  ERR_clear_error();  // the queue is this thread's; the waits below may move the fiber
  // Whatever the library wrote goes out first: handshake messages, alerts, tickets.
  const int64_t sent = flush(deadline, token);
  if (err == SSL_ERROR_NONE) return sent < 0 ? sent : kDone;
  if (sent < 0) return sent;
  switch (err) {
    case SSL_ERROR_WANT_READ: {
      int64_t n = fill(deadline, token);
      if (n < 0) return n;
      return n == 0 ? kEnd : kAgain;
    }
    case SSL_ERROR_WANT_WRITE:
      return kAgain;  // a memory buffer is never full; flushed above
    case SSL_ERROR_ZERO_RETURN:
      return kEnd;
    default:
      return -EPROTO;  // not TLS, a failed handshake, a bad record
  }
}

int64_t TlsStream::settle_socket(int err, rt::TimePoint deadline, rt::CancelToken* token) {
  // The library read or wrote the socket itself, and tells of the peer's leaving its way.
  const bool left = peer_left(err);
  ERR_clear_error();
  switch (err) {
    case SSL_ERROR_NONE:
      return kDone;
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE: {
      const int r =
          rt::io::poll(fd_, err == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline, token);
      return r < 0 ? r : kAgain;
    }
    case SSL_ERROR_ZERO_RETURN:
      return kEnd;
    default:
      return left ? kEnd : -EPROTO;
  }
}

int TlsStream::keep_socket_or_memory() {
  kernel_sends_ = kernel_took(ssl_, true);
  const bool kernel_reads = kernel_took(ssl_, false);
  if (kernel_sends_) return 0;  // reads stay with the library, on the socket
  // OpenSSL 3 gives the kernel the receiving side only with the sending one (the same cipher,
  // both directions in one handshake); a session that had it alone could not write here.
  if (kernel_reads) return -EPROTO;
  socket_ = false;  // refused: the library's records, through the memory buffers as any other
  attach_memory();
  return ssl_ ? 0 : -ENOMEM;
}

int TlsStream::handshake(rt::TimePoint deadline, rt::CancelToken* token) {
  if (!ssl_) return -ENOMEM;
  if (lost_) return -EPIPE;
  if (const int rc = await_client_hello(deadline, token); rc != 0) return rc;
  while (true) {
    ERR_clear_error();
    int64_t s = settle(SSL_do_handshake(ssl_), deadline, token);
    if (s == kDone) return socket_ ? keep_socket_or_memory() : 0;
    if (s == kEnd) return -ECONNRESET;
    if (s < 0) return lost_ ? -EPIPE : static_cast<int>(s);
  }
}

int64_t TlsStream::read(void* buf, std::size_t len, rt::TimePoint deadline,
                        rt::CancelToken* token) {
  if (!ssl_) return -ENOMEM;
  if (lost_) return -EPIPE;
  const int want = static_cast<int>(std::min<std::size_t>(len, INT_MAX));
  while (true) {
    // SSL_get_error needs the queue empty before the call; a peek is cheaper than a clear.
    if (ERR_peek_error() != 0) ERR_clear_error();
    int rc = SSL_read(ssl_, buf, want);
    if (rc > 0 && records_.empty()) return rc;  // the usual case: nothing to send
    int64_t s = settle(rc, deadline, token);
    if (s == kDone) return rc;
    if (s == kEnd) return 0;
    if (s < 0) return lost_ ? -EPIPE : s;
  }
}

int64_t TlsStream::write_all(const void* buf, std::size_t len, rt::TimePoint deadline,
                             rt::CancelToken* token) {
  iovec iov{const_cast<void*>(buf), len};
  return writev_all(&iov, 1, false, deadline, token);
}

int64_t TlsStream::writev_all(const iovec* iov, int count, bool more, rt::TimePoint deadline,
                              rt::CancelToken* token, uint64_t* sent) {
  if (!ssl_) return -ENOMEM;
  if (socket_) return -EOPNOTSUPP;  // kernel_sends(): the connection writes the socket itself
  uint64_t written = 0;             // plaintext taken by the library
  uint64_t out = 0;                 // of it, the bytes whose records were sent
  auto send = [&]() -> int64_t {
    const int64_t r = flush(deadline, token);
    if (r == 0) out = written;
    return r;
  };
  int64_t r = 0;
  for (int i = 0; i < count && r == 0; ++i) {
    const auto* p = static_cast<const char*>(iov[i].iov_base);
    std::size_t done = 0;
    while (done < iov[i].iov_len && r == 0) {
      const std::size_t n = std::min(kRecord, iov[i].iov_len - done);
      r = seal(p + done, n);
      if (r < 0) break;
      r = 0;
      done += n;
      written += n;
      // Sent in batches, so a large body is not encrypted whole into memory first.
      if (records_.size() >= static_cast<std::size_t>(kSendBatch)) r = send();
    }
  }
  if (r == 0 && !more) r = send();
  if (sent) *sent += r == 0 && more ? written : out;
  return r < 0 ? r : static_cast<int64_t>(written);
}

int64_t TlsStream::seal(const void* buf, std::size_t len) {
  if (!ssl_) return -ENOMEM;
  if (socket_) return -EOPNOTSUPP;  // as writev_all
  if (lost_) return -EPIPE;
  if (len == 0) return 0;
  // A memory BIO takes every record, so the library neither waits nor writes in part. No
  // SSL_get_error follows, so no clearing before; after, only a failure leaves anything in
  // the thread's queue (ERR_clear_error walks all of its slots: 1% of a 64 KiB response).
  const int rc = SSL_write(ssl_, buf, static_cast<int>(std::min<std::size_t>(len, INT_MAX)));
  if (rc > 0) return rc;
  ERR_clear_error();
  return -EPROTO;
}

bool TlsStream::buffered() const {
  if (!ssl_) return false;
  // On the socket, what the library read ahead is in its record buffer (SSL_has_pending).
  return socket_ ? SSL_has_pending(ssl_) == 1 : SSL_pending(ssl_) > 0 || BIO_ctrl_pending(in_) > 0;
}

void TlsStream::close_notify(rt::TimePoint deadline, rt::CancelToken* token) {
  if (!ssl_ || lost_ || !SSL_is_init_finished(ssl_)) return;
  // On the socket the alert may find it full: waited for, a few times at most.
  for (int tries = 0; tries < 4; ++tries) {
    ERR_clear_error();
    const int rc = SSL_shutdown(ssl_);
    if (!socket_ || rc >= 0 || settle_socket(SSL_get_error(ssl_, rc), deadline, token) != kAgain)
      break;
  }
  ERR_clear_error();
  (void)flush(deadline, token);
}

void TlsStream::quiet_close() {
  if (!ssl_ || !SSL_is_init_finished(ssl_) || (SSL_get_shutdown(ssl_) & SSL_SENT_SHUTDOWN)) {
    return;
  }
  SSL_set_quiet_shutdown(ssl_, 1);
  ERR_clear_error();
  (void)SSL_shutdown(ssl_);
  ERR_clear_error();
}

bool TlsStream::asked_kernel() const {
  return asks_kernel(ssl_);  // the option stays set after the handshake, wherever it went
}

const char* TlsStream::protocol() const {
  return ssl_ ? SSL_get_version(ssl_) : "";
}

std::string_view TlsStream::alpn() const {
  const unsigned char* p = nullptr;
  unsigned len = 0;
  if (ssl_) SSL_get0_alpn_selected(ssl_, &p, &len);
  return p ? std::string_view(reinterpret_cast<const char*>(p), len) : std::string_view{};
}

const char* TlsStream::server_name() const {
  return ssl_ ? SSL_get_servername(ssl_, TLSEXT_NAMETYPE_host_name) : nullptr;
}

bool TlsStream::resumed() const {
  return ssl_ && SSL_session_reused(ssl_) == 1;
}

}  // namespace weft::http
