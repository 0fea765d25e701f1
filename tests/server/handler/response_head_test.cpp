// Tests server/handler/response_head.cpp: what a head starts with, a refusal, and the fields
// of a reply that needs no file (a redirect, OPTIONS); a file's heads are tested with the
// writer that sends them (tests/server/net/response_writer_test.cpp).
#include "server/handler/response_head.hpp"

#include <string>

#include <gtest/gtest.h>

#include "server/core/config.hpp"
#include "server/handler/connection_work.hpp"
#include "server/http/status.hpp"

namespace weft::http {
namespace {

constexpr std::string_view kDate = "Thu, 01 Jan 1970 00:00:00 GMT";

TEST(ResponseHead, ARefusalIsAWholeResponseThatCloses) {
  DateCache dates([] { return int64_t{0}; });
  HeadBuffer h;
  build_refusal(h, {"weft", dates}, 503);
  const std::string expected =
      std::string(status_line(503)) + "Server: weft\r\nDate: " + std::string(kDate) +
      "\r\nConnection: close\r\nContent-Type: text/html\r\n"
      "Content-Length: " +
      std::to_string(error_body(503).size()) + "\r\n\r\n" + std::string(error_body(503));
  EXPECT_EQ(h.view(), expected);
}

TEST(ResponseHead, AnHttp10RequestThatStaysOpenIsToldKeepAlive) {
  DateCache dates([] { return int64_t{0}; });
  Config config;
  ConnectionWork work(config, 4096);
  const std::string raw = "OPTIONS * HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
  ASSERT_EQ(work.parser.parse({raw.data(), raw.size()}).status, ParseStatus::ready);
  Reply options;
  options.kind = Reply::Kind::options;
  options.status = 200;
  HeadBuffer h;
  build_head(h, {"weft", dates}, options, &work.parser.request(), false, work);
  EXPECT_EQ(h.view(), std::string(status_line(200)) +
                          "Server: weft\r\nDate: " + std::string(kDate) +
                          "\r\nConnection: keep-alive\r\nAllow: GET, HEAD, OPTIONS\r\n"
                          "Content-Length: 0\r\n\r\n");
}

TEST(ResponseHead, AnErrorPageCarriesItsExtraFields) {
  DateCache dates([] { return int64_t{0}; });
  Config config;
  ConnectionWork work(config, 4096);
  HeadBuffer h;
  build_head(h, {"weft", dates}, Reply::error_page(301, "Location: /d/\r\n"), nullptr, true, work);
  EXPECT_TRUE(h.view().ends_with("Content-Length: " + std::to_string(error_body(301).size()) +
                                 "\r\nLocation: /d/\r\n\r\n"))
      << h.view();
}

}  // namespace
}  // namespace weft::http
