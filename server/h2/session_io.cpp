// H2Session's loop on the socket (session.hpp): receive, feed, send what nghttp2 produced;
// the timeouts and the drain. Everything without I/O is in session.cpp.
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "runtime/io.hpp"
#include "server/h2/session.hpp"

namespace weft::http {

namespace io = weft::rt::io;

namespace {

// Bytes gathered from nghttp2 before one write: a few DATA frames per TLS write, as the
// HTTP/1.1 path sends a file in pieces of this order. Picked, to be measured.
constexpr std::size_t kOutBatch = 64 * 1024;

}  // namespace

bool H2Session::run(std::span<const char> first) {
  if (!open()) return false;
  last_recv_ = rt::coarse_now();
  bool go_on = first.empty() || feed(first);
  while (go_on) {
    if (!send_pending()) return false;
    if (!active()) return goaway_;
    if (!draining_ && wire_.draining->load(std::memory_order_acquire)) {
      begin_drain();
      continue;
    }
    const int64_t n = receive(next_deadline());
    if (n == -ECANCELED && !draining_ && !wire_.token->cancelled()) {
      begin_drain();
      continue;
    }
    if (n == -ETIMEDOUT) {
      on_timeout();
      continue;
    }
    if (n <= 0) {  // the client closed, or the socket failed
      spdlog::debug("{}: HTTP/2: connection ended: {}", wire_.peer,
                    n == 0 ? "closed by the client" : std::strerror(static_cast<int>(-n)));
      return false;
    }
    last_recv_ = rt::coarse_now();
    go_on = feed({work_.read_area(), static_cast<std::size_t>(n)});
  }
  return send_pending() && goaway_;  // the GOAWAY nghttp2 or weft queued
}

bool H2Session::send_pending() {
  while (true) {
    const int64_t n = produce(out_, kOutBatch);
    if (n < 0 || !write_out()) return false;
    if (n == 0) return true;
  }
}

bool H2Session::write_out() {
  if (out_.empty()) return true;
  const rt::TimePoint deadline = rt::coarse_now() + config_.timeouts_send;
  const int64_t n =
      wire_.tls_send ? wire_.tls_send->write_all(out_.data(), out_.size(), deadline, wire_.token)
                     : io::send_all(wire_.fd, out_.data(), out_.size(), 0, deadline, wire_.token);
  out_.clear();
  return n >= 0;
}

int64_t H2Session::receive(rt::TimePoint deadline) {
  // Until the drain begins, the wait also ends when it does (the wake token).
  rt::CancelToken* token = draining_ ? wire_.token : wire_.wake;
  if (wire_.token->cancelled()) return -ECANCELED;
  char* into = work_.read_area();
  return wire_.tls ? wire_.tls->read(into, work_.read_cap, deadline, token)
                   : io::recv(wire_.fd, into, work_.read_cap, 0, deadline, token);
}

}  // namespace weft::http
