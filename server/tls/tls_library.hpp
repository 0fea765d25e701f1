// The TLS library weft is built with, named in this one place: Debian's OpenSSL 3 by default
// (what its NGINX links, so comparisons are fair), or wolfSSL through its OpenSSL-compatible
// layer (cmake -DWEFT_TLS_LIBRARY=wolfssl, with libwolfssl-dev). The TLS sources include this
// rather than the library's headers and use the API the two share; where they differ, the
// difference is spelled out next to its use, under WEFT_WITH_WOLFSSL.
#pragma once

#ifdef WEFT_WITH_WOLFSSL
// options.h first (clang-format would sort it down), since it holds the
// build's settings, which every other wolfSSL header reads.
// clang-format off
#include <wolfssl/options.h>
#include <wolfssl/openssl/bio.h>
#include <wolfssl/openssl/err.h>
#include <wolfssl/openssl/evp.h>
#include <wolfssl/openssl/hmac.h>
#include <wolfssl/openssl/ocsp.h>
#include <wolfssl/openssl/rand.h>
#include <wolfssl/openssl/ssl.h>
#include <wolfssl/openssl/x509v3.h>
#include <wolfssl/version.h>
// clang-format on
#else
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ocsp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#endif

namespace weft::http {

#ifdef WEFT_WITH_WOLFSSL
inline constexpr const char* kTlsLibrary = "wolfSSL " LIBWOLFSSL_VERSION_STRING;
#else
inline constexpr const char* kTlsLibrary = OPENSSL_VERSION_TEXT;
#endif

// Whether the library can hand a session's records to the kernel (OpenSSL's kTLS): the option
// is declared even by an OpenSSL built without kTLS, where it does nothing.
#if defined(SSL_OP_ENABLE_KTLS) && !defined(OPENSSL_NO_KTLS)
#define WEFT_LIBRARY_KTLS 1
inline constexpr bool kLibraryHasKernelTls = true;
#else
inline constexpr bool kLibraryHasKernelTls = false;
#endif

}  // namespace weft::http
