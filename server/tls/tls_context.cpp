#include "server/tls/tls_context.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "server/site/vhost.hpp"
#include "server/tls/kernel_tls.hpp"
#include "server/tls/ocsp_staple.hpp"
#include "server/tls/ticket_keys.hpp"

namespace weft::http {
namespace {

// Returns OpenSSL's reasons queued on this thread (oldest first), and empties the queue.
std::string library_reason() {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown error" : out;
}

// Returns "" when `path` can be opened for reading, else why not (OpenSSL's own message for a
// missing file names neither the file nor the cause plainly).
std::string unreadable(const std::string& path) {
  if (path.empty()) return "no file given";
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return std::strerror(errno);
  std::fclose(f);
  return "";
}

int version_of(const std::string& name) {
  if (name == "TLSv1.2") return TLS1_2_VERSION;
  if (name == "TLSv1.3") return TLS1_3_VERSION;
  return 0;
}

// Sets the lowest and highest allowed versions; false with `error` set for a name it does
// not know or a gap (TLS 1.3 without 1.2 is fine, the list is a range).
bool set_protocols(SSL_CTX* ctx, const std::vector<std::string>& names, std::string& error) {
  int lo = 0, hi = 0;
  for (const auto& n : names) {
    int v = version_of(n);
    if (v == 0) {
      error = "tls.protocols: unknown protocol \"" + n + "\" (TLSv1.2, TLSv1.3)";
      return false;
    }
    if (lo == 0 || v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (lo == 0) {
    error = "tls.protocols: empty";
    return false;
  }
  SSL_CTX_set_min_proto_version(ctx, lo);
  SSL_CTX_set_max_proto_version(ctx, hi);
  return true;
}

bool set_ciphers(SSL_CTX* ctx, const TlsSettings& s, std::string& error) {
  if (!s.ciphers.empty() && SSL_CTX_set_cipher_list(ctx, s.ciphers.c_str()) != 1) {
    error = "tls.ciphers: no usable cipher in \"" + s.ciphers + "\": " + library_reason();
    return false;
  }
  if (!s.ciphersuites.empty() && SSL_CTX_set_ciphersuites(ctx, s.ciphersuites.c_str()) != 1) {
    error = "tls.ciphersuites: no usable suite in \"" + s.ciphersuites + "\": " + library_reason();
    return false;
  }
  return true;
}

#ifdef WEFT_WITH_WOLFSSL
// Returns whether ctx's key signs what its certificate's public key verifies. wolfSSL 5.5.4's
// SSL_CTX_check_private_key accepts the ECDSA key of another certificate (and its
// EVP_PKEY_cmp says the same of any two), so the pair is tried as a handshake would use it.
bool pair_matches(SSL_CTX* ctx) {
  X509* cert = SSL_CTX_get0_certificate(ctx);
  EVP_PKEY* key = SSL_CTX_get0_privatekey(ctx);
  EVP_PKEY* pub = cert ? X509_get_pubkey(cert) : nullptr;
  EVP_MD_CTX* sign = EVP_MD_CTX_new();
  EVP_MD_CTX* verify = EVP_MD_CTX_new();
  static const unsigned char kMessage[] = "weft tries a key against its certificate";
  unsigned char sig[1024];
  size_t len = sizeof sig;
  const bool ok = key && pub && sign && verify &&
                  EVP_DigestSignInit(sign, nullptr, EVP_sha256(), nullptr, key) == 1 &&
                  EVP_DigestSignUpdate(sign, kMessage, sizeof kMessage) == 1 &&
                  EVP_DigestSignFinal(sign, sig, &len) == 1 &&
                  EVP_DigestVerifyInit(verify, nullptr, EVP_sha256(), nullptr, pub) == 1 &&
                  EVP_DigestVerifyUpdate(verify, kMessage, sizeof kMessage) == 1 &&
                  EVP_DigestVerifyFinal(verify, sig, len) == 1;
  EVP_MD_CTX_free(sign);
  EVP_MD_CTX_free(verify);
  EVP_PKEY_free(pub);
  return ok;
}
#else
// OpenSSL's SSL_CTX_check_private_key compares the pair itself.
bool pair_matches(SSL_CTX*) {
  return true;
}
#endif

bool load_pair(SSL_CTX* ctx, const TlsSettings& s, std::string& error) {
  if (std::string why = unreadable(s.certificate); !why.empty()) {
    error = "tls certificate " + s.certificate + ": " + why;
    return false;
  }
  if (std::string why = unreadable(s.key); !why.empty()) {
    error = "tls key " + s.key + ": " + why;
    return false;
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, s.certificate.c_str()) != 1) {
    error =
        "tls certificate " + s.certificate + ": not a PEM certificate chain: " + library_reason();
    return false;
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, s.key.c_str(), SSL_FILETYPE_PEM) != 1) {
    // Loading checks the key against the certificate already: say which failed.
    const unsigned long e = ERR_peek_last_error();
#ifdef X509_R_KEY_VALUES_MISMATCH
    const bool mismatch =
        ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH;
#else
    const bool mismatch = e != 0;  // wolfSSL checks the pair here and names no reason
#endif
    error = "tls key " + s.key +
            (mismatch ? ": does not match certificate " + s.certificate
                      : std::string(": not a PEM private key")) +
            ": " + library_reason();
    return false;
  }
  if (SSL_CTX_check_private_key(ctx) != 1 || !pair_matches(ctx)) {
    const std::string reason = ERR_peek_error() != 0
                                   ? library_reason()
                                   : "what it signs does not verify with the certificate's key";
    error = "tls key " + s.key + ": does not match certificate " + s.certificate + ": " + reason;
    return false;
  }
  return true;
}

// Adds what `s` names beside the certificate (ticket key files, an OCSP staple) to `ctx`,
// keeping in `extras` what ctx points to; false with `error` set.
bool add_files(SSL_CTX* ctx, const TlsSettings& s, std::string& error, TlsContext::Extras& extras) {
  if (!s.session_ticket_keys.empty()) {
    auto keys = set_ticket_keys(ctx, s.session_ticket_keys, error);
    if (!keys) return false;
    extras.held.push_back(std::move(keys));
  }
  if (!s.stapling_file.empty()) {
    std::string note;
    auto staple = set_ocsp_staple(ctx, s.stapling_file, error, note);
    if (!staple) return false;
    extras.held.push_back(std::move(staple));
    if (!note.empty()) extras.notes.push_back(std::move(note));
  }
  return true;
}

// The options every context gets: renegotiation only serves attacks on a static server; kernel
// TLS as `s` asks (refused where the library has none).
bool set_options(SSL_CTX* ctx, const TlsSettings& s, std::string& error) {
  uint64_t options = SSL_OP_NO_COMPRESSION | (s.session_tickets ? 0 : SSL_OP_NO_TICKET);
#ifdef SSL_OP_NO_RENEGOTIATION
  options |= SSL_OP_NO_RENEGOTIATION;  // (wolfSSL does not renegotiate unless built to)
#endif
  const bool kernel =
      s.ktls == KernelTls::on || (s.ktls == KernelTls::automatic && kernel_tls_available());
#ifdef WEFT_LIBRARY_KTLS
  if (kernel) options |= SSL_OP_ENABLE_KTLS;
  // Cleared otherwise: OpenSSL's configuration file (system_default) may have set it, and a
  // session asking for it runs its handshake on the socket (tls_stream.hpp).
  if (!kernel) SSL_CTX_clear_options(ctx, SSL_OP_ENABLE_KTLS);
  (void)error;
#else
  if (s.ktls == KernelTls::on) {
    error = std::string("tls.ktls = \"on\": ") + kTlsLibrary + " has no kernel TLS";
    return false;
  }
  (void)kernel;
#endif
  SSL_CTX_set_options(ctx, options);
  return true;
}

// Sets the session id context as NGINX's http module does (ngx_ssl_session_id_context):
// SHA-1 of "HTTP" and the SHA-1 of the certificate (no client CA list here). A session, from
// the cache or a ticket, resumes only where the context matches, so this is what lets NGINX
// and weft sharing ticket key files resume each other's sessions.
bool set_session_context(SSL_CTX* ctx, std::string& error) {
  unsigned char input[4 + EVP_MAX_MD_SIZE] = {'H', 'T', 'T', 'P'};
  unsigned int cert_len = 0;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  X509* cert = SSL_CTX_get0_certificate(ctx);
  if (!cert || X509_digest(cert, EVP_sha1(), input + 4, &cert_len) != 1 ||
      EVP_Digest(input, 4 + cert_len, digest, &len, EVP_sha1(), nullptr) != 1 ||
      SSL_CTX_set_session_id_context(ctx, digest, len) != 1) {
    error = "tls: cannot set the session id context: " + library_reason();
    return false;
  }
  return true;
}

// ALPN's choice (RFC 7301) among `ours` (wire format), the server's order first; a client
// that offers none of them gets no ALPN and speaks HTTP/1.1, as before ALPN.
int select_from(const unsigned char* ours, unsigned ours_len, const unsigned char** out,
                unsigned char* out_len, const unsigned char* in, unsigned in_len) {
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, out_len, ours, ours_len, in, in_len) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

// server.http2 on: "h2", then "http/1.1".
int select_h2(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
              unsigned in_len, void*) {
  static const unsigned char kBoth[] = "\x02h2\x08http/1.1";
  return select_from(kBoth, sizeof kBoth - 1, out, out_len, in, in_len);
}

// server.http2 off: "http/1.1" alone.
int select_http11(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
                  unsigned in_len, void*) {
  static const unsigned char kHttp11[] = "\x08http/1.1";
  return select_from(kHttp11, sizeof kHttp11 - 1, out, out_len, in, in_len);
}

// Returns a configured server context, or nullptr with `error` set; what it points to and the
// notes on files loaded anyway go to `extras`.
SSL_CTX* build(const TlsSettings& s, std::string& error, TlsContext::Extras& extras) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) {
    error = "tls: cannot create a context: " + library_reason();
    return nullptr;
  }
  // Released buffers keep an idle TLS connection near a plain one's memory (as NGINX).
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_alpn_select_cb(ctx, s.http2 ? select_h2 : select_http11, nullptr);
  if (s.session_cache == 0) {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  } else {
    SSL_CTX_sess_set_cache_size(ctx, static_cast<long>(s.session_cache));
  }
  if (!set_options(ctx, s, error) || !set_protocols(ctx, s.protocols, error) ||
      !set_ciphers(ctx, s, error) || !load_pair(ctx, s, error) ||
      !set_session_context(ctx, error) || !add_files(ctx, s, error, extras)) {
    SSL_CTX_free(ctx);
    ERR_clear_error();
    return nullptr;
  }
  ERR_clear_error();
  return ctx;
}

}  // namespace

std::unique_ptr<TlsContext> TlsContext::create(const TlsSettings& s, std::string& error) {
  Extras extras;
  SSL_CTX* ctx = build(s, error, extras);
  if (!ctx) return nullptr;
  std::unique_ptr<TlsContext> t(new TlsContext(ctx));
  t->extras_ = std::move(extras);
#ifdef WEFT_WITH_WOLFSSL
  SSL_CTX_set_tlsext_servername_callback(ctx, &TlsContext::on_server_name);
#else
  // The library's macro for this casts in C's style; the call it expands to, spelled out.
  SSL_CTX_callback_ctrl(ctx, SSL_CTRL_SET_TLSEXT_SERVERNAME_CB,
                        reinterpret_cast<void (*)()>(&TlsContext::on_server_name));
#endif
  SSL_CTX_set_tlsext_servername_arg(ctx, t.get());
  return t;
}

TlsContext::~TlsContext() {
  for (SSL_CTX* c : owned_) SSL_CTX_free(c);
  SSL_CTX_free(default_);
}

bool TlsContext::add_server_names(const std::vector<std::string>& names, const TlsSettings& s,
                                  std::string& error) {
  SSL_CTX* ctx = build(s, error, extras_);
  if (!ctx) return false;
  owned_.push_back(ctx);
  for (const auto& n : names) names_.push_back({n, ctx});
  return true;
}

SSL* TlsContext::new_session() const {
  SSL* ssl = SSL_new(default_);
  if (ssl) SSL_set_accept_state(ssl);
  return ssl;
}

SSL_CTX* TlsContext::context_for(const char* server_name) const {
  if (!server_name || !*server_name || names_.empty()) return default_;
  // Normalised as a Host is (host_without_port, host_matches): a trailing dot dropped, case
  // ignored, so "B.test." gets the certificate of the site its Host routes to.
  std::string_view name = server_name;
  if (name.size() > 1 && name.back() == '.') name.remove_suffix(1);
  // As choose_site: an exact name first, then the longest wildcard.
  const Named* best = nullptr;
  for (const auto& n : names_) {
    if (!host_matches(n.name, name)) continue;
    if (n.name[0] != '*') return n.ctx;
    if (!best || n.name.size() > best->name.size()) best = &n;
  }
  return best ? best->ctx : default_;
}

int TlsContext::on_server_name(SSL* ssl, int*, void* arg) {
  const auto* self = static_cast<const TlsContext*>(arg);
  SSL_CTX* ctx = self->context_for(SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name));
  if (ctx != SSL_get_SSL_CTX(ssl)) SSL_set_SSL_CTX(ssl, ctx);
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace weft::http
