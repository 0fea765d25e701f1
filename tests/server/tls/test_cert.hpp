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

// A certificate and its key, owned by the caller (release()).
struct Issued {
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
};

// A certificate for common name `cn` with a new P-256 key, signed by `ca` (by its own key when
// null), valid from an hour ago for a day.
inline Issued issue(const std::string& cn, const Issued* ca, long serial) {
  Issued out{X509_new(), EVP_EC_gen("P-256")};
  X509_set_version(out.cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(out.cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(out.cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(out.cert), 86400);
  X509_set_pubkey(out.cert, out.key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(out.cert), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(out.cert, X509_get_subject_name(ca ? ca->cert : out.cert));
  X509_sign(out.cert, ca ? ca->key : out.key, EVP_sha256());
  return out;
}

inline void release(Issued& i) {
  X509_free(i.cert);
  EVP_PKEY_free(i.key);
}

// Writes `stem`.crt and `stem`.key into dir: a self-signed certificate for common name `cn`
// (issue()).
inline CertFiles make_cert(const std::filesystem::path& dir, const std::string& stem,
                           const std::string& cn) {
  static long serial = 1;
  Issued x = issue(cn, nullptr, serial++);
  CertFiles out{dir / (stem + ".crt"), dir / (stem + ".key")};
  std::FILE* f = std::fopen(out.certificate.c_str(), "w");
  PEM_write_X509(f, x.cert);
  std::fclose(f);
  f = std::fopen(out.key.c_str(), "w");
  PEM_write_PrivateKey(f, x.key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(f);
  release(x);
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
