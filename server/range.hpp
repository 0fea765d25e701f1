// weft::http Range: the byte ranges of a `Range` header against a file (RFC 9110 §14).
//
// parse_range() decides among three answers: `none` (serve the whole file with 200: no Range,
// a unit other than bytes, or a malformed header, which RFC 9110 §14.2 says to ignore),
// `single` (serve one slice with 206), and `unsatisfiable` (416 with `Content-Range: bytes
// */size`).
//
// Several ranges are coalesced (overlapping or adjacent ones merge). When one range remains
// it is served as `single`; when several remain weft answers `none`, the whole file with 200:
// weft does not send multipart/byteranges, which RFC 9110 allows (a server MAY ignore Range),
// and which spares the connection code a second body format that clients rarely ask for.
//
// Abuse guards: at most kMaxRanges range-specs are read (more: the header is ignored, as
// NGINX's max_ranges does), and numbers saturate instead of overflowing, so
// "bytes=0-99999999999999999999" means "to the end".
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace weft::http {

/// Most range-specs read from one Range header; a header with more is ignored (200).
/// Picked: far above what real clients send (a handful), far below a costly sort.
inline constexpr std::size_t kMaxRanges = 100;

/// What to answer to a Range header.
struct RangeResult {
  enum class Kind : std::uint8_t {
    none,           // serve the whole representation: 200
    single,         // serve [offset, offset + length): 206
    unsatisfiable,  // 416, with `Content-Range: bytes */size`
  };

  Kind kind = Kind::none;
  std::uint64_t offset = 0;  // single only
  std::uint64_t length = 0;  // single only; never 0
  std::uint64_t size = 0;    // the representation's size, for Content-Range
};

/// Decides how to answer `header` (the Range field value, OWS-trimmed) for a representation
/// of `size` bytes. A zero-length representation has no bytes to slice: int ranges are
/// unsatisfiable and suffix ranges give `none`.
RangeResult parse_range(std::string_view header, std::uint64_t size);

/// Longest Content-Range value: "bytes " + 20 digits + "-" + 20 digits + "/" + 20 digits.
inline constexpr std::size_t kContentRangeMax = 68;

/// A buffer that holds one Content-Range value.
using ContentRangeBuffer = std::array<char, kContentRangeMax>;

/// Writes the Content-Range value of a single or unsatisfiable result ("bytes 0-99/1000",
/// "bytes */1000") into `out` and returns a view of it; returns "" for `none`.
std::string_view format_content_range(const RangeResult& range, ContentRangeBuffer& out);

}  // namespace weft::http
