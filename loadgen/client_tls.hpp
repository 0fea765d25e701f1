// weft::load ClientTls: weft-load's TLS (--tls): one OpenSSL client context for a run, the
// server name it sends (SNI), and with --tls-resume the last resumable session, offered by
// every new connection so that handshakes are resumed as a returning browser's are.
//
// Sessions are kept as their tickets arrive (the library's new-session callback: in TLS 1.3
// the server's NewSessionTicket follows the handshake), not when a connection ends; and a run
// with --tls-resume first makes one warm-up handshake (prime()) whose ticket every connection
// of the test then offers, as a returning browser does. Resumption then depends on the server
// alone, never on how many sessions started before the first ticket came (on a busy machine
// that was anything from none to several).
//
// Certificates are not verified: weft-load measures servers (often with a self-signed
// certificate), it does not protect a user's data.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "loadgen/tls_counts.hpp"
#include "server/tls/tls_library.hpp"

namespace weft::load {

class ClientTls {
 public:
  /// Makes the client context; `server_name` is sent as SNI unless empty or an IP address,
  /// and with `http2` ALPN offers h2 alone. Returns nullptr with `error` set when the library
  /// cannot make one.
  static std::unique_ptr<ClientTls> create(const std::string& server_name, bool resume, bool http2,
                                           std::string& error);
  ~ClientTls();
  ClientTls(const ClientTls&) = delete;
  ClientTls& operator=(const ClientTls&) = delete;

  /// Returns a new session in connect state (owned by the caller), offering the kept session
  /// when resuming (`offered` says whether it did); nullptr when out of memory.
  SSL* new_session(bool& offered);

  /// Any thread: counts the completed handshake of `ssl`, whether it `offered` a kept session
  /// and whether the server resumed it.
  void finished(SSL* ssl, bool offered);

  /// Returns whether a resumable session is kept for new connections to offer.
  bool has_session();

  /// Forgets the counts so far (the warm-up handshake is not part of the test).
  void reset_counts();

  /// Returns the counts so far and starts them again from zero.
  TlsCounts take_counts();

 private:
  ClientTls(SSL_CTX* ctx, std::string server_name, bool resume)
      : ctx_(ctx), server_name_(std::move(server_name)), resume_(resume) {}

  // The library's new-session callback: keeps `session` (a ticket just read) when resumable.
  static int on_new_session(SSL* ssl, SSL_SESSION* session);

  SSL_CTX* ctx_;
  std::string server_name_;  // empty: no SNI
  bool resume_;
  std::mutex mu_;  // guards kept_ (held for a reference count, never a wait)
  SSL_SESSION* kept_ = nullptr;
  std::atomic<std::uint64_t> handshakes_{0};
  std::atomic<std::uint64_t> offered_{0};
  std::atomic<std::uint64_t> resumed_{0};
};

}  // namespace weft::load
