// Test certificates: self-signed ECDSA P-256 pairs written as PEM files, made with OpenSSL's
// API so the tests need no openssl command.
#pragma once

#include <cstdio>
#include <filesystem>
#include <string>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "server/tls/tls_context.hpp"

namespace weft::http::testing {

struct CertFiles {
  std::filesystem::path certificate;
  std::filesystem::path key;
};

// Writes `stem`.crt and `stem`.key into dir: a certificate for common name `cn`, signed by its
// own key, valid from an hour ago for a day.
inline CertFiles make_cert(const std::filesystem::path& dir, const std::string& stem,
                           const std::string& cn) {
  static long serial = 1;
  EVP_PKEY* pkey = EVP_EC_gen("P-256");
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), serial++);
  X509_gmtime_adj(X509_getm_notBefore(x), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x), 86400);
  X509_set_pubkey(x, pkey);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509_sign(x, pkey, EVP_sha256());
  CertFiles out{dir / (stem + ".crt"), dir / (stem + ".key")};
  std::FILE* f = std::fopen(out.certificate.c_str(), "w");
  PEM_write_X509(f, x);
  std::fclose(f);
  f = std::fopen(out.key.c_str(), "w");
  PEM_write_PrivateKey(f, pkey, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  X509_free(x);
  EVP_PKEY_free(pkey);
  return out;
}

// The settings that serve `pair` with everything else at its default, but kernel TLS off:
// the tests drive the memory-buffer sessions the same way whatever the kernel has (the
// kernel-TLS tests turn it on).
inline TlsSettings settings_for(const CertFiles& pair) {
  TlsSettings s;
  s.certificate = pair.certificate;
  s.key = pair.key;
  s.ktls = KernelTls::off;
  return s;
}

}  // namespace weft::http::testing
