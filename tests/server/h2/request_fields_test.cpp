// Tests server/h2/request_fields.cpp: an HTTP/2 stream's decoded fields as the Request the
// static handler takes, :authority as Host, and the limits (431) and a Host that disagrees
// with :authority (400).
#include "server/h2/request_fields.hpp"

#include <string>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

TEST(RequestFields, BuildsTheRequestAnHttp11HeadWouldParseInto) {
  RequestFields f(100, 32 * 1024);
  f.add(":method", "GET");
  f.add(":scheme", "https");
  f.add(":authority", "b.example:8443");
  f.add(":path", "/dir/file.txt?x=1");
  f.add("range", "bytes=0-9");
  f.add("if-none-match", "\"a\"");
  f.add("if-none-match", "\"b\"");
  f.add("accept-encoding", "br, gzip");
  ASSERT_EQ(f.refusal(), 0);
  const Request r = f.build();
  EXPECT_EQ(r.method(), Method::get);
  EXPECT_EQ(r.method_text(), "GET");
  EXPECT_EQ(r.target(), "/dir/file.txt?x=1");
  EXPECT_EQ(r.version(), Version::http_2);
  EXPECT_TRUE(r.keep_alive());
  EXPECT_EQ(r.host(), "b.example:8443");
  EXPECT_EQ(r.range(), "bytes=0-9");
  EXPECT_EQ(r.count(Field::if_none_match), 2u);
  EXPECT_FALSE(r.accept_encoding().empty());
  EXPECT_EQ(r.find("Range"), "bytes=0-9");  // found without case, as over HTTP/1.1
}

TEST(RequestFields, ClassifiesMethods) {
  const std::pair<const char*, Method> cases[] = {
      {"GET", Method::get},    {"HEAD", Method::head}, {"OPTIONS", Method::options},
      {"POST", Method::other}, {"get", Method::other}, {"", Method::other}};
  for (const auto& [text, method] : cases) {
    RequestFields f(100, 32 * 1024);
    f.add(":method", text);
    f.add(":path", "/");
    EXPECT_EQ(f.build().method(), method) << text;
  }
}

TEST(RequestFields, HostWithoutAuthorityIsKept) {
  RequestFields f(100, 32 * 1024);
  f.add(":method", "GET");
  f.add(":path", "/");
  f.add("host", "a.example");
  ASSERT_EQ(f.refusal(), 0);
  EXPECT_EQ(f.build().host(), "a.example");
}

TEST(RequestFields, HostAgreeingWithAuthorityIsOneHost) {
  RequestFields f(100, 32 * 1024);
  f.add(":method", "GET");
  f.add(":authority", "a.example");
  f.add(":path", "/");
  f.add("host", "A.example");
  ASSERT_EQ(f.refusal(), 0);
  const Request r = f.build();
  EXPECT_EQ(r.count(Field::host), 1u);  // a repeated Host would make host() empty
  EXPECT_EQ(r.host(), "a.example");
}

TEST(RequestFields, HostDisagreeingWithAuthorityIs400) {
  RequestFields f(100, 32 * 1024);
  f.add(":method", "GET");
  f.add(":authority", "a.example");
  f.add(":path", "/");
  f.add("host", "b.example");
  EXPECT_EQ(f.refusal(), 400);
}

TEST(RequestFields, MoreFieldsThanLimitsMaxHeadersIs431) {
  RequestFields f(3, 32 * 1024);
  f.add(":method", "GET");
  f.add(":path", "/");
  for (int i = 0; i < 3; ++i) f.add("x-a", "1");
  EXPECT_EQ(f.refusal(), 0);
  f.add("x-a", "1");
  EXPECT_EQ(f.refusal(), 431);
}

TEST(RequestFields, ListOverTheSizeLimitIs431AndKeepsNoMore) {
  RequestFields f(100, 1024);
  f.add(":method", "GET");
  f.add(":path", "/");
  f.add("x-big", std::string(2000, 'a'));
  EXPECT_EQ(f.refusal(), 431);
  f.add("x-small", "1");  // counted, not kept
  EXPECT_EQ(f.refusal(), 431);
  EXPECT_FALSE(f.build().find("x-small"));
}

TEST(RequestFields, ListSizeCountsNameValueAnd32) {
  // ":method" + "GET" + 32 = 42; ":path" + "/" + 32 = 38: 80 fits exactly in 80.
  RequestFields f(100, 80);
  f.add(":method", "GET");
  f.add(":path", "/");
  EXPECT_EQ(f.refusal(), 0);
  f.add("a", "");
  EXPECT_EQ(f.refusal(), 431);
}

TEST(RequestFields, ClearKeepsNothingOfTheLastRequest) {
  RequestFields f(100, 1024);
  f.add(":method", "HEAD");
  f.add(":authority", "a.example");
  f.add(":path", "/old");
  f.add("host", "b.example");              // 400
  f.add("x-big", std::string(2000, 'a'));  // 431
  ASSERT_NE(f.refusal(), 0);
  f.clear();
  f.add(":method", "GET");
  f.add(":path", "/new");
  EXPECT_EQ(f.refusal(), 0);
  const Request r = f.build();
  EXPECT_EQ(r.method(), Method::get);
  EXPECT_EQ(r.target(), "/new");
  EXPECT_FALSE(r.host());
  EXPECT_TRUE(r.headers().empty());
}

}  // namespace
}  // namespace weft::http
