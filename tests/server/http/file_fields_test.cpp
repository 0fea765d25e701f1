// Tests server/http/file_fields.cpp: a file's representation fields and a variant's validators.
#include "server/http/file_fields.hpp"

#include <string>

#include <gtest/gtest.h>

namespace weft::http {
namespace {

TEST(FileFields, AStrongMtimeSendsLastModifiedAmongTheValidators) {
  FileFields f;
  f.build("text/plain", "\"1-2\"", 0, /*mtime_strong=*/true, /*ranges=*/true);
  EXPECT_EQ(f.text,
            "Content-Type: text/plain\r\nLast-Modified: Thu, 01 Jan 1970 00:00:00 GMT\r\n"
            "ETag: \"1-2\"\r\nAccept-Ranges: bytes\r\n");
  EXPECT_EQ(f.validators(), "Last-Modified: Thu, 01 Jan 1970 00:00:00 GMT\r\nETag: \"1-2\"\r\n");
  EXPECT_EQ(f.after_validators(), "Accept-Ranges: bytes\r\n");
}

TEST(FileFields, AYoungMtimeSendsTheETagAloneAndNoRangesSaySo) {
  FileFields f;
  f.build("text/plain", "\"1-2\"", 0, /*mtime_strong=*/false, /*ranges=*/false);
  EXPECT_EQ(f.validators(), "ETag: \"1-2\"\r\n");
  EXPECT_EQ(f.after_validators(), "Accept-Ranges: none\r\n");
}

TEST(FileFields, AVariantsTagGetsItsSuffixInsideTheQuotes) {
  FileFields f;
  f.build("text/plain", "\"1-2\"", 0, /*mtime_strong=*/true, /*ranges=*/true);
  std::string out;
  EXPECT_EQ(variant_validators(out, f.validators(), "\"1-2\"", "-gz"), "\"1-2-gz\"");
  EXPECT_EQ(out, "Last-Modified: Thu, 01 Jan 1970 00:00:00 GMT\r\nETag: \"1-2-gz\"\r\n");
}

}  // namespace
}  // namespace weft::http
