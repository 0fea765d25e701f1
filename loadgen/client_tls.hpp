// weft::load ClientTls: weft-load's TLS (--tls): one OpenSSL client context for a run, the
// server name it sends (SNI), and with --tls-resume the last resumable session, offered by
// every new connection so that handshakes are resumed as a returning browser's are.
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
  /// Makes the client context; `server_name` is sent as SNI unless empty or an IP address.
  /// Returns nullptr with `error` set when the library cannot make one.
  static std::unique_ptr<ClientTls> create(const std::string& server_name, bool resume,
                                           std::string& error);
  ~ClientTls();
  ClientTls(const ClientTls&) = delete;
  ClientTls& operator=(const ClientTls&) = delete;

  /// Returns a new session in connect state (owned by the caller), offering the kept session
  /// when resuming; nullptr when out of memory.
  SSL* new_session();

  /// Any thread: counts the completed handshake of `ssl` and, when resuming, keeps its
  /// session for the next connections (call after the first reply: TLS 1.3 sends its
  /// tickets after the handshake).
  void finished(SSL* ssl);

  /// Returns the counts so far and starts them again from zero.
  TlsCounts take_counts();

 private:
  ClientTls(SSL_CTX* ctx, std::string server_name, bool resume)
      : ctx_(ctx), server_name_(std::move(server_name)), resume_(resume) {}

  SSL_CTX* ctx_;
  std::string server_name_;  // empty: no SNI
  bool resume_;
  std::mutex mu_;  // guards kept_ (held for a reference count, never a wait)
  SSL_SESSION* kept_ = nullptr;
  std::atomic<std::uint64_t> handshakes_{0};
  std::atomic<std::uint64_t> resumed_{0};
};

}  // namespace weft::load
