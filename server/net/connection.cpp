#include "server/net/connection.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>

#include <arpa/inet.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "runtime/io.hpp"
#include "server/core/processor.hpp"
#include "server/handler/metrics_endpoint.hpp"
#include "server/handler/static_handler.hpp"
#include "server/net/finish_request.hpp"
#include "server/ops/access_log.hpp"
#include "server/ops/metrics.hpp"

namespace weft::http {

namespace io = weft::rt::io;

namespace {

// Writes IPv4 address `a` (network order) as dotted decimal. Hand-written because glibc's
// inet_ntop formats IPv4 through sprintf, a cost felt on every short connection.
void format_ipv4(in_addr a, char* out) {
  const auto* b = reinterpret_cast<const unsigned char*>(&a.s_addr);
  for (int i = 0; i < 4; ++i) {
    unsigned v = b[i];
    if (v >= 100) *out++ = static_cast<char>('0' + v / 100);
    if (v >= 10) *out++ = static_cast<char>('0' + v / 10 % 10);
    *out++ = static_cast<char>('0' + v % 10);
    *out++ = i < 3 ? '.' : '\0';
  }
}

}  // namespace

const char* format_peer(const sockaddr_storage& peer, PeerText& out) {
  std::strcpy(out, "-");
  if (peer.ss_family == AF_INET) {
    format_ipv4(reinterpret_cast<const sockaddr_in&>(peer).sin_addr, out);
  } else if (peer.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(peer).sin6_addr, out, sizeof out);
  }
  return out;
}

Connection::Connection(ServerContext& ctx, int fd, const sockaddr_storage& peer, Site site,
                       bool tls)
    : ctx_(ctx), fd_(fd), site_(site), secure_(tls), writer_(ctx, fd, peer_, token_, *this) {
  format_peer(peer, peer_);
  ctx_.connections.add(1);
  ctx_.enroll(this);
}

Connection::~Connection() {
  ctx_.withdraw(this);
  release_work();
  // An idle session closed by the server (timed out, drained, its slot reclaimed) stays
  // resumable; nothing is sent, as the connection may not wait here.
  if (tls_) tls_->quiet_close();
  if (fd_ >= 0) io::close_detached(fd_);  // no wait, and no system call of its own on io_uring
  ctx_.slots.release(this);
  ctx_.processor_metrics().on_connection_close();
  ctx_.connections.done();
}

void Connection::start(Connection* c) {
  // Owned here until run() hands it to a readiness wait: a connection whose run throws (out
  // of memory) still closes, gives its slot back and lets shutdown's wait for it end.
  std::unique_ptr<Connection> owner(c);
  if (c->run() == Outcome::idle) (void)owner.release();  // touch nothing: see go_idle
}

void Connection::on_ready(void* arg, int result) {
  auto* c = static_cast<Connection*>(arg);
  c->idle_.store(false, std::memory_order_release);
  const bool kept = c->ctx_.slots.leave_idle(c);
  // Timed out, cancelled (shutdown), or its slot reclaimed for a new client while idle:
  // close quietly.
  if (!kept || result < 0 || c->ctx_.draining.load(std::memory_order_acquire)) {
    // A handshake that idled to its end (timeouts.header, shutdown, its slot reclaimed).
    if (c->secure_ && !c->handshaken_) c->ctx_.processor_metrics().on_tls_handshake(false);
    delete c;
    return;
  }
  start(c);
}

void Connection::drain() {
  if (h2_.load(std::memory_order_acquire)) {
    wake_.cancel();  // the session sends GOAWAY and finishes its streams
  } else if (idle_.load(std::memory_order_acquire)) {
    token_.cancel();
  }
}

void Connection::acquire_work() {
  if (!work_) work_ = ctx_.pool().take_work();
  writer_.attach(work_);
}

void Connection::release_work() {
  if (!work_) return;
  writer_.abandon();  // whatever is still queued was never sent: finished as such
  writer_.attach(nullptr);
  ctx_.pool().give_work(std::exchange(work_, nullptr));
}

Connection::Outcome Connection::run() {
  if (secure_ && !handshaken_) {
    if (std::optional<Outcome> end = handshake()) return *end;
  }
  acquire_work();
  if (tls_ && tls_->alpn() == "h2") return serve_h2({});
  if (!secure_ && requests_ == 0 && ctx_.config.h2c) {
    if (std::optional<Outcome> end = sniff_h2c()) return *end;
  }
  while (true) {
    ParseResult r = work_->parser.parse({work_->read_area(), have_});
    if (r.status == ParseStatus::need_more) {
      have_ = r.keep;
      if (!writer_.flush()) return Outcome::closed;
      if (std::optional<Outcome> end = receive(have_ == 0)) return *end;
      continue;
    }
    if (r.status == ParseStatus::error) {
      spdlog::debug("{}: bad request ({}): {}", peer_, r.http_status, r.reason);
      fail_and_close(r.http_status);
      return Outcome::closed;
    }
    if (request_started_ == rt::TimePoint{}) request_started_ = rt::coarse_now();
    bool keep = serve(work_->parser.request());
    std::size_t used = work_->parser.consumed();
    if (used < have_) std::memmove(work_->read_area(), work_->read_area() + used, have_ - used);
    have_ -= used;
    request_started_ = have_ > 0 ? rt::coarse_now() : rt::TimePoint{};
    if (!keep) {
      close_after(linger_);
      return Outcome::closed;
    }
    if (have_ == 0 && !writer_.flush()) return Outcome::closed;
  }
}

std::optional<Connection::Outcome> Connection::receive(bool idle) {
  const Config& cfg = ctx_.config;
  rt::TimePoint deadline;
  if (idle) {
    if (ctx_.draining.load(std::memory_order_acquire)) return Outcome::closed;
    // A fresh connection waits for its first request for timeouts.header, a kept-alive
    // one for its next for timeouts.keepalive; both counted from when the wait began.
    if (idle_deadline_ == rt::TimePoint{}) {
      idle_deadline_ =
          rt::coarse_now() + (requests_ == 0 ? cfg.timeouts_header : cfg.timeouts_keepalive);
    }
    // Wait briefly with this fiber (a busy client's next request comes within
    // milliseconds); past that, go idle without a fiber, stack or buffer.
    deadline = std::min(idle_deadline_, rt::coarse_now() + cfg.timeouts_active_wait);
    idle_.store(true, std::memory_order_release);
    // Shutdown may have begun between the check and the store: look again.
    if (ctx_.draining.load(std::memory_order_acquire)) return Outcome::closed;
  } else {
    deadline = request_started_ + cfg.timeouts_header;
  }
  // After an answer the client's next request cannot be here yet (it waits for the
  // answer), so the wait comes first: no recv that fails with EAGAIN. A fresh connection
  // may well hold its request already, and a partial one may have the rest coming.
  char* into = work_->read_area() + have_;
  std::size_t room = work_->read_cap - have_;
  int64_t n = tls_                    ? receive_tls(into, room, deadline)
              : idle && requests_ > 0 ? io::recv_when_ready(fd_, into, room, 0, deadline, &token_)
                                      : io::recv(fd_, into, room, 0, deadline, &token_);
  idle_.store(false, std::memory_order_release);
  if (n == 0) return Outcome::closed;  // the client closed
  if (n < 0) {
    if (n == -ETIMEDOUT && idle && rt::coarse_now() < idle_deadline_) return go_idle();
    if (n == -ETIMEDOUT && !idle) fail_and_close(408);
    return Outcome::closed;
  }
  if (have_ == 0) {
    request_started_ = rt::coarse_now();
    idle_deadline_ = {};
  }
  have_ += static_cast<std::size_t>(n);
  drained_ = static_cast<std::size_t>(n) < room && !(tls_ && tls_->buffered());
  return std::nullopt;
}

std::optional<Connection::Outcome> Connection::handshake() {
  const Config& cfg = ctx_.config;
  if (!tls_) {
    // timeouts.header from the accept covers the handshake and the first request together,
    // as it covers a plain connection's first request.
    idle_deadline_ = rt::coarse_now() + cfg.timeouts_header;
    tls_ = std::make_unique<TlsStream>(ctx_.tls ? ctx_.tls->new_session() : nullptr, fd_);
    tls_->bound_client_hello(cfg.tls_max_client_hello);
  }
  // Waiting for the client as an idle connection does: shutdown closes it at once, and past
  // timeouts.active_wait it waits without a fiber (the session keeps its place), so a client
  // that never finishes holds no more than a plain one that never sends. (A send never waits
  // here: a handshake's flight fits any fresh socket's buffer.)
  idle_.store(true, std::memory_order_release);
  const rt::TimePoint wait = std::min(idle_deadline_, rt::coarse_now() + cfg.timeouts_active_wait);
  const int rc =
      ctx_.draining.load(std::memory_order_acquire) ? -ECANCELED : tls_->handshake(wait, &token_);
  idle_.store(false, std::memory_order_release);
  if (rc == -ETIMEDOUT && rt::coarse_now() < idle_deadline_) return go_idle();
  ctx_.processor_metrics().on_tls_handshake(rc == 0);
  if (rc != 0) {
    // Routine on a public port (scanners, plain HTTP, clients that give up): debug only.
    if (rc == -EMSGSIZE) {
      spdlog::debug("{}: TLS handshake refused: a ClientHello over tls.max_client_hello ({})",
                    peer_, cfg.tls_max_client_hello);
    } else {
      spdlog::debug("{}: TLS handshake failed: {}", peer_, std::strerror(-rc));
    }
    return Outcome::closed;
  }
  handshaken_ = true;
  if (tls_->asked_kernel()) ctx_.processor_metrics().on_tls_kernel(tls_->kernel_sends());
  // Where the kernel makes the records, the writer sends plaintext to the socket as over
  // plain HTTP (file bodies by sendfile/splice); otherwise through the session.
  if (!tls_->kernel_sends()) writer_.use_tls(tls_.get());
  return std::nullopt;
}

int64_t Connection::receive_tls(char* into, std::size_t room, rt::TimePoint deadline) {
  int64_t n = tls_->read(into, room, deadline, &token_);
  // The connection idles on the socket's readiness next, which would not wake for bytes the
  // library already holds. A read that timed out has opened every whole record it had, so
  // this finds at most part of one; checked rather than assumed.
  if (n == -ETIMEDOUT && tls_->buffered()) n = tls_->read(into, room, rt::coarse_now(), &token_);
  return n;
}

Connection::Outcome Connection::go_idle() {
  release_work();
  if (tls_) tls_->trim();
  idle_.store(true, std::memory_order_release);
  if (ctx_.draining.load(std::memory_order_acquire)) return Outcome::closed;
  // Listed before arming: once armed, the connection belongs to the readiness wait.
  ctx_.slots.enter_idle(this);
  // From here the connection belongs to the readiness wait: on_ready runs it again (or closes
  // it) on a new fiber, possibly before this fiber has returned. Touch nothing after arming.
  int rc =
      io::when_ready(ready_, fd_, POLLIN, idle_deadline_, &token_, &Connection::on_ready, this);
  if (rc < 0) {
    idle_.store(false, std::memory_order_release);
    return Outcome::closed;  // the destructor takes it off the idle list
  }
  return Outcome::idle;
}

bool Connection::serve(const Request& req) {
  ++requests_;
  bool close = !req.keep_alive() || ctx_.draining.load(std::memory_order_acquire) ||
               requests_ >= ctx_.config.max_requests_per_connection;
  RequestNote note = note_of(&req, request_started_);
  if (close) linger_ = must_linger(req);
  Reply reply = decide(req, *work_);
  note.site = reply.site;
  note.coding = reply.encoding;
  return writer_.write(reply, &req, close, note) && !close;
}

void Connection::fail_and_close(int status) {
  writer_.write(Reply::error_page(status), nullptr, true, note_of(nullptr, request_started_));
  // A refused request may have more of itself on the way: the client must see the answer.
  close_after(ctx_.config.lingering_close != LingeringClose::off);
}

bool Connection::must_linger(const Request& req) const {
  switch (ctx_.config.lingering_close) {
    case LingeringClose::always:
      return true;
    case LingeringClose::off:
      return false;
    case LingeringClose::on:
      break;
  }
  // NGINX's `lingering_close on`: linger only when the client may still be sending. It asked
  // to close (else the server chose to, and a pipelining client may have sent more), nothing
  // it sent is left unread in the buffer or the socket, and no body was left unread. Closing
  // at once saves the shutdown and the wait for the client's FIN: a wake-up and a receive per
  // connection.
  return req.keep_alive() || have_ > work_->parser.consumed() || !drained_ ||
         work_->parser.body_unread();
}

void Connection::close_after(bool linger) {
  // MSG_MORE holds the last bytes until the close (or the shutdown) right after, which sends
  // them with the FIN in one segment (as NGINX's tcp_nopush does): one packet fewer per
  // connection. Over TLS the records wait for close_notify, which sends them with it.
  writer_.flush(MSG_MORE);
  if (writer_.broken()) return;  // the peer is gone or stuck: nothing to linger for
  // Looked at before close_notify, which a client may answer with its own at once.
  linger = linger || late_bytes();
  // Before the FIN: a client tells the end of the data from a truncation by it.
  if (tls_) tls_->close_notify(rt::coarse_now() + ctx_.config.timeouts_send, &token_);
  if (linger) lingering_close();  // else closed at once: no shutdown, no wait for the FIN
}

bool Connection::late_bytes() const {
  // must_linger looked before the response; bytes that came while it was sent (a trailing
  // CRLF, a TLS client's close_notify) would make the close a reset, which destroys what the
  // socket has not sent yet: the tail of a large response. One ioctl per closing connection,
  // against the shutdown, wake-up and receive a linger costs.
  if (ctx_.config.lingering_close == LingeringClose::off) return false;
  if (tls_ && tls_->buffered()) return true;
  int unread = 0;
  return ::ioctl(fd_, FIONREAD, &unread) == 0 && unread > 0;
}

Reply Connection::decide(const Request& req, ConnectionWork& work) {
  return site_ == Site::metrics ? handle_metrics(ctx_.metrics.get(), req, work)
                                : handle_static(ctx_.site_for(req), req, work, peer_);
}

RequestNote Connection::note_of(const Request* req, rt::TimePoint started) {
  std::string& text = work_->notes;
  if (work_->outgoing_count == 0) text.clear();  // no response in flight reads it
  return note(req, started, text);
}

RequestNote Connection::note(const Request* req, rt::TimePoint started, std::string& text) {
  RequestNote n;
  n.started = started == rt::TimePoint{} ? rt::coarse_now() : started;
  if (!ctx_.access_log) return n;  // only the access line reads the rest
  auto age = std::chrono::duration_cast<std::chrono::seconds>(rt::coarse_now() - n.started);
  n.started_unix = static_cast<int64_t>(std::time(nullptr)) - age.count();
  if (!req) return n;
  n.parsed = true;
  n.version = req->version();
  // Only as much of each field as its access-log budget can show (access_log.hpp).
  n.text_at = static_cast<uint32_t>(text.size());
  auto add = [&text](std::string_view s, std::size_t budget) {
    s = s.substr(0, budget + 1);
    text.append(s);
    return static_cast<uint32_t>(s.size());
  };
  n.method_len = add(req->method_text(), kAccessFieldBudget.method);
  n.target_len = add(req->target(), kAccessFieldBudget.target);
  n.referer_len = add(req->find("Referer").value_or(""), kAccessFieldBudget.referer);
  n.agent_len = add(req->find("User-Agent").value_or(""), kAccessFieldBudget.user_agent);
  return n;
}

void Connection::on_finished(const Outgoing& response, uint64_t body_sent) {
  finish_request(ctx_, {.peer = peer_,
                        .status = response.status,
                        .body_sent = body_sent,
                        .note = &response.note,
                        .notes = work_ ? std::string_view(work_->notes) : std::string_view{}});
}

void Connection::lingering_close() {
  io::shutdown(fd_, SHUT_WR);
  // Read and drop what the client still sends (timeouts.linger, limits.max_linger_bytes), so
  // that it sees the response instead of a reset.
  rt::TimePoint until = rt::now() + ctx_.config.timeouts_linger;
  std::size_t drained = 0;
  while (drained < ctx_.config.max_linger_bytes) {
    int64_t n = io::recv(fd_, work_->read_area(), work_->read_cap, 0, until, &token_);
    if (n <= 0) break;
    drained += static_cast<std::size_t>(n);
  }
}

}  // namespace weft::http
