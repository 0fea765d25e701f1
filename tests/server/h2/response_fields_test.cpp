// Tests server/h2/response_fields.cpp: an HTTP/1.1 response head as HTTP/2 fields (:status
// first, names in lower case, connection-specific fields left out).
#include "server/h2/response_fields.hpp"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

std::vector<std::pair<std::string, std::string>> pairs(const ResponseFields& f) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const nghttp2_nv& nv : f.list()) {
    out.emplace_back(std::string(reinterpret_cast<const char*>(nv.name), nv.namelen),
                     std::string(reinterpret_cast<const char*>(nv.value), nv.valuelen));
  }
  return out;
}

TEST(ResponseFields, StatusFirstNamesLowerCase) {
  ResponseFields f;
  ASSERT_TRUE(
      f.assign("HTTP/1.1 206 Partial Content\r\nServer: weft\r\nContent-Range: bytes 0-9/100\r\n"
               "ETag: \"x\"\r\nX-Rule:  spaced\r\n\r\n"));
  EXPECT_EQ(f.status(), 206);
  const std::vector<std::pair<std::string, std::string>> want = {{":status", "206"},
                                                                 {"server", "weft"},
                                                                 {"content-range", "bytes 0-9/100"},
                                                                 {"etag", "\"x\""},
                                                                 {"x-rule", "spaced"}};
  EXPECT_EQ(pairs(f), want);
}

TEST(ResponseFields, LeavesOutConnectionSpecificFields) {
  ResponseFields f;
  ASSERT_TRUE(
      f.assign("HTTP/1.1 200 OK\r\nConnection: close\r\nKeep-Alive: timeout=5\r\n"
               "Transfer-Encoding: chunked\r\nUpgrade: h2c\r\nProxy-Connection: x\r\n"
               "Content-Length: 5\r\n\r\n"));
  const std::vector<std::pair<std::string, std::string>> want = {{":status", "200"},
                                                                 {"content-length", "5"}};
  EXPECT_EQ(pairs(f), want);
}

TEST(ResponseFields, RefusesWhatIsNotAHead) {
  ResponseFields f;
  EXPECT_FALSE(f.assign(""));
  EXPECT_FALSE(f.assign("HTTP/1.1 2x0 OK\r\n\r\n"));
  EXPECT_FALSE(f.assign("HTTP/1.1\r\n\r\n"));
}

TEST(ResponseFields, ReassignKeepsNothingOfBefore) {
  ResponseFields f;
  ASSERT_TRUE(f.assign("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n\r\n"));
  ASSERT_TRUE(f.assign("HTTP/1.1 404 Not Found\r\nC: 3\r\n\r\n"));
  const std::vector<std::pair<std::string, std::string>> want = {{":status", "404"}, {"c", "3"}};
  EXPECT_EQ(pairs(f), want);
}

}  // namespace
}  // namespace weft::http
