// The Connection's HTTP/2 side (connection.hpp): telling an h2c client preface from an
// HTTP/1.1 request, handing the connection to an H2Session, and what the session asks of it.
#include <algorithm>
#include <cerrno>
#include <string_view>

#include "runtime/io.hpp"
#include "server/net/connection.hpp"
#include "server/net/finish_request.hpp"

namespace weft::http {

namespace {

// RFC 9113 §3.4: what a client with prior knowledge sends first.
constexpr std::string_view kClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

}  // namespace

std::optional<Connection::Outcome> Connection::sniff_h2c() {
  while (true) {
    const std::string_view have(work_->read_area(), have_);
    const std::size_t n = std::min(have.size(), kClientPreface.size());
    // Any other first byte ('P' starts no method weft serves but PUT, PATCH, POST) is HTTP/1.1.
    if (have.substr(0, n) != kClientPreface.substr(0, n)) return std::nullopt;
    if (have.size() >= kClientPreface.size()) return serve_h2(have);
    if (std::optional<Outcome> end = receive(have_ == 0)) return end;
  }
}

Connection::Outcome Connection::serve_h2(std::span<const char> first) {
  h2_.store(true, std::memory_order_release);
  // A drain that began before the flag was set did not see it: wake the session now.
  if (ctx_.draining.load(std::memory_order_acquire)) wake_.cancel();
  TlsStream* tls = tls_.get();
  const H2Wire wire{.fd = fd_,
                    .tls = tls,
                    .tls_send = tls && !tls->kernel_sends() ? tls : nullptr,
                    .token = &token_,
                    .wake = &wake_,
                    .draining = &ctx_.draining,
                    .peer = peer_};
  bool goaway;
  {
    H2Session session(ctx_.config, HeadOrigin{ctx_.config.server_name, ctx_.dates}, wire, *work_,
                      *this);
    goaway = session.run(first);
  }
  have_ = 0;
  // After a GOAWAY the client may still be sending frames: lingering lets it read the GOAWAY
  // instead of a reset, as after an HTTP/1.1 response that closes.
  close_after(goaway && ctx_.config.lingering_close != LingeringClose::off);
  return Outcome::closed;
}

Reply Connection::answer(const Request& req, ConnectionWork& work) {
  return decide(req, work);
}

int64_t Connection::read_file(const FileEntry& file, char* into, std::size_t len, uint64_t offset) {
  // A DATA frame is at most 16 KiB as browsers set it, so a body is many small reads: what
  // the page cache holds is copied at once, without a round trip through the driver and a
  // park per frame; the rest, or a file not cached, is read through the driver, which never
  // blocks the processor.
  const auto at = static_cast<int64_t>(offset);
  const int64_t now = rt::io::try_read(file.fd, into, len, at);
  if (now > 0 || (now < 0 && now != -EAGAIN)) return now;
  return rt::io::read(file.fd, into, len, at, rt::coarse_now() + ctx_.config.timeouts_send,
                      &token_);
}

void Connection::finished(int status, uint64_t body_sent, const RequestNote& note,
                          std::string_view notes) {
  finish_request(
      ctx_,
      {.peer = peer_, .status = status, .body_sent = body_sent, .note = &note, .notes = notes});
}

}  // namespace weft::http
