// Tests server/compress/codec.cpp: each codec's output decodes (with the same libraries'
// decoders) to the input, zstd frames stay within RFC 9659's window, and frame headers are
// read (a wide window, a skippable frame, not zstd at all).
#include "server/compress/codec.hpp"

#include <random>
#include <string>

#include <brotli/decode.h>
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

namespace weft::http {
namespace {

std::string text(std::size_t n) {
  std::mt19937 rnd(5);
  std::string out;
  while (out.size() < n) out += "function f" + std::to_string(rnd() % 1000) + "() { return 1; }\n";
  out.resize(n);
  return out;
}

std::string unzstd(const std::string& in, std::size_t n) {
  std::string out(n, '\0');
  const std::size_t got = ZSTD_decompress(out.data(), n, in.data(), in.size());
  return ZSTD_isError(got) ? "error" : out.substr(0, got);
}

std::string unbrotli(const std::string& in, std::size_t n) {
  std::string out(n, '\0');
  std::size_t got = n;
  if (BrotliDecoderDecompress(in.size(), reinterpret_cast<const uint8_t*>(in.data()), &got,
                              reinterpret_cast<uint8_t*>(out.data())) !=
      BROTLI_DECODER_RESULT_SUCCESS) {
    return "error";
  }
  return out.substr(0, got);
}

std::string ungzip(const std::string& in, std::size_t n) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return "error";
  std::string out(n, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(n);
  const int rc = inflate(&z, Z_FINISH);
  const std::size_t got = z.total_out;
  inflateEnd(&z);
  return rc == Z_STREAM_END ? out.substr(0, got) : "error";
}

TEST(Codec, EachRoundTrips) {
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{300}, std::size_t{200'000}}) {
    SCOPED_TRACE(n);
    const std::string in = text(n);
    auto z = compress_body(ContentCoding::zstd, 19, in);
    auto b = compress_body(ContentCoding::br, 11, in);
    auto g = compress_body(ContentCoding::gzip, 9, in);
    ASSERT_TRUE(z && b && g);
    EXPECT_EQ(unzstd(*z, n + 1), in);
    EXPECT_EQ(unbrotli(*b, n + 1), in);
    EXPECT_EQ(ungzip(*g, n + 1), in);
    if (n >= 300) {
      EXPECT_LT(z->size(), n / 2);
    }
    EXPECT_LE(zstd_frame_window(*z).value_or(~0ull), kZstdMaxWindow);
  }
}

TEST(Codec, FrameHeaders) {
  // Magic, a descriptor with no single-segment flag, and a window byte: exponent 14 -> 16 MiB.
  const std::string wide("\x28\xb5\x2f\xfd\x00\x70", 6);
  EXPECT_EQ(zstd_frame_window(wide), std::uint64_t{16} << 20);
  const std::string skippable("\x50\x2a\x4d\x18\x00\x00\x00\x00", 8);
  EXPECT_EQ(zstd_frame_window(skippable), 0u);
  EXPECT_EQ(zstd_frame_window("not zstd at all, not at all"), std::nullopt);
  EXPECT_EQ(zstd_frame_window(std::string("\x28\xb5\x2f", 3)), std::nullopt);  // cut short
}

}  // namespace
}  // namespace weft::http
