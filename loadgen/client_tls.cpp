#include "loadgen/client_tls.hpp"

#include <arpa/inet.h>

namespace weft::load {
namespace {

bool is_address(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

std::unique_ptr<ClientTls> ClientTls::create(const std::string& server_name, bool resume,
                                             bool http2, std::string& error) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) {
    char buf[256];
    ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
    error = std::string("--tls: cannot create a context: ") + buf;
    return nullptr;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
#ifdef WEFT_LIBRARY_KTLS
  // The client's records stay in user space (TlsStream's memory buffers), whatever OpenSSL's
  // configuration file says: a session asking for kTLS would run on the socket.
  SSL_CTX_clear_options(ctx, SSL_OP_ENABLE_KTLS);
#endif
  // --http2 offers h2 alone: a server that picks http/1.1 fails the session by name.
  static constexpr unsigned char kH2[] = {2, 'h', '2'};
  if (http2 && SSL_CTX_set_alpn_protos(ctx, kH2, sizeof kH2) != 0) {
    SSL_CTX_free(ctx);
    error = "--http2: cannot offer h2 by ALPN";
    return nullptr;
  }
  std::string sni = is_address(server_name) ? "" : server_name;
  std::unique_ptr<ClientTls> tls(new ClientTls(ctx, std::move(sni), resume));
  if (resume) {
    // Sessions are handed to on_new_session as their tickets are read and kept there, not in
    // the library's client cache.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_set_app_data(ctx, tls.get());
    SSL_CTX_sess_set_new_cb(ctx, &ClientTls::on_new_session);
  } else {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  }
  return tls;
}

int ClientTls::on_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* self = static_cast<ClientTls*>(SSL_CTX_get_app_data(SSL_get_SSL_CTX(ssl)));
  if (SSL_SESSION_is_resumable(session) != 1) return 0;
  // A copy: `session` stays the connection's own, and the library marks a connection's
  // session not resumable when that connection fails (a fatal alert, an unexpected end), which
  // would silently turn every later offer of it into a full handshake.
  SSL_SESSION* copy = SSL_SESSION_dup(session);
  if (!copy) return 0;
  SSL_SESSION* old;
  {
    std::lock_guard lock(self->mu_);
    old = self->kept_;
    self->kept_ = copy;
  }
  if (old) SSL_SESSION_free(old);
  return 0;  // not taken: the connection keeps its own reference
}

ClientTls::~ClientTls() {
  if (kept_) SSL_SESSION_free(kept_);
  SSL_CTX_free(ctx_);
}

SSL* ClientTls::new_session(bool& offered) {
  offered = false;
  SSL* ssl = SSL_new(ctx_);
  if (!ssl) return nullptr;
  SSL_set_connect_state(ssl);
  if (!server_name_.empty()) {
    // SSL_set_tlsext_host_name, without the C-style cast of its macro.
    SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(server_name_.c_str()));
  }
  if (resume_) {
    // Each connection offers its own copy of the kept session, for the reason given in
    // on_new_session: one connection's failure must not spoil the ticket for the others.
    SSL_SESSION* copy = nullptr;
    {
      std::lock_guard lock(mu_);
      if (kept_) copy = SSL_SESSION_dup(kept_);
    }
    if (copy) {
      offered = SSL_set_session(ssl, copy) == 1;
      SSL_SESSION_free(copy);  // the connection holds its reference
    }
  }
  return ssl;
}

bool ClientTls::has_session() {
  std::lock_guard lock(mu_);
  return kept_ != nullptr;
}

void ClientTls::finished(SSL* ssl, bool offered) {
  handshakes_.fetch_add(1, std::memory_order_relaxed);
  if (offered) offered_.fetch_add(1, std::memory_order_relaxed);
  if (SSL_session_reused(ssl) == 1) resumed_.fetch_add(1, std::memory_order_relaxed);
}

void ClientTls::reset_counts() {
  (void)take_counts();
}

TlsCounts ClientTls::take_counts() {
  return {handshakes_.exchange(0, std::memory_order_relaxed),
          offered_.exchange(0, std::memory_order_relaxed),
          resumed_.exchange(0, std::memory_order_relaxed)};
}

}  // namespace weft::load
