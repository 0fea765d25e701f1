// set_ocsp_staple against responses made here with OpenSSL's OCSP API, signed by a test CA
// for a certificate it issued: a good response is stapled without a note; one about another
// certificate, one that is not a response, an unsuccessful one and a missing file are refused
// by name; one out of date or saying "revoked" is stapled with a note.
#include "server/tls/ocsp_staple.hpp"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "server/tls/tls_library.hpp"

#include "tests/server/temp_dir.hpp"
#include "tests/server/tls/test_cert.hpp"

namespace weft::http {
namespace {

namespace fs = std::filesystem;

using testing::issue;
using testing::Issued;
using testing::release;

// Writes `resp` (DER) to `path`; frees it.
void write_response(OCSP_RESPONSE* resp, const fs::path& path) {
  unsigned char* der = nullptr;
  const int len = i2d_OCSP_RESPONSE(resp, &der);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(der, 1, static_cast<std::size_t>(len), f);
  std::fclose(f);
  OPENSSL_free(der);
  OCSP_RESPONSE_free(resp);
}

// `ca`'s answer about `cert`: `status` (V_OCSP_CERTSTATUS_*), valid from `from` to `until`
// seconds from now, signed by `signer` (ca's own key when null).
OCSP_RESPONSE* answer(const Issued& ca, const Issued& cert, int status, long from, long until,
                      const Issued* signer = nullptr) {
  OCSP_BASICRESP* basic = OCSP_BASICRESP_new();
  OCSP_CERTID* id = OCSP_cert_to_id(EVP_sha1(), cert.cert, ca.cert);
  ASN1_TIME* this_update = X509_gmtime_adj(nullptr, from);
  ASN1_TIME* next_update = X509_gmtime_adj(nullptr, until);
  ASN1_TIME* revoked = X509_gmtime_adj(nullptr, -7200);
  OCSP_basic_add1_status(basic, id, status, OCSP_REVOKED_STATUS_KEYCOMPROMISE,
                         status == V_OCSP_CERTSTATUS_REVOKED ? revoked : nullptr, this_update,
                         next_update);
  const Issued& by = signer ? *signer : ca;
  OCSP_basic_sign(basic, by.cert, by.key, EVP_sha256(), nullptr, 0);
  OCSP_RESPONSE* resp = OCSP_response_create(OCSP_RESPONSE_STATUS_SUCCESSFUL, basic);
  OCSP_CERTID_free(id);
  ASN1_TIME_free(this_update);
  ASN1_TIME_free(next_update);
  ASN1_TIME_free(revoked);
  OCSP_BASICRESP_free(basic);
  return resp;
}

class OcspStapleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_test_dir("ocsp-staple");
    ca_ = issue("weft test CA", nullptr, 1);
    leaf_ = issue("a.test", &ca_, 2);
    other_ = issue("b.test", &ca_, 3);
    // The served chain: the leaf, then its issuer (where the full certificate id is checked).
    const fs::path chain = dir_ / "chain.pem";
    const fs::path key = dir_ / "leaf.key";
    std::FILE* f = std::fopen(chain.c_str(), "w");
    PEM_write_X509(f, leaf_.cert);
    PEM_write_X509(f, ca_.cert);
    std::fclose(f);
    f = std::fopen(key.c_str(), "w");
    PEM_write_PrivateKey(f, leaf_.key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(f);
    ctx_ = SSL_CTX_new(TLS_server_method());
    ASSERT_EQ(SSL_CTX_use_certificate_chain_file(ctx_, chain.c_str()), 1);
    ASSERT_EQ(SSL_CTX_use_PrivateKey_file(ctx_, key.c_str(), SSL_FILETYPE_PEM), 1);
  }
  void TearDown() override {
    SSL_CTX_free(ctx_);
    held_.clear();
    release(ca_);
    release(leaf_);
    release(other_);
    fs::remove_all(dir_);
  }

  // Staples `file`; returns the error ("" when stapled) and sets note_. The staple is kept
  // (held_) for as long as ctx_ may use it, as its contract asks.
  std::string staple(const fs::path& file) {
    std::string error;
    note_.clear();
    auto held = set_ocsp_staple(ctx_, file.string(), error, note_);
    EXPECT_EQ(held == nullptr, !error.empty());
    if (held) held_.push_back(std::move(held));
    return error;
  }

  fs::path dir_;
  Issued ca_, leaf_, other_;
  SSL_CTX* ctx_ = nullptr;
  std::string note_;
  std::vector<std::shared_ptr<void>> held_;
};

TEST_F(OcspStapleTest, AGoodResponseIsStapledWithoutANote) {
  write_response(answer(ca_, leaf_, V_OCSP_CERTSTATUS_GOOD, -60, 86400), dir_ / "good.der");
  EXPECT_EQ(staple(dir_ / "good.der"), "");
  EXPECT_EQ(note_, "");
}

TEST_F(OcspStapleTest, AResponseAboutAnotherCertificateIsRefused) {
  write_response(answer(ca_, other_, V_OCSP_CERTSTATUS_GOOD, -60, 86400), dir_ / "other.der");
  const std::string error = staple(dir_ / "other.der");
  EXPECT_NE(error.find("tls stapling file " + (dir_ / "other.der").string()), std::string::npos);
  EXPECT_NE(error.find("not about this certificate"), std::string::npos) << error;
}

TEST_F(OcspStapleTest, WhatIsNotASuccessfulResponseIsRefusedByName) {
  write_response(OCSP_response_create(OCSP_RESPONSE_STATUS_TRYLATER, nullptr), dir_ / "later.der");
  EXPECT_NE(staple(dir_ / "later.der").find("the responder answered \"trylater\""),
            std::string::npos);
  std::FILE* f = std::fopen((dir_ / "junk.der").c_str(), "wb");
  std::fputs("not DER at all", f);
  std::fclose(f);
  EXPECT_NE(staple(dir_ / "junk.der").find("not a DER OCSP response"), std::string::npos);
  EXPECT_NE(staple(dir_ / "none.der").find("No such file"), std::string::npos);
}

TEST_F(OcspStapleTest, AResponseNotSignedForTheIssuerIsRefused) {
  // Signed by another certificate's key (not the CA's, not one the CA certified to answer).
  Issued stranger = issue("stranger", nullptr, 9);
  write_response(answer(ca_, leaf_, V_OCSP_CERTSTATUS_GOOD, -60, 86400, &stranger),
                 dir_ / "forged.der");
  release(stranger);
  EXPECT_NE(staple(dir_ / "forged.der").find("its signature is neither the issuer's"),
            std::string::npos);
  // A responder the CA certified (its certificate carried in the response) may sign.
  Issued responder = issue("responder", &ca_, 10);
  write_response(answer(ca_, leaf_, V_OCSP_CERTSTATUS_GOOD, -60, 86400, &responder),
                 dir_ / "delegated.der");
  release(responder);
  EXPECT_EQ(staple(dir_ / "delegated.der"), "");
}

// Without the issuer in the served chain, the response is matched by serial number alone.
TEST_F(OcspStapleTest, WithoutTheIssuerTheSerialNumberDecides) {
  SSL_CTX* alone = SSL_CTX_new(TLS_server_method());
  ASSERT_EQ(SSL_CTX_use_certificate(alone, leaf_.cert), 1);
  ASSERT_EQ(SSL_CTX_use_PrivateKey(alone, leaf_.key), 1);
  write_response(answer(ca_, leaf_, V_OCSP_CERTSTATUS_GOOD, -60, 86400), dir_ / "mine.der");
  write_response(answer(ca_, other_, V_OCSP_CERTSTATUS_GOOD, -60, 86400), dir_ / "theirs.der");
  std::string error, note;
  auto held = set_ocsp_staple(alone, (dir_ / "mine.der").string(), error, note);
  EXPECT_TRUE(held) << error;
  EXPECT_FALSE(set_ocsp_staple(alone, (dir_ / "theirs.der").string(), error, note));
  EXPECT_NE(error.find("not about this certificate"), std::string::npos) << error;
  SSL_CTX_free(alone);
}

TEST_F(OcspStapleTest, OutOfDateOrRevokedIsStapledWithANote) {
  write_response(answer(ca_, leaf_, V_OCSP_CERTSTATUS_GOOD, -7200, -3600), dir_ / "old.der");
  EXPECT_EQ(staple(dir_ / "old.der"), "");
  EXPECT_NE(note_.find("is out of date; stapled as it is"), std::string::npos) << note_;
  write_response(answer(ca_, leaf_, V_OCSP_CERTSTATUS_REVOKED, -60, 86400), dir_ / "rev.der");
  EXPECT_EQ(staple(dir_ / "rev.der"), "");
  EXPECT_NE(note_.find("says the certificate is revoked"), std::string::npos) << note_;
  write_response(answer(ca_, leaf_, V_OCSP_CERTSTATUS_UNKNOWN, -60, 86400), dir_ / "unk.der");
  EXPECT_EQ(staple(dir_ / "unk.der"), "");
  EXPECT_NE(note_.find("says the responder does not know it"), std::string::npos) << note_;
}

}  // namespace
}  // namespace weft::http
