// Tests server/tls/tls_stream on a real runtime (io_uring and epoll) over loopback TCP, against
// OpenSSL's own client in a plain thread: TLS 1.3 and 1.2 handshakes and data both ways; the
// certificate chosen by SNI; a resumed session; a 1 MiB body; close_notify; a client that speaks
// plain HTTP (refused, nothing else happens); a client that stalls mid-handshake (the deadline ends
// it); records held by writev_all's `more` until the flush; buffered() after a short read.
#include "server/tls/tls_stream.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "runtime/io.hpp"
#include "runtime/io_driver.hpp"
#include "runtime/scheduler.hpp"
#include "server/tls/kernel_tls.hpp"
#include "server/tls/tls_context.hpp"

#include "tests/server/temp_dir.hpp"
#include "tests/server/tls/test_cert.hpp"

namespace weft::http {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A connected, blocking client socket to 127.0.0.1:port.
int connect_to(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval tv{5, 0};  // no test waits forever on a server that went wrong
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

// The common name of the certificate the server presented.
std::string peer_name(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (!cert) return "";
  char cn[256] = {};
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof cn);
  X509_free(cert);
  return cn;
}

// tls.max_client_hello's default.
constexpr std::size_t kHelloBound = 16 * 1024;

class TlsStreamTest : public ::testing::TestWithParam<rt::IoBackendKind> {
 protected:
  void SetUp() override {
    dir_ = make_test_dir("tls-stream");
    auto pair = testing::make_cert(dir_, "default", "default.test");
    std::string error;
    ctx_ = TlsContext::create(testing::settings_for(pair), error);
    ASSERT_TRUE(ctx_) << error;
    client_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(client_, SSL_VERIFY_NONE, nullptr);
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    ASSERT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(::listen(listener_, 16), 0);
    ASSERT_EQ(::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len), 0);
    port_ = ntohs(a.sin_port);
  }
  void TearDown() override {
    ::close(listener_);
    SSL_CTX_free(client_);
    fs::remove_all(dir_);
  }

  // Runs `client` in a thread while a runtime accepts `connections` connections in turn and
  // hands each, wrapped in a TlsStream, to `serve`.
  void run(int connections, const std::function<void(TlsStream&)>& serve,
           const std::function<void()>& client) {
    std::thread c(client);
    rt::RuntimeOptions o;
    o.processors = 1;
    rt::IoOptions io;
    io.backend = GetParam();
    o.make_driver = rt::make_io_driver_factory(io);
    rt::Runtime runtime(o);
    runtime.run([&] {
      for (int i = 0; i < connections; ++i) {
        int fd = rt::io::accept(listener_, nullptr, nullptr, rt::now() + 10s);
        ASSERT_GE(fd, 0);
        {
          TlsStream tls(ctx_->new_session(), fd);
          tls.bound_client_hello(kHelloBound);  // as the server's connections do
          serve(tls);
        }
        rt::io::close(fd);
      }
    });
    c.join();
  }

  // A client session on a new connection (SNI `name` when given, at most `max_version`).
  SSL* client_session(int fd, const char* name = nullptr, int max_version = 0) {
    SSL* ssl = SSL_new(client_);
    if (max_version) SSL_set_max_proto_version(ssl, max_version);
    if (name) {  // SSL_set_tlsext_host_name, without its C-style cast
      SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
               const_cast<char*>(name));
    }
    SSL_set_fd(ssl, fd);
    return ssl;
  }

  fs::path dir_;
  std::unique_ptr<TlsContext> ctx_;
  SSL_CTX* client_ = nullptr;
  int listener_ = -1;
  uint16_t port_ = 0;
};

// Reads "ping" and answers "pong"; records the session's protocol.
std::function<void(TlsStream&)> ping_pong(std::string& protocol) {
  return [&protocol](TlsStream& tls) {
    ASSERT_EQ(tls.handshake(rt::now() + 5s), 0);
    protocol = tls.protocol();
    char buf[16] = {};
    ASSERT_EQ(tls.read(buf, sizeof buf, rt::now() + 5s), 4);
    EXPECT_STREQ(buf, "ping");
    EXPECT_EQ(tls.write_all("pong", 4, rt::now() + 5s), 4);
    tls.close_notify(rt::now() + 1s);
  };
}

// The client side of ping_pong: returns what came back.
std::string ping(SSL* ssl) {
  if (SSL_connect(ssl) != 1) return "connect failed";
  SSL_write(ssl, "ping", 4);
  char buf[16] = {};
  int n = SSL_read(ssl, buf, sizeof buf - 1);
  std::string got = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  // Then the server's close_notify: a clean end, not an error.
  if (SSL_read(ssl, buf, sizeof buf) != 0 || SSL_get_error(ssl, 0) != SSL_ERROR_ZERO_RETURN) {
    got += " (no close_notify)";
  }
  return got;
}

TEST_P(TlsStreamTest, Tls13HandshakeAndDataBothWays) {
  std::string protocol, got;
  run(1, ping_pong(protocol), [&] {
    int fd = connect_to(port_);
    SSL* ssl = client_session(fd);
    got = ping(ssl);
    SSL_free(ssl);
    ::close(fd);
  });
  EXPECT_EQ(got, "pong");
  EXPECT_EQ(protocol, "TLSv1.3");
}

TEST_P(TlsStreamTest, Tls12HandshakeAndData) {
  std::string protocol, got;
  run(1, ping_pong(protocol), [&] {
    int fd = connect_to(port_);
    SSL* ssl = client_session(fd, nullptr, TLS1_2_VERSION);
    got = ping(ssl);
    SSL_free(ssl);
    ::close(fd);
  });
  EXPECT_EQ(got, "pong");
  EXPECT_EQ(protocol, "TLSv1.2");
}

TEST_P(TlsStreamTest, ServerNameChoosesTheCertificate) {
  auto a = testing::make_cert(dir_, "a", "a.test");
  std::string error;
  ASSERT_TRUE(ctx_->add_server_names({"a.test"}, testing::settings_for(a), error)) << error;
  std::string names[4];
  std::string seen[4];
  // The last normalised as a Host is: a trailing dot and the case make no difference.
  const char* asked[4] = {"a.test", "elsewhere.test", nullptr, "A.Test."};
  int i = 0;
  run(
      4,
      [&](TlsStream& tls) {
        ASSERT_EQ(tls.handshake(rt::now() + 5s), 0);
        seen[i++] = tls.server_name() ? tls.server_name() : "";
      },
      [&] {
        for (int k = 0; k < 4; ++k) {
          int fd = connect_to(port_);
          SSL* ssl = client_session(fd, asked[k]);
          if (SSL_connect(ssl) == 1) names[k] = peer_name(ssl);
          SSL_free(ssl);
          ::close(fd);
        }
      });
  EXPECT_EQ(names[0], "a.test");
  EXPECT_EQ(names[1], "default.test");
  EXPECT_EQ(names[2], "default.test");
  EXPECT_EQ(names[3], "a.test");
  EXPECT_EQ(seen[0], "a.test");
  EXPECT_EQ(seen[2], "");
}

TEST_P(TlsStreamTest, ASecondConnectionResumesTheSession) {
  bool resumed[2] = {false, false};
  int i = 0;
  run(
      2,
      [&](TlsStream& tls) {
        ASSERT_EQ(tls.handshake(rt::now() + 5s), 0);
        char buf[16];
        ASSERT_EQ(tls.read(buf, sizeof buf, rt::now() + 5s), 4);
        EXPECT_EQ(tls.write_all("pong", 4, rt::now() + 5s), 4);
        resumed[i++] = tls.resumed();
        tls.close_notify(rt::now() + 1s);
      },
      [&] {
        SSL_SESSION* session = nullptr;
        for (int k = 0; k < 2; ++k) {
          int fd = connect_to(port_);
          SSL* ssl = client_session(fd);
          if (session) SSL_set_session(ssl, session);
          ASSERT_EQ(SSL_connect(ssl), 1);
          SSL_write(ssl, "ping", 4);
          char buf[16];
          SSL_read(ssl, buf, sizeof buf);  // also takes the tickets sent after the handshake
          if (!session) session = SSL_get1_session(ssl);
          SSL_shutdown(ssl);  // a session freed unshut is marked not resumable
          SSL_free(ssl);
          ::close(fd);
        }
        SSL_SESSION_free(session);
      });
  EXPECT_FALSE(resumed[0]);
  EXPECT_TRUE(resumed[1]);
}

TEST_P(TlsStreamTest, ALargeBodyArrivesWhole) {
  std::string body(1 << 20, '\0');
  for (std::size_t k = 0; k < body.size(); ++k) body[k] = static_cast<char>(k * 131 + k / 977);
  std::string got;
  run(
      1,
      [&](TlsStream& tls) {
        ASSERT_EQ(tls.handshake(rt::now() + 5s), 0);
        EXPECT_EQ(tls.write_all(body.data(), body.size(), rt::now() + 10s),
                  static_cast<int64_t>(body.size()));
        tls.close_notify(rt::now() + 1s);
      },
      [&] {
        int fd = connect_to(port_);
        SSL* ssl = client_session(fd);
        ASSERT_EQ(SSL_connect(ssl), 1);
        char buf[16384];
        int n;
        while ((n = SSL_read(ssl, buf, sizeof buf)) > 0)
          got.append(buf, static_cast<std::size_t>(n));
        SSL_free(ssl);
        ::close(fd);
      });
  EXPECT_EQ(got.size(), body.size());
  EXPECT_TRUE(got == body);
}

// A large body's records buffer stays for the next body (growing it anew per body cost 15% of
// a 64 KiB response's CPU) until trim() gives it back for an idle connection.
TEST_P(TlsStreamTest, TheRecordsBufferStaysUntilTrimmed) {
  std::string body(64 * 1024, 'b');
  std::size_t after_first = 0, after_second = 0, after_trim = 0;
  std::size_t got = 0;
  run(
      1,
      [&](TlsStream& tls) {
        ASSERT_EQ(tls.handshake(rt::now() + 5s), 0);
        ASSERT_EQ(tls.write_all(body.data(), body.size(), rt::now() + 10s),
                  static_cast<int64_t>(body.size()));
        after_first = tls.records_held();
        ASSERT_EQ(tls.write_all(body.data(), body.size(), rt::now() + 10s),
                  static_cast<int64_t>(body.size()));
        after_second = tls.records_held();
        tls.trim();
        after_trim = tls.records_held();
        tls.close_notify(rt::now() + 1s);
      },
      [&] {
        int fd = connect_to(port_);
        SSL* ssl = client_session(fd);
        ASSERT_EQ(SSL_connect(ssl), 1);
        char buf[16384];
        int n;
        while ((n = SSL_read(ssl, buf, sizeof buf)) > 0) got += static_cast<std::size_t>(n);
        SSL_free(ssl);
        ::close(fd);
      });
  EXPECT_EQ(got, 2 * body.size());
  EXPECT_GE(after_first, body.size());  // the records of at least one batch
  EXPECT_EQ(after_second, after_first);
  EXPECT_EQ(after_trim, 0u);
}

TEST_P(TlsStreamTest, PlainHttpIsRefused) {
  int result = 1;
  std::string answer;
  run(
      1, [&](TlsStream& tls) { result = tls.handshake(rt::now() + 5s); },
      [&] {
        int fd = connect_to(port_);
        const char req[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        ASSERT_EQ(::send(fd, req, sizeof req - 1, MSG_NOSIGNAL),
                  static_cast<ssize_t>(sizeof req - 1));
        char buf[256];
        ssize_t n;
        while ((n = ::recv(fd, buf, sizeof buf, 0)) > 0)
          answer.append(buf, static_cast<std::size_t>(n));
        ::close(fd);
      });
  EXPECT_EQ(result, -EPROTO);
  // At most a TLS alert record (content type 21), never anything that looks like HTTP.
  if (!answer.empty()) {
    EXPECT_EQ(static_cast<unsigned char>(answer[0]), 21);
  }
}

TEST_P(TlsStreamTest, AStalledHandshakeEndsAtItsDeadline) {
  int result = 1;
  std::chrono::milliseconds took{};
  run(
      1,
      [&](TlsStream& tls) {
        auto start = rt::now();
        result = tls.handshake(start + 200ms);
        took = std::chrono::duration_cast<std::chrono::milliseconds>(rt::now() - start);
      },
      [&] {
        int fd = connect_to(port_);
        // The first bytes of a ClientHello (a handshake record announcing 512 bytes), then
        // nothing.
        const unsigned char partial[] = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00};
        ::send(fd, partial, sizeof partial, MSG_NOSIGNAL);
        char buf[64];
        while (::recv(fd, buf, sizeof buf, 0) > 0) {
        }
        ::close(fd);
      });
  EXPECT_EQ(result, -ETIMEDOUT);
  EXPECT_GE(took.count(), 150);
  EXPECT_LT(took.count(), 5000);
}

// writev_all with `more` holds its records (MSG_MORE's meaning for the server's response
// writer) until the next flush; TLS 1.2, so that no ticket follows the handshake.
TEST_P(TlsStreamTest, RecordsWrittenWithMoreWaitForTheFlush) {
  int early = -1;
  std::string got;
  run(
      1,
      [&](TlsStream& tls) {
        ASSERT_EQ(tls.handshake(rt::now() + 5s), 0);
        iovec iov[2] = {{const_cast<char*>("he"), 2}, {const_cast<char*>("llo"), 3}};
        uint64_t sent = 0;
        EXPECT_EQ(tls.writev_all(iov, 2, true, rt::now() + 5s, nullptr, &sent), 5);
        EXPECT_EQ(sent, 5u);
        // Held while the client looks (a read would send them: it flushes before waiting).
        rt::sleep_for(1s);
        EXPECT_EQ(tls.flush(rt::now() + 5s), 0);
        tls.close_notify(rt::now() + 1s);
      },
      [&] {
        int fd = connect_to(port_);
        SSL* ssl = client_session(fd, nullptr, TLS1_2_VERSION);
        ASSERT_EQ(SSL_connect(ssl), 1);
        pollfd p{fd, POLLIN, 0};
        early = ::poll(&p, 1, 300);  // nothing may come before the flush
        char buf[16];
        int n;
        while ((n = SSL_read(ssl, buf, sizeof buf)) > 0)
          got.append(buf, static_cast<std::size_t>(n));
        SSL_free(ssl);
        ::close(fd);
      });
  EXPECT_EQ(early, 0);
  EXPECT_EQ(got, "hello");
}

// buffered() tells of plaintext the library holds after a short read: a connection must not
// idle on the socket while it does.
TEST_P(TlsStreamTest, BufferedTellsOfPlaintextLeftInTheSession) {
  std::string got;
  bool held = false;
  bool after = true;
  run(
      1,
      [&](TlsStream& tls) {
        ASSERT_EQ(tls.handshake(rt::now() + 5s), 0);
        char buf[8];
        ASSERT_EQ(tls.read(buf, 1, rt::now() + 5s), 1);
        got.append(buf, 1);
        held = tls.buffered();
        while (got.size() < 4) {
          int64_t n = tls.read(buf, sizeof buf, rt::now() + 5s);
          ASSERT_GT(n, 0);
          got.append(buf, static_cast<std::size_t>(n));
        }
        after = tls.buffered();
        tls.close_notify(rt::now() + 1s);
      },
      [&] {
        int fd = connect_to(port_);
        SSL* ssl = client_session(fd);
        ASSERT_EQ(SSL_connect(ssl), 1);
        SSL_write(ssl, "ab", 2);
        SSL_write(ssl, "cd", 2);
        char buf[16];
        while (SSL_read(ssl, buf, sizeof buf) > 0) {
        }
        SSL_free(ssl);
        ::close(fd);
      });
  EXPECT_EQ(got, "abcd");
  EXPECT_TRUE(held);
  EXPECT_FALSE(after);
}

// A ClientHello announcing more than the bound is refused as soon as its header is in,
// before the library sizes a buffer by it (OpenSSL's would hold the announced 131 KB).
TEST_P(TlsStreamTest, AClientHelloOverTheBoundIsRefused) {
  int result = 1;
  run(
      1, [&](TlsStream& tls) { result = tls.handshake(rt::now() + 5s); },
      [&] {
        int fd = connect_to(port_);
        const unsigned char hello[] = {0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x02, 0x01, 0x44};
        ::send(fd, hello, sizeof hello, MSG_NOSIGNAL);
        char buf[64];
        while (::recv(fd, buf, sizeof buf, 0) > 0) {
        }
        ::close(fd);
      });
  EXPECT_EQ(result, -EMSGSIZE);
}

// The ClientHello gathered by the stream itself (bound_client_hello) arrives in pieces of a
// few bytes, its record header split too: the handshake completes all the same.
TEST_P(TlsStreamTest, AClientHelloInPiecesIsGatheredWhole) {
  std::string protocol;
  std::string got;
  run(1, ping_pong(protocol), [&] {
    int fd = connect_to(port_);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    SSL* ssl = SSL_new(client_);
    BIO* in = BIO_new(BIO_s_mem());
    BIO* out = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, in, out);
    SSL_set_connect_state(ssl);
    ASSERT_EQ(SSL_do_handshake(ssl), -1);  // wrote the ClientHello, wants the answer
    char* hello = nullptr;
    const long len = BIO_get_mem_data(out, &hello);
    ASSERT_GT(len, 9);
    for (long at = 0; at < len; at += 3) {
      const long n = std::min(3L, len - at);
      ASSERT_EQ(::send(fd, hello + at, static_cast<std::size_t>(n), MSG_NOSIGNAL), n);
      std::this_thread::sleep_for(1ms);  // separate segments, to exercise the gathering
    }
    (void)BIO_reset(out);
    SSL_set_fd(ssl, fd);  // the rest of the handshake over the socket
    got = ping(ssl);
    SSL_free(ssl);
    ::close(fd);
  });
  EXPECT_EQ(got, "pong");
  EXPECT_EQ(protocol, "TLSv1.3");
}

// A send that fails (here: times out against a client that does not read) loses records
// whose size is unknown: the session must end there, not go on with a gap the client cannot
// decrypt past (a handshake or read that timed out mid-send used to idle and go on).
TEST_P(TlsStreamTest, AfterAFailedSendTheSessionEnds) {
  std::promise<void> failed;
  int64_t big = 0, tail = 0, read = 0, flushed = 0;
  const std::string body(16 * 1024 * 1024, 'x');  // more than both sockets' buffers hold
  run(
      1,
      [&](TlsStream& tls) {
        ASSERT_EQ(tls.handshake(rt::now() + 5s), 0);
        big = tls.write_all(body.data(), body.size(), rt::now() + 300ms);
        failed.set_value();  // the client reads from here on
        tail = tls.write_all("tail", 4, rt::now() + 5s);
        flushed = tls.flush(rt::now() + 5s);
        char buf[16];
        read = tls.read(buf, sizeof buf, rt::now() + 100ms);
      },
      [&] {
        int fd = connect_to(port_);
        SSL* ssl = client_session(fd);
        ASSERT_EQ(SSL_connect(ssl), 1);
        ASSERT_EQ(failed.get_future().wait_for(20s), std::future_status::ready);
        char buf[16384];
        while (SSL_read(ssl, buf, sizeof buf) > 0) {
        }
        SSL_free(ssl);
        ::close(fd);
      });
  EXPECT_EQ(big, -ETIMEDOUT);
  EXPECT_EQ(tail, -EPIPE);
  EXPECT_EQ(flushed, -EPIPE);
  EXPECT_EQ(read, -EPIPE);
}

// tls.ktls = "on": the handshake runs on the socket (OpenSSL's socket BIO, the fiber waiting
// for readiness). Where the kernel took the sending side the plaintext goes to the socket as
// is; where it refused (no "tls" ULP, as on this VM) the session goes on over the memory
// buffers. Either way the client reads "pong", for TLS 1.3 and 1.2.
TEST_P(TlsStreamTest, AskingTheKernelRunsTheHandshakeOnTheSocket) {
  auto pair = testing::make_cert(dir_, "kernel", "kernel.test");
  TlsSettings settings = testing::settings_for(pair);
  settings.ktls = KernelTls::on;
  std::string error;
  ctx_ = TlsContext::create(settings, error);
  ASSERT_TRUE(ctx_) << error;
  bool asked[2] = {false, false}, kernel[2] = {true, true};
  std::string protocol[2], got[2];
  int i = 0;
  run(
      2,
      [&](TlsStream& tls) {
        ASSERT_EQ(tls.handshake(rt::now() + 5s), 0);
        asked[i] = tls.asked_kernel();
        kernel[i] = tls.kernel_sends();
        protocol[i] = tls.protocol();
        char buf[16] = {};
        ASSERT_EQ(tls.read(buf, sizeof buf, rt::now() + 5s), 4);
        EXPECT_STREQ(buf, "ping");
        if (tls.kernel_sends()) {
          EXPECT_EQ(tls.write_all("pong", 4, rt::now() + 5s), -EOPNOTSUPP);
          EXPECT_EQ(
              rt::io::send_all(SSL_get_fd(tls.session()), "pong", 4, MSG_NOSIGNAL, rt::now() + 5s),
              4);
        } else {
          EXPECT_EQ(tls.write_all("pong", 4, rt::now() + 5s), 4);
        }
        tls.close_notify(rt::now() + 1s);
        ++i;
      },
      [&] {
        for (int k = 0; k < 2; ++k) {
          int fd = connect_to(port_);
          SSL* ssl = client_session(fd, nullptr, k == 0 ? 0 : TLS1_2_VERSION);
          got[k] = ping(ssl);
          SSL_free(ssl);
          ::close(fd);
        }
      });
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(got[k], "pong") << k;
    EXPECT_TRUE(asked[k]);
    if (!kernel_tls_available()) {
      EXPECT_FALSE(kernel[k]);
    }
  }
  EXPECT_EQ(protocol[0], "TLSv1.3");
  EXPECT_EQ(protocol[1], "TLSv1.2");
}

// On the socket too, a client that leaves mid-handshake ends it as the peer's leaving.
TEST_P(TlsStreamTest, AClientLeavingMidHandshakeOnTheSocketIsAReset) {
  TlsSettings settings = testing::settings_for(testing::make_cert(dir_, "k", "k.test"));
  settings.ktls = KernelTls::on;
  std::string error;
  ctx_ = TlsContext::create(settings, error);
  ASSERT_TRUE(ctx_) << error;
  int result = 1;
  run(
      1, [&](TlsStream& tls) { result = tls.handshake(rt::now() + 5s); },
      [&] {
        int fd = connect_to(port_);
        ::close(fd);
      });
  EXPECT_EQ(result, -ECONNRESET);
}

INSTANTIATE_TEST_SUITE_P(Backends, TlsStreamTest,
                         ::testing::Values(rt::IoBackendKind::io_uring, rt::IoBackendKind::epoll),
                         [](const auto& p) {
                           return p.param == rt::IoBackendKind::epoll ? "epoll" : "io_uring";
                         });

}  // namespace
}  // namespace weft::http
