// Tests server/http/request.cpp: field classification and FieldLines.
#include "server/http/request.hpp"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

TEST(Request, ClassifiesFieldsWithoutCase) {
  const std::pair<const char*, Field> cases[] = {
      {"Host", Field::host},
      {"HOST", Field::host},
      {"connection", Field::connection},
      {"Content-Length", Field::content_length},
      {"transfer-encoding", Field::transfer_encoding},
      {"Expect", Field::expect},
      {"If-Match", Field::if_match},
      {"if-none-match", Field::if_none_match},
      {"If-Modified-Since", Field::if_modified_since},
      {"If-Unmodified-Since", Field::if_unmodified_since},
      {"Range", Field::range},
      {"If-Range", Field::if_range},
      {"accept-ENCODING", Field::accept_encoding},
      {"Accept-Encodinf", Field::other},
      {"Hosts", Field::other},
      {"Ranges", Field::other},
      {"If-Rangf", Field::other},
      {"X-Host", Field::other},
      {"", Field::other},
  };
  for (const auto& [name, field] : cases) EXPECT_EQ(classify_field(name), field) << name;
}

TEST(Request, FieldLinesIterateOneFieldInOrder) {
  const Header headers[] = {
      {"A", "1", Field::if_none_match}, {"B", "x", Field::other},
      {"C", "2", Field::if_none_match}, {"D", "y", Field::range},
      {"E", "3", Field::if_none_match},
  };
  const FieldLines lines(headers, Field::if_none_match);
  EXPECT_FALSE(lines.empty());
  const std::vector<std::string_view> values(lines.begin(), lines.end());
  EXPECT_EQ(values, (std::vector<std::string_view>{"1", "2", "3"}));
  EXPECT_TRUE(FieldLines(headers, Field::if_match).empty());
  EXPECT_TRUE(FieldLines().empty());
  int n = 0;
  for (std::string_view v : FieldLines(headers, Field::range)) {
    EXPECT_EQ(v, "y");
    ++n;
  }
  EXPECT_EQ(n, 1);
}

TEST(Request, DefaultRequestIsEmpty) {
  const Request r;
  EXPECT_TRUE(r.headers().empty());
  EXPECT_FALSE(r.host());
  EXPECT_FALSE(r.find("host"));
  EXPECT_FALSE(r.keep_alive());
}

}  // namespace
}  // namespace weft::http
