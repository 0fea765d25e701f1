// Tests server/compress/compressor.cpp: which files are eligible (types with "type/*",
// parameters ignored, sizes, a settled mtime), one job per miss whose representation carries
// the coding in its ETag and the file's type, and an f.zst's window checked from its header.
#include "server/compress/compressor.hpp"

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <zstd.h>

#include "server/compress/codec.hpp"

namespace weft::http {
namespace {

// A regular file held in memory, as the fd cache keeps small files.
FileRef file(std::string_view type, std::string body, bool strong = true) {
  auto* f = new FileEntry;
  f->path = "/a";
  f->size = body.size();
  f->mtime = 1000;
  f->mtime_strong = strong;
  f->ino = 3;
  f->content_type = type;
  f->etag = make_etag(f->mtime, 0, f->size);
  f->bytes = std::make_unique<char[]>(body.size());
  std::memcpy(f->bytes.get(), body.data(), body.size());
  return FileRef(f);
}

TEST(Compressor, Eligible) {
  Config c;
  c.compression_min_size = 10;
  c.compression_max_file_size = 100;
  Compressor comp(c);
  const std::string body(50, 'a');
  EXPECT_TRUE(comp.eligible(*file("text/html", body)));
  EXPECT_TRUE(comp.eligible(*file("text/css; charset=utf-8", body)));  // parameters ignored
  EXPECT_TRUE(comp.eligible(*file("application/json", body)));
  EXPECT_TRUE(comp.eligible(*file("image/svg+xml", body)));
  EXPECT_FALSE(comp.eligible(*file("image/png", body)));
  EXPECT_FALSE(comp.eligible(*file("font/woff2", body)));     // already compressed
  EXPECT_FALSE(comp.eligible(*file("textual/plain", body)));  // "text/*" is not a prefix match
  EXPECT_FALSE(comp.eligible(*file("text/html", std::string(9, 'a'))));    // under min_size
  EXPECT_FALSE(comp.eligible(*file("text/html", std::string(101, 'a'))));  // over max
  EXPECT_TRUE(comp.eligible(*file("text/html", body, false)));  // varies; compressed later
  c.compression = false;
  EXPECT_FALSE(Compressor(c).eligible(*file("text/html", body)));
  c.compression = true;
  c.compression_codecs.clear();
  EXPECT_FALSE(Compressor(c).eligible(*file("text/html", body)));
}

TEST(Compressor, OneJobPerMissThenReady) {
  Config c;
  Compressor comp(c);
  FileRef f = file("text/plain", std::string(5000, 'x'));
  const int scope = 0;
  FileRef out;
  ASSERT_EQ(comp.find(&scope, f, ContentCoding::gzip, true, out), Compressor::Outcome::started);
  Compressor::Outcome o = Compressor::Outcome::pending;
  // Until the worker has stored it: bounded in count (the verdict is the outcome, not time).
  for (int i = 0; i < 2000 && o == Compressor::Outcome::pending; ++i) {
    o = comp.find(&scope, f, ContentCoding::gzip, true, out);
    if (o == Compressor::Outcome::pending)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(o, Compressor::Outcome::ready);
  EXPECT_EQ(comp.stats().compressions, 1u);
  EXPECT_LT(out->size, 100u);
  EXPECT_EQ(out->etag.view(), "\"3e8-1388+gz\"");
  EXPECT_EQ(out->content_type, "text/plain");
  EXPECT_NE(out->fields.text.find("ETag: \"3e8-1388+gz\"\r\n"), std::string::npos);
}

TEST(Compressor, ZstdVariantWindow) {
  Compressor comp(Config{});
  const std::string narrow = *compress_body(ContentCoding::zstd, 3, std::string(1000, 'z'));
  EXPECT_TRUE(comp.zstd_variant_ok(*file("application/zstd", narrow)));
  std::string wide("\x28\xb5\x2f\xfd\x00\x70", 6);  // a 16 MiB window
  wide.append(20, '\0');
  EXPECT_FALSE(comp.zstd_variant_ok(*file("application/zstd", wide)));
  EXPECT_FALSE(comp.zstd_variant_ok(*file("application/zstd", "plain text, no frame")));
}

}  // namespace
}  // namespace weft::http
