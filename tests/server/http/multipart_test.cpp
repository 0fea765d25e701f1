// Tests server/http/multipart.cpp: boundaries (hex, fresh each time), the text of a part's head
// and of the close delimiter, and a body length that matches the framing byte for byte.
#include "server/http/multipart.hpp"

#include <set>
#include <string>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

TEST(Multipart, BoundariesAreTwentyHexDigitsAndFresh) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    Boundary b;
    const std::string_view v = make_boundary(b);
    ASSERT_EQ(v.size(), kBoundaryLength);
    for (char c : v) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << v;
    seen.insert(std::string(v));
  }
  EXPECT_EQ(seen.size(), 100u);
}

TEST(Multipart, PartHeadAndCloseDelimiter) {
  HeadBuffer h;
  ASSERT_TRUE(append_part_head(h, "0123456789abcdef0123", "text/plain", {5, 10}, 1000));
  EXPECT_EQ(h.view(),
            "\r\n--0123456789abcdef0123\r\nContent-Type: text/plain\r\n"
            "Content-Range: bytes 5-14/1000\r\n\r\n");
  h.clear();
  ASSERT_TRUE(append_close_delimiter(h, "0123456789abcdef0123"));
  EXPECT_EQ(h.view(), "\r\n--0123456789abcdef0123--\r\n");
}

TEST(Multipart, LengthIsTheFramingPlusTheBytes) {
  const ByteRange parts[] = {{0, 1}, {10, 200}, {999, 1}};
  std::string body;
  HeadBuffer h;
  for (const ByteRange& p : parts) {
    h.clear();
    append_part_head(h, "b", "application/octet-stream", p, 1000);
    body.append(h.view()).append(p.length, 'x');
  }
  h.clear();
  append_close_delimiter(h, "b");
  body.append(h.view());
  EXPECT_EQ(multipart_length("b", "application/octet-stream", parts, 1000), body.size());
}

TEST(Multipart, ATypeTooLongForAPartHeadHasNoLength) {
  const ByteRange parts[] = {{0, 1}, {10, 1}};
  const std::string type(HeadBuffer::kCapacity, 't');
  EXPECT_FALSE(multipart_length("b", type, parts, 1000).has_value());
}

}  // namespace
}  // namespace weft::http
