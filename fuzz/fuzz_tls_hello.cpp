// libFuzzer target: the first bytes a client sends to a TLS listener, as the server's session
// takes them in (TlsContext: its default certificate, two virtual hosts' chosen by SNI, the
// servername callback; OpenSSL parses the records under it).
//
// Input: the bytes of the client's first flight, whatever they are (a ClientHello, plain
// HTTP, noise); the seeds in corpus/fuzz_tls_hello/ are real hellos of `openssl s_client`
// (TLS 1.3 and 1.2, with and without SNI) and a plain HTTP request.
//
// Invariants checked (a failure aborts, and libFuzzer saves the input):
//   - the handshake never completes on one flight (the client's Finished cannot be there);
//   - a hello the session accepted (it waits for more) has the context its server name picks
//     (context_for: a virtual host's for its names, the default for any other name or none);
//   - nothing leaks or overflows (ASan), whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "server/tls/tls_context.hpp"

#include "tests/server/tls/test_cert.hpp"

namespace {

using weft::http::TlsContext;

// The contexts, made once: files in a temporary folder, removed at exit.
TlsContext* contexts() {
  static std::unique_ptr<TlsContext> ctx = [] {
    char tmpl[] = "/tmp/fuzz_tls_hello-XXXXXX";
    const char* dir = mkdtemp(tmpl);
    if (!dir) std::abort();
    std::filesystem::path d(dir);
    namespace t = weft::http::testing;
    std::string error;
    auto c = TlsContext::create(t::settings_for(t::make_cert(d, "default", "localhost")), error);
    if (!c ||
        !c->add_server_names({"a.test"}, t::settings_for(t::make_cert(d, "a", "a.test")), error) ||
        !c->add_server_names({"*.b.test"}, t::settings_for(t::make_cert(d, "b", "x.b.test")),
                             error)) {
      std::fprintf(stderr, "fuzz_tls_hello: %s\n", error.c_str());
      std::abort();
    }
    std::filesystem::remove_all(d);  // loaded: the files are no longer needed
    return c;
  }();
  return ctx.get();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  TlsContext* ctx = contexts();
  SSL* ssl = ctx->new_session();
  if (!ssl) return 0;
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  if (size > 0) BIO_write(in, data, static_cast<int>(size));
  SSL_set_bio(ssl, in, out);
  const int rc = SSL_do_handshake(ssl);
  if (rc == 1) std::abort();  // complete on the client's first flight: impossible
  if (SSL_get_error(ssl, rc) == SSL_ERROR_WANT_READ && SSL_get_state(ssl) != TLS_ST_BEFORE &&
      BIO_ctrl_pending(out) > 0) {
    // The hello was taken and answered: the context is the one its name picks.
    const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
    if (SSL_get_SSL_CTX(ssl) != ctx->context_for(name)) std::abort();
  }
  ERR_clear_error();
  SSL_free(ssl);
  return 0;
}
