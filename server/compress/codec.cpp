// Each codec in one call: the output bound is known before compressing, so each writes into
// one buffer of that bound and shrinks it to what it wrote.
#include "server/compress/codec.hpp"

#include <memory>

#include <brotli/encode.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader
#include <zstd.h>

namespace weft::http {
namespace {

// RFC 9659's 8 MiB: the window log zstd may use at most.
constexpr int kZstdMaxWindowLog = 23;

std::optional<std::string> zstd(int level, std::string_view in) {
  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!cctx) return std::nullopt;
  // With the size known (ZSTD_compress2 pledges it), the window shrinks to the input; the
  // cap matters for inputs above 8 MiB, whose level-19 window would be larger.
  if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_windowLog, kZstdMaxWindowLog)) ||
      ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1))) {
    return std::nullopt;
  }
  std::string out(ZSTD_compressBound(in.size()), '\0');
  const std::size_t n = ZSTD_compress2(cctx.get(), out.data(), out.size(), in.data(), in.size());
  if (ZSTD_isError(n)) return std::nullopt;
  out.resize(n);
  return out;
}

std::optional<std::string> brotli(int level, std::string_view in) {
  std::size_t n = BrotliEncoderMaxCompressedSize(in.size());
  if (n == 0) return std::nullopt;  // too large for the library's bound
  std::string out(n, '\0');
  if (!BrotliEncoderCompress(level, BROTLI_DEFAULT_WINDOW, BROTLI_MODE_GENERIC, in.size(),
                             reinterpret_cast<const uint8_t*>(in.data()), &n,
                             reinterpret_cast<uint8_t*>(out.data()))) {
    return std::nullopt;
  }
  out.resize(n);
  return out;
}

std::optional<std::string> gzip(int level, std::string_view in) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer around the deflate stream.
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return std::nullopt;
  }
  std::string out(deflateBound(&z, in.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&z, Z_FINISH);
  const std::size_t n = z.total_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) return std::nullopt;
  out.resize(n);
  return out;
}

}  // namespace

std::optional<std::string> compress_body(ContentCoding coding, int level, std::string_view in) {
  switch (coding) {
    case ContentCoding::zstd:
      return zstd(level, in);
    case ContentCoding::br:
      return brotli(level, in);
    case ContentCoding::gzip:
      // zlib counts in uInt: larger inputs are not ours to compress in one call.
      if (in.size() > 0xffffffffu) return std::nullopt;
      return gzip(level, in);
  }
  return std::nullopt;
}

std::optional<std::uint64_t> zstd_frame_window(std::string_view head) {
  ZSTD_frameHeader h{};
  if (ZSTD_getFrameHeader(&h, head.data(), head.size()) != 0) return std::nullopt;
  return h.frameType == ZSTD_skippableFrame ? 0 : h.windowSize;
}

}  // namespace weft::http
