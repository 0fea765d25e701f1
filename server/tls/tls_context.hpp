// TlsContext: a server's certificates and protocol settings, as OpenSSL contexts, and the
// choice among them by the name a client asks for (SNI).
//
// Only OpenSSL's public API that wolfSSL's compatibility layer also offers is used here and in
// tls_stream.cpp (SSL_CTX, SSL, memory BIOs, the servername callback), so that another
// OpenSSL-compatible library can be built in their place; nothing else in the server names
// OpenSSL.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/core/config.hpp"
#include "server/tls/tls_library.hpp"

namespace weft::http {

/// One certificate chain with its key and the protocol settings that go with it ([tls], or a
/// [[vhosts]] entry's certificate and key).
struct TlsSettings {
  std::string certificate;  // PEM file: the leaf first, then its chain
  std::string key;          // PEM file: the leaf's private key
  // Allowed versions, of "TLSv1.2" and "TLSv1.3".
  std::vector<std::string> protocols{"TLSv1.2", "TLSv1.3"};
  std::string ciphers;       // TLS 1.2 cipher list (OpenSSL syntax); empty: the library's
  std::string ciphersuites;  // TLS 1.3 suites; empty: the library's
  bool session_tickets = true;
  // Sessions kept in the server's cache for resumption by id (TLS 1.2 without tickets);
  // 0: none. OpenSSL's default size.
  unsigned session_cache = 20480;
  // Session-ticket key files, NGINX's format (80 bytes: name, HMAC-SHA256 key, AES-256 key;
  // or 48: AES-128): the first encrypts new tickets, each decrypts (rotation: a new key first,
  // the old ones after it, then SIGHUP). Empty: the library's random key, new per context.
  std::vector<std::string> session_ticket_keys;
  // A DER OCSP response for `certificate`, stapled for clients that ask (ocsp_staple.hpp);
  // empty: none.
  std::string stapling_file;
  // Whether sessions ask the kernel to take over their records (kTLS) after the handshake.
  KernelTls ktls = KernelTls::automatic;
  // ALPN: "h2" then "http/1.1" (server.http2), else "http/1.1" alone.
  bool http2 = true;
};

/// The server's TLS contexts: a default one and, by server name, the virtual hosts' own.
class TlsContext {
 public:
  /// Builds the default context from `s`; returns nullptr and a message naming the file
  /// at fault in `error` when a file is unreadable, not PEM, or the key does not match.
  static std::unique_ptr<TlsContext> create(const TlsSettings& s, std::string& error);

  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  /// Adds a certificate served to clients that ask for one of `names` ("example.com", or
  /// "*.example.com" for any one label before it); returns false with `error` set as create's.
  bool add_server_names(const std::vector<std::string>& names, const TlsSettings& s,
                        std::string& error);

  /// Returns a new server-side session, in accept state (the caller frees it with SSL_free,
  /// or hands it to a TlsStream), or nullptr.
  SSL* new_session() const;

  /// Returns the context chosen for `server_name` (the default for an unknown or empty name).
  SSL_CTX* context_for(const char* server_name) const;

  /// Returns what the operator should hear of the files loaded that did not stop them
  /// loading (a stapled OCSP response out of date), one line each.
  const std::vector<std::string>& notes() const { return extras_.notes; }

  /// What the contexts point to (ticket keys, staples), kept as long as they are, and the
  /// notes on loading them.
  struct Extras {
    std::vector<std::shared_ptr<void>> held;
    std::vector<std::string> notes;
  };

 private:
  struct Named {
    std::string name;  // lower case; "*.x" for a wildcard
    SSL_CTX* ctx;
  };

  explicit TlsContext(SSL_CTX* ctx) : default_(ctx) {}
  static int on_server_name(SSL* ssl, int* alert, void* arg);

  SSL_CTX* default_;
  std::vector<SSL_CTX*> owned_;  // the virtual hosts' contexts
  std::vector<Named> names_;
  Extras extras_;
};

}  // namespace weft::http
