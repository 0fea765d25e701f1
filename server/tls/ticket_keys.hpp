// Session-ticket keys from files, as NGINX's ssl_session_ticket_key: several servers that share
// the files resume each other's sessions, and the operator rotates them (a new file first,
// the old ones after it, then SIGHUP) so that no key encrypts tickets for long.
//
// A file holds 80 bytes (a 16-byte name, a 32-byte HMAC-SHA256 key, a 32-byte AES-256-CBC key)
// or 48 (16 each: name, AES-128-CBC key, HMAC key: NGINX's order, which differs from the
// 80-byte one), e.g. `openssl rand 80 > ticket.key`.
// The first key encrypts new tickets; a ticket of any listed key is accepted, and one of an
// older key is renewed with the first. Without files OpenSSL makes a random key per context.
//
// OpenSSL 3's EVP ticket callback does the work; wolfSSL's compatibility layer offers only the
// older HMAC_CTX form (deprecated in OpenSSL 3), used there instead.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "server/tls/tls_library.hpp"

namespace weft::http {

/// Reads the key files `paths` and has `ctx` encrypt and decrypt its session tickets with
/// them; returns the keys, which the caller keeps for as long as ctx is used, or nullptr with
/// `error` naming the file that is unreadable or of the wrong size.
std::shared_ptr<void> set_ticket_keys(SSL_CTX* ctx, const std::vector<std::string>& paths,
                                      std::string& error);

}  // namespace weft::http
