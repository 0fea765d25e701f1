#include "server/tls/ocsp_staple.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

namespace weft::http {

#ifndef WEFT_WITH_WOLFSSL
namespace {

using Staple = std::string;  // the response's DER bytes

// OpenSSL's status callback, called when a client asks for a staple: a copy of the response
// for the library to send (it frees the copy with the session).
int on_status_request(SSL* ssl, void* arg) {
  const auto* staple = static_cast<const Staple*>(arg);
  if (!staple || staple->empty()) return SSL_TLSEXT_ERR_NOACK;
  auto* copy = static_cast<unsigned char*>(OPENSSL_malloc(staple->size()));
  if (!copy) return SSL_TLSEXT_ERR_NOACK;
  std::memcpy(copy, staple->data(), staple->size());
  if (SSL_set_tlsext_status_ocsp_resp(ssl, copy, static_cast<long>(staple->size())) != 1) {
    OPENSSL_free(copy);
    return SSL_TLSEXT_ERR_NOACK;
  }
  return SSL_TLSEXT_ERR_OK;
}

// Returns the certificate in ctx's chain that issued `leaf`, or nullptr.
X509* issuer_of(SSL_CTX* ctx, X509* leaf) {
  STACK_OF(X509)* chain = nullptr;
  if (SSL_CTX_get0_chain_certs(ctx, &chain) != 1 || !chain) return nullptr;
  for (int i = 0; i < sk_X509_num(chain); ++i) {
    X509* c = sk_X509_value(chain, i);
    if (X509_check_issued(c, leaf) == X509_V_OK) return c;
  }
  return nullptr;
}

// Returns whether `single` is about `leaf`: its whole certificate id (issuer name and key
// hashes, serial) where the chain holds the issuer, else its serial number alone.
bool about(OCSP_SINGLERESP* single, X509* leaf, X509* issuer) {
  const OCSP_CERTID* id = OCSP_SINGLERESP_get0_id(single);
  ASN1_OBJECT* md = nullptr;
  ASN1_INTEGER* serial = nullptr;
  if (OCSP_id_get0_info(nullptr, &md, nullptr, &serial, const_cast<OCSP_CERTID*>(id)) != 1) {
    return false;
  }
  if (!issuer) return serial && ASN1_INTEGER_cmp(serial, X509_get_serialNumber(leaf)) == 0;
  const EVP_MD* digest = md ? EVP_get_digestbynid(OBJ_obj2nid(md)) : nullptr;
  OCSP_CERTID* mine = digest ? OCSP_cert_to_id(digest, leaf, issuer) : nullptr;
  const bool same = mine && OCSP_id_cmp(mine, const_cast<OCSP_CERTID*>(id)) == 0;
  OCSP_CERTID_free(mine);
  return same;
}

// Returns whether `basic` is signed by `issuer` or by a responder whose certificate, carried in
// the response, `issuer` signed: what a client checks of a staple. (Whether that responder may
// answer for the issuer, the OCSP-signing purpose, is left to the client.)
bool signed_for(OCSP_BASICRESP* basic, X509* issuer) {
  STACK_OF(X509)* trusted = sk_X509_new_null();
  X509* signer = nullptr;
  const bool ok = trusted && sk_X509_push(trusted, issuer) > 0 &&
                  OCSP_resp_get0_signer(basic, &signer, trusted) == 1 &&
                  (signer == issuer || X509_verify(signer, X509_get0_pubkey(issuer)) == 1) &&
                  // The signature itself, by the signer found (the chain above was checked here).
                  OCSP_basic_verify(basic, trusted, nullptr, OCSP_TRUSTOTHER | OCSP_NOVERIFY) == 1;
  sk_X509_free(trusted);
  return ok;
}

// Checks that `der` is a successful response about ctx's certificate; "" or why not. Sets
// `note` for a response out of date or a revoked certificate.
std::string check(SSL_CTX* ctx, const Staple& der, std::string& note) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  std::unique_ptr<OCSP_RESPONSE, decltype(&OCSP_RESPONSE_free)> response(
      d2i_OCSP_RESPONSE(nullptr, &p, static_cast<long>(der.size())), OCSP_RESPONSE_free);
  if (!response || p != reinterpret_cast<const unsigned char*>(der.data()) + der.size()) {
    return "not a DER OCSP response";
  }
  const int status = OCSP_response_status(response.get());
  if (status != OCSP_RESPONSE_STATUS_SUCCESSFUL) {
    return std::string("the responder answered \"") + OCSP_response_status_str(status) + "\"";
  }
  std::unique_ptr<OCSP_BASICRESP, decltype(&OCSP_BASICRESP_free)> basic(
      OCSP_response_get1_basic(response.get()), OCSP_BASICRESP_free);
  X509* leaf = SSL_CTX_get0_certificate(ctx);
  if (!basic || !leaf) return "no basic response in it";
  X509* issuer = issuer_of(ctx, leaf);
  if (issuer && !signed_for(basic.get(), issuer)) {
    return "its signature is neither the issuer's nor a responder's the issuer certified";
  }
  for (int i = 0; i < OCSP_resp_count(basic.get()); ++i) {
    OCSP_SINGLERESP* single = OCSP_resp_get0(basic.get(), i);
    if (!about(single, leaf, issuer)) continue;
    int reason = 0;
    ASN1_GENERALIZEDTIME *revoked = nullptr, *this_update = nullptr, *next_update = nullptr;
    const int cert = OCSP_single_get0_status(single, &reason, &revoked, &this_update, &next_update);
    if (cert == V_OCSP_CERTSTATUS_REVOKED)
      note = "says the certificate is revoked";
    else if (cert == V_OCSP_CERTSTATUS_UNKNOWN)
      note = "says the responder does not know it";
    // Five minutes of clock skew, as `openssl ocsp` allows.
    else if (!OCSP_check_validity(this_update, next_update, 300, -1))
      note = "is out of date";
    return "";
  }
  return "not about this certificate";
}

}  // namespace

std::shared_ptr<void> set_ocsp_staple(SSL_CTX* ctx, const std::string& path, std::string& error,
                                      std::string& note) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = "tls stapling file " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  auto staple = std::make_shared<Staple>((std::istreambuf_iterator<char>(f)),
                                         std::istreambuf_iterator<char>());
  if (std::string why = check(ctx, *staple, note); !why.empty()) {
    error = "tls stapling file " + path + ": " + why;
    return nullptr;
  }
  if (!note.empty()) note = "tls stapling file " + path + " " + note + "; stapled as it is";
  // The library's macro for this casts in C's style; the call it expands to, spelled out.
  SSL_CTX_callback_ctrl(ctx, SSL_CTRL_SET_TLSEXT_STATUS_REQ_CB,
                        reinterpret_cast<void (*)()>(&on_status_request));
  SSL_CTX_set_tlsext_status_arg(ctx, staple.get());
  return staple;
}

#else

std::shared_ptr<void> set_ocsp_staple(SSL_CTX*, const std::string& path, std::string& error,
                                      std::string&) {
  // Tried: wolfSSL 5.5.4's compatibility layer shows neither a response's certificate id nor
  // a context's chain (no check possible), and a handshake that asks for the status ends
  // without an answer once the callback hands it the response.
  error = "tls stapling file " + path + ": not available with " + kTlsLibrary +
          " (build weft with OpenSSL to staple)";
  return nullptr;
}

#endif

}  // namespace weft::http
