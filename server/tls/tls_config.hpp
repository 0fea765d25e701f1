// The server's TLS contexts as its configuration describes them: [tls] for the default
// certificate and every context's protocol settings, a [[vhosts]] entry's certificate and
// key for the names it serves.
#pragma once

#include <memory>
#include <string>

#include "server/core/config.hpp"
#include "server/tls/tls_context.hpp"

namespace weft::http {

/// Returns [tls]'s settings: its certificate and key with the protocol settings.
TlsSettings tls_settings(const Config& c);

/// Loads the TLS context for `c` (the default certificate, then each [[vhosts]] one chosen by
/// its host name); returns nullptr with `error` naming the file at fault when one cannot be
/// used. Call only when c.listen_tls is not empty.
std::shared_ptr<const TlsContext> open_tls(const Config& c, std::string& error);

}  // namespace weft::http
