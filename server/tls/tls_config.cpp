#include "server/tls/tls_config.hpp"

namespace weft::http {

TlsSettings tls_settings(const Config& c) {
  TlsSettings s;
  s.certificate = c.tls_certificate.string();
  s.key = c.tls_key.string();
  s.protocols = c.tls_protocols;
  s.ciphers = c.tls_ciphers;
  s.ciphersuites = c.tls_ciphersuites;
  s.session_tickets = c.tls_session_tickets;
  s.session_cache = c.tls_session_cache;
  for (const auto& k : c.tls_session_ticket_keys) s.session_ticket_keys.push_back(k.string());
  s.stapling_file = c.tls_stapling_file.string();
  s.ktls = c.tls_ktls;
  s.http2 = c.http2;
  return s;
}

std::shared_ptr<const TlsContext> open_tls(const Config& c, std::string& error) {
  const TlsSettings base = tls_settings(c);
  std::shared_ptr<TlsContext> tls = TlsContext::create(base, error);
  if (!tls) return nullptr;
  for (const auto& v : c.vhosts) {
    if (v.certificate.empty()) continue;  // its names get the default certificate
    TlsSettings own = base;
    own.certificate = v.certificate.string();
    own.key = v.key.string();
    own.stapling_file = v.stapling_file.string();  // [tls]'s is about another certificate
    if (!tls->add_server_names({v.host}, own, error)) {
      error = "[[vhosts]] \"" + v.host + "\": " + error;
      return nullptr;
    }
  }
  return tls;
}

}  // namespace weft::http
