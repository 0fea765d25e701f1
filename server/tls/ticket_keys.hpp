// Session-ticket keys from files, as NGINX's ssl_session_ticket_key: several servers that share
// the files resume each other's sessions, and the operator rotates them (a new file first,
// the old ones after it, then SIGHUP) so that no key encrypts tickets for long.
//
// A file holds 80 bytes (a 16-byte name, a 32-byte HMAC-SHA256 key, a 32-byte AES-256-CBC key)
// or 48 (16 each: name, HMAC key, AES-128-CBC key), e.g. `openssl rand 80 > ticket.key`.
// The first key encrypts new tickets; a ticket of any listed key is accepted, and one of an
// older key is renewed with the first. Without files OpenSSL makes a random key per context.
//
// This one calls OpenSSL 3's EVP ticket callback, which wolfSSL's compatibility layer does
// not offer (its older HMAC_CTX form is deprecated in OpenSSL 3).
#pragma once

#include <string>
#include <vector>

#include <openssl/types.h>

namespace weft::http {

/// Reads the key files `paths` and has `ctx` encrypt and decrypt its session tickets with
/// them; returns false with `error` naming the file that is unreadable or of the wrong size.
bool set_ticket_keys(SSL_CTX* ctx, const std::vector<std::string>& paths, std::string& error);

}  // namespace weft::http
