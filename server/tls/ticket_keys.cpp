#include "server/tls/ticket_keys.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

namespace weft::http {
namespace {

struct TicketKey {
  unsigned char name[16];
  unsigned char hmac[32];
  unsigned char aes[32];
  std::size_t size;  // 16 or 32: the length of each key
};

using TicketKeys = std::vector<TicketKey>;

// Where the SSL_CTX points to its key list (ex_data; the list is the caller's to keep, as
// wolfSSL does not free ex_data with a context).
int keys_index() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// Reads one key file; false with `error` set.
bool read_key(const std::string& path, TicketKey& key, std::string& error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = "tls session ticket key " + path + ": " + std::strerror(errno);
    return false;
  }
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() != 80 && bytes.size() != 48) {
    error = "tls session ticket key " + path + ": " + std::to_string(bytes.size()) +
            " bytes, expected 80 or 48 (openssl rand 80 > FILE)";
    return false;
  }
  // NGINX's layouts (ngx_ssl_session_ticket_keys), so a fleet of both shares key files:
  // 80 bytes are name(16) | HMAC(32) | AES(32), 48 bytes name(16) | AES(16) | HMAC(16).
  const char* p = bytes.data();
  std::memcpy(key.name, p, 16);
  if (bytes.size() == 80) {
    key.size = 32;
    std::memcpy(key.hmac, p + 16, 32);
    std::memcpy(key.aes, p + 48, 32);
  } else {
    key.size = 16;
    std::memcpy(key.aes, p + 16, 16);
    std::memcpy(key.hmac, p + 32, 16);
  }
  return true;
}

#ifdef WEFT_WITH_WOLFSSL
// wolfSSL offers the older form of the callback, with an HMAC_CTX (deprecated in OpenSSL 3).
using MacContext = HMAC_CTX;
bool set_mac(HMAC_CTX* mac, TicketKey& key) {
  return HMAC_Init_ex(mac, key.hmac, static_cast<int>(key.size), EVP_sha256(), nullptr) == 1;
}
#else
using MacContext = EVP_MAC_CTX;
// Keys the ticket's MAC with `key` (HMAC-SHA256).
bool set_mac(EVP_MAC_CTX* mac, TicketKey& key) {
  char digest[] = "sha256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, key.hmac, key.size),
                         OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                         OSSL_PARAM_END};
  return EVP_MAC_CTX_set_params(mac, params) == 1;
}
#endif

const EVP_CIPHER* cipher_of(const TicketKey& key) {
  return key.size == 32 ? EVP_aes_256_cbc() : EVP_aes_128_cbc();
}

// OpenSSL's ticket callback: encrypt (enc = 1) with the first key; decrypt with the key the
// ticket names, returning 2 (renew it) when that is not the first, 0 (a full handshake) when
// no key has that name, -1 on failure. The library calls the callback of the session's first
// context, while the keys are looked up on the one SNI chose: the same list either way, since
// every context of a configuration gets [tls]'s key files (tls_config.cpp).
int on_ticket(SSL* ssl, unsigned char* name, unsigned char* iv, EVP_CIPHER_CTX* cipher,
              MacContext* mac, int enc) {
  auto* keys = static_cast<TicketKeys*>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), keys_index()));
  if (!keys || keys->empty()) return -1;
  if (enc == 1) {
    TicketKey& k = keys->front();
    std::memcpy(name, k.name, 16);
    const int iv_len = EVP_CIPHER_iv_length(cipher_of(k));
    if (RAND_bytes(iv, iv_len) != 1 ||
        EVP_EncryptInit_ex(cipher, cipher_of(k), nullptr, k.aes, iv) != 1 || !set_mac(mac, k)) {
      return -1;
    }
    return 1;
  }
  for (std::size_t i = 0; i < keys->size(); ++i) {
    TicketKey& k = (*keys)[i];
    if (std::memcmp(name, k.name, 16) != 0) continue;
    if (EVP_DecryptInit_ex(cipher, cipher_of(k), nullptr, k.aes, iv) != 1 || !set_mac(mac, k)) {
      return -1;
    }
    return i == 0 ? 1 : 2;
  }
  return 0;  // a key no longer listed: a full handshake
}

}  // namespace

std::shared_ptr<void> set_ticket_keys(SSL_CTX* ctx, const std::vector<std::string>& paths,
                                      std::string& error) {
  auto keys = std::make_shared<TicketKeys>();
  for (const auto& p : paths) {
    TicketKey k{};
    if (!read_key(p, k, error)) return nullptr;
    keys->push_back(k);
  }
  if (keys_index() < 0 || SSL_CTX_set_ex_data(ctx, keys_index(), keys.get()) != 1) {
    error = "tls session ticket keys: no memory";
    return nullptr;
  }
#ifdef WEFT_WITH_WOLFSSL
  SSL_CTX_set_tlsext_ticket_key_cb(ctx, on_ticket);
#else
  SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, on_ticket);
#endif
  return keys;
}

}  // namespace weft::http
