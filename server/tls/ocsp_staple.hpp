// OCSP stapling from a file, as NGINX's ssl_stapling_file: the operator (or a cron job) fetches
// the certificate's OCSP response from its CA (`openssl ocsp ... -respout FILE`), and weft
// hands it to every client that asks (the status_request extension), so that the client need
// not ask the CA itself. weft fetches nothing: a server that calls out to the network on its own
// is one more thing to secure, and the file can be refreshed and reloaded (SIGHUP) like a
// certificate.
#pragma once

#include <memory>
#include <string>

#include "server/tls/tls_library.hpp"

namespace weft::http {

/// Reads the DER OCSP response `path` and has `ctx` staple it; returns the response, which the
/// caller keeps for as long as ctx is used, or nullptr with `error` naming the file when it is
/// unreadable, not an OCSP response, not successful, or not about ctx's certificate. `note`
/// is set (the staple is kept) when its validity has ended or the certificate is revoked:
/// what a client will see, said before it does.
std::shared_ptr<void> set_ocsp_staple(SSL_CTX* ctx, const std::string& path, std::string& error,
                                      std::string& note);

}  // namespace weft::http
