// tls_handshake_bench: what a TLS handshake costs the server's side, with OpenSSL or with
// wolfSSL through its OpenSSL-compatible API (this one file, built against each: issue 35 asks
// that the TLS code stay behind an interface another OpenSSL-compatible library can fill, and
// that an alternative's handshake cost be measured).
//
// One thread plays both sides over memory BIOs, shuttling the records between them, so no
// socket or scheduler cost is counted; each side's calls are timed with the thread's CPU clock,
// and only the server's share is the figure. Per mode (TLS 1.3 and 1.2, full, and resumed
// with a session ticket) it prints the server's and the client's CPU per handshake. The
// certificate and the groups are the targets' (ECDSA P-256, X25519).
//
// Usage: tls_handshake_bench --cert FILE --key FILE [--count N] [--quick]
#ifdef WEFT_WITH_WOLFSSL
// options.h first: it holds the build's settings, which every other wolfSSL header reads.
// clang-format off
#include <wolfssl/options.h>
#include <wolfssl/openssl/err.h>
#include <wolfssl/openssl/ssl.h>
// clang-format on
#else
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

namespace {

#ifdef WEFT_WITH_WOLFSSL
constexpr const char* kLibrary = "wolfSSL " LIBWOLFSSL_VERSION_STRING;
#else
constexpr const char* kLibrary = OPENSSL_VERSION_TEXT;
#endif

// X25519 first, so both sides agree on it; P-256 too, since TLS 1.2 lets an ECDSA P-256
// certificate be used only when the client lists its curve.
constexpr const char* kGroups = "X25519:P-256";

double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "tls_handshake_bench: %s failed\n", what);
  ERR_print_errors_fp(stderr);
  std::exit(1);
}

// One side of a connection: its session and the two memory BIOs it reads and writes.
struct Side {
  SSL* ssl = nullptr;
  BIO* in = nullptr;   // records from the peer
  BIO* out = nullptr;  // records for the peer
  double cpu_us = 0;   // CPU spent in this side's library calls
};

Side make_side(SSL_CTX* ctx, bool server) {
  Side s;
  s.ssl = SSL_new(ctx);
  s.in = BIO_new(BIO_s_mem());
  s.out = BIO_new(BIO_s_mem());
  if (!s.ssl || !s.in || !s.out) fail("SSL_new/BIO_new");
  SSL_set_bio(s.ssl, s.in, s.out);
  if (server) {
    SSL_set_accept_state(s.ssl);
  } else {
    SSL_set_connect_state(s.ssl);
  }
  return s;
}

// Moves what `from` wrote to `to`'s input; returns whether anything moved.
bool shuttle(Side& from, Side& to) {
  char buf[16384];
  bool moved = false;
  while (BIO_ctrl_pending(from.out) > 0) {
    int n = BIO_read(from.out, buf, sizeof buf);
    if (n <= 0) break;
    if (BIO_write(to.in, buf, n) != n) fail("BIO_write");
    moved = true;
  }
  return moved;
}

// One call of SSL_do_handshake on `s`, timed; returns whether the handshake is done.
bool step(Side& s) {
  double t0 = thread_cpu_us();
  int rc = SSL_do_handshake(s.ssl);
  s.cpu_us += thread_cpu_us() - t0;
  if (rc == 1) return true;
  int err = SSL_get_error(s.ssl, rc);
  if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE) fail("SSL_do_handshake");
  return false;
}

// Runs one handshake between fresh sessions of `sctx` and `cctx` (offering `resume`, if
// any); adds each side's CPU to the totals and returns the client's session for the next.
SSL_SESSION* handshake(SSL_CTX* sctx, SSL_CTX* cctx, SSL_SESSION* resume, double& server_us,
                       double& client_us, int& resumed) {
  Side c = make_side(cctx, false);
  Side s = make_side(sctx, true);
  if (resume && SSL_set_session(c.ssl, resume) != 1) fail("SSL_set_session");
  bool c_done = false, s_done = false;
  for (int rounds = 0; !(c_done && s_done); ++rounds) {
    if (rounds > 20) fail("handshake (no progress)");
    if (!c_done) c_done = step(c);
    shuttle(c, s);
    if (!s_done) s_done = step(s);
    shuttle(s, c);
  }
  // TLS 1.3 sends its tickets after the handshake: the client takes them in with a read.
  char byte;
  double t0 = thread_cpu_us();
  (void)SSL_read(c.ssl, &byte, 1);
  c.cpu_us += thread_cpu_us() - t0;
  resumed += SSL_session_reused(s.ssl) ? 1 : 0;
  SSL_SESSION* next = SSL_get1_session(c.ssl);
  server_us += s.cpu_us;
  client_us += c.cpu_us;
  // Ended as if by close_notify both ways: OpenSSL marks the session of a connection freed
  // without it not resumable.
  SSL_set_shutdown(c.ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  SSL_set_shutdown(s.ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  SSL_free(c.ssl);
  SSL_free(s.ssl);
  return next;
}

SSL_CTX* server_context(const char* cert, const char* key, int version) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (!ctx) fail("SSL_CTX_new (server)");
  if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) fail("loading the certificate");
  if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) fail("loading the key");
  if (SSL_CTX_set_min_proto_version(ctx, version) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, version) != 1) {
    fail("setting the version");
  }
  if (SSL_CTX_set1_curves_list(ctx, kGroups) != 1) fail("choosing the groups");
  return ctx;
}

SSL_CTX* client_context(int version) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) fail("SSL_CTX_new (client)");
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  if (SSL_CTX_set_min_proto_version(ctx, version) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, version) != 1) {
    fail("setting the version");
  }
  if (SSL_CTX_set1_curves_list(ctx, kGroups) != 1) fail("choosing the groups");
  return ctx;
}

// Runs `count` handshakes of one mode and prints the CPU each side spent per handshake.
void run_mode(const char* name, const char* cert, const char* key, int version, bool resume,
              int count) {
  SSL_CTX* sctx = server_context(cert, key, version);
  SSL_CTX* cctx = client_context(version);
  double server_us = 0, client_us = 0, warm_s = 0, warm_c = 0;
  int resumed = 0, warm_resumed = 0;
  // One handshake first: a session to resume, and the first call's one-time costs.
  SSL_SESSION* session = handshake(sctx, cctx, nullptr, warm_s, warm_c, warm_resumed);
  for (int i = 0; i < count; ++i) {
    SSL_SESSION* next =
        handshake(sctx, cctx, resume ? session : nullptr, server_us, client_us, resumed);
    if (resume) {
      SSL_SESSION_free(session);
      session = next;
    } else {
      SSL_SESSION_free(next);
    }
  }
  SSL_SESSION_free(session);
  std::printf("%-28s %-12s server %7.1f us  client %7.1f us  resumed %d/%d\n", kLibrary, name,
              server_us / count, client_us / count, resumed, count);
  if (resume && resumed != count) fail("resumption (not every handshake resumed)");
  SSL_CTX_free(sctx);
  SSL_CTX_free(cctx);
}

}  // namespace

int main(int argc, char** argv) {
  const char* cert = nullptr;
  const char* key = nullptr;
  int count = 2000;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--cert" && i + 1 < argc) {
      cert = argv[++i];
    } else if (a == "--key" && i + 1 < argc) {
      key = argv[++i];
    } else if (a == "--count" && i + 1 < argc) {
      count = std::atoi(argv[++i]);
    } else if (a == "--quick") {
      count = 20;
    } else {
      std::fprintf(stderr,
                   "usage: tls_handshake_bench --cert FILE --key FILE [--count N] "
                   "[--quick]\n");
      return 2;
    }
  }
  if (!cert || !key || count <= 0) {
    std::fprintf(stderr, "tls_handshake_bench: --cert and --key are needed\n");
    return 2;
  }
#ifdef WEFT_WITH_WOLFSSL
  wolfSSL_Init();
#endif
  run_mode("TLS1.3 full", cert, key, TLS1_3_VERSION, false, count);
  run_mode("TLS1.3 resume", cert, key, TLS1_3_VERSION, true, count);
  run_mode("TLS1.2 full", cert, key, TLS1_2_VERSION, false, count);
  run_mode("TLS1.2 resume", cert, key, TLS1_2_VERSION, true, count);
  return 0;
}
