// Tests server/tls/ticket_keys: servers that share a key file resume each other's sessions;
// a rotated list (new key first) still resumes a ticket of the old key and renews it; a
// ticket of a key no longer listed gets a full handshake; a file of the wrong size or a
// missing one is refused with its name. Handshakes run over memory BIOs in one thread.
#include "server/tls/ticket_keys.hpp"

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <openssl/ssl.h>

#include "server/tls/tls_context.hpp"

#include "tests/server/temp_dir.hpp"
#include "tests/server/tls/test_cert.hpp"

namespace weft::http {
namespace {

namespace fs = std::filesystem;

// One full exchange between a client session and `server`'s new session over memory BIOs,
// offering `resume` (may be null); returns the client's session (to resume next time) and
// sets `resumed`.
SSL_SESSION* connect_once(const TlsContext& server, SSL_CTX* client_ctx, SSL_SESSION* resume,
                          bool& resumed) {
  SSL* s = server.new_session();
  SSL* c = SSL_new(client_ctx);
  SSL_set_connect_state(c);
  if (resume) SSL_set_session(c, resume);
  BIO* s_in = BIO_new(BIO_s_mem());
  BIO* s_out = BIO_new(BIO_s_mem());
  BIO* c_in = BIO_new(BIO_s_mem());
  BIO* c_out = BIO_new(BIO_s_mem());
  SSL_set_bio(s, s_in, s_out);
  SSL_set_bio(c, c_in, c_out);
  auto move = [](BIO* from, BIO* to) {
    char buf[16384];
    int n;
    while ((n = BIO_read(from, buf, sizeof buf)) > 0) BIO_write(to, buf, n);
  };
  bool s_done = false, c_done = false;
  for (int round = 0; round < 10 && !(s_done && c_done); ++round) {
    if (!c_done) c_done = SSL_do_handshake(c) == 1;
    move(c_out, s_in);
    if (!s_done) s_done = SSL_do_handshake(s) == 1;
    move(s_out, c_in);
  }
  EXPECT_TRUE(s_done && c_done);
  char byte;
  (void)SSL_read(c, &byte, 1);  // takes in the TLS 1.3 tickets sent after the handshake
  resumed = SSL_session_reused(s) == 1;
  SSL_SESSION* next = SSL_get1_session(c);
  // Ended as if by close_notify: a session freed without it is not resumable.
  SSL_set_shutdown(c, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  SSL_set_shutdown(s, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN);
  SSL_free(c);
  SSL_free(s);
  return next;
}

class TicketKeysTest : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    dir_ = make_test_dir("ticket-keys");
    pair_ = testing::make_cert(dir_, "server", "server.test");
    client_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(client_, SSL_VERIFY_NONE, nullptr);
    SSL_CTX_set_min_proto_version(client_, GetParam());
    SSL_CTX_set_max_proto_version(client_, GetParam());
  }
  void TearDown() override {
    SSL_CTX_free(client_);
    fs::remove_all(dir_);
  }
  std::string key_file(const std::string& name, std::size_t size, char fill) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << std::string(size, fill);
    return p.string();
  }
  // A server context (a fresh process, as far as tickets go) with `keys`.
  std::unique_ptr<TlsContext> server(const std::vector<std::string>& keys) {
    TlsSettings s = testing::settings_for(pair_);
    s.session_ticket_keys = keys;
    s.session_cache = 0;  // tickets only: no resumption by the server's own cache
    std::string error;
    auto ctx = TlsContext::create(s, error);
    EXPECT_TRUE(ctx) << error;
    return ctx;
  }

  fs::path dir_;
  testing::CertFiles pair_;
  SSL_CTX* client_ = nullptr;
};

TEST_P(TicketKeysTest, ServersSharingAKeyResumeEachOthersSessions) {
  const std::string key = key_file("a.key", 80, 'a');
  auto one = server({key});
  auto two = server({key});
  bool resumed = false;
  SSL_SESSION* s1 = connect_once(*one, client_, nullptr, resumed);
  EXPECT_FALSE(resumed);
  SSL_SESSION* s2 = connect_once(*two, client_, s1, resumed);
  EXPECT_TRUE(resumed);
  SSL_SESSION_free(s1);
  SSL_SESSION_free(s2);
}

TEST_P(TicketKeysTest, WithoutKeyFilesEachServerHasItsOwnKey) {
  auto one = server({});
  auto two = server({});
  bool resumed = true;
  SSL_SESSION* s1 = connect_once(*one, client_, nullptr, resumed);
  SSL_SESSION* s2 = connect_once(*two, client_, s1, resumed);
  EXPECT_FALSE(resumed);
  SSL_SESSION_free(s1);
  SSL_SESSION_free(s2);
}

TEST_P(TicketKeysTest, ARotatedListResumesTheOldKeyAndADroppedKeyDoesNot) {
  const std::string old_key = key_file("old.key", 48, 'o');
  const std::string new_key = key_file("new.key", 80, 'n');
  auto before = server({old_key});
  auto rotated = server({new_key, old_key});
  auto after = server({new_key});
  bool resumed = false;
  SSL_SESSION* s_old = connect_once(*before, client_, nullptr, resumed);
  // The old key's ticket resumes on the rotated server, which issues one of the new key...
  SSL_SESSION* s_new = connect_once(*rotated, client_, s_old, resumed);
  EXPECT_TRUE(resumed);
  // ...that the server without the old key takes; the old ticket it does not.
  SSL_SESSION* s3 = connect_once(*after, client_, s_new, resumed);
  EXPECT_TRUE(resumed);
  SSL_SESSION* s4 = connect_once(*after, client_, s_old, resumed);
  EXPECT_FALSE(resumed);
  for (SSL_SESSION* s : {s_old, s_new, s3, s4}) SSL_SESSION_free(s);
}

TEST_P(TicketKeysTest, AKeyFileOfTheWrongSizeOrMissingIsNamed) {
  TlsSettings s = testing::settings_for(pair_);
  std::string error;
  s.session_ticket_keys = {key_file("short.key", 32, 's')};
  EXPECT_FALSE(TlsContext::create(s, error));
  EXPECT_NE(error.find("short.key"), std::string::npos) << error;
  EXPECT_NE(error.find("80 or 48"), std::string::npos) << error;
  s.session_ticket_keys = {(dir_ / "absent.key").string()};
  EXPECT_FALSE(TlsContext::create(s, error));
  EXPECT_NE(error.find("absent.key"), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(Versions, TicketKeysTest,
                         ::testing::Values(TLS1_3_VERSION, TLS1_2_VERSION), [](const auto& p) {
                           return std::string(p.param == TLS1_3_VERSION ? "Tls13" : "Tls12");
                         });

}  // namespace
}  // namespace weft::http
