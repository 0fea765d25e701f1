// weft::http codecs: one whole body compressed in one call with Debian's libraries (libzstd,
// libbrotli, zlib), for the compressed cache (compressed_cache.hpp), and the check of a
// precompressed zstd frame's window.
//
// zstd frames follow RFC 9659: a decoder may refuse a window above 8 MiB, so weft's frames
// never ask for more (the window log is capped at 23) and a precompressed f.zst whose first
// frame asks for more is not served. Brotli uses its default 4 MiB window; gzip is a gzip
// member (RFC 1952) with zlib's default window.
//
// Threads: any; each call makes its own library state (called on the compression workers).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/http/accept_encoding.hpp"

namespace weft::http {

/// The largest window a zstd frame weft sends may ask for (RFC 9659 §3).
inline constexpr std::uint64_t kZstdMaxWindow = std::uint64_t{8} << 20;

/// Returns `in` compressed with `coding` at `level` as one complete stream, or nullopt when
/// the library failed (out of memory).
std::optional<std::string> compress_body(ContentCoding coding, int level, std::string_view in);

/// Returns the window size the zstd frame at the start of `head` (its first 18 bytes or
/// more) asks for, 0 for a skippable frame, or nullopt when `head` is no zstd frame header.
std::optional<std::uint64_t> zstd_frame_window(std::string_view head);

}  // namespace weft::http
