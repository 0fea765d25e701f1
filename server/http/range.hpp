// weft::http Range: the byte ranges of a `Range` header against a file (RFC 9110 §14).
//
// parse_range() decides among four answers: `none` (serve the whole file with 200: no Range,
// a unit other than bytes, or a malformed header, which RFC 9110 §14.2 says to ignore),
// `single` (serve one slice with 206), `multi` (serve several slices with 206 as
// multipart/byteranges, RFC 9110 §14.6) and `unsatisfiable` (416 with `Content-Range: bytes
// */size`).
//
// Several ranges are coalesced (overlapping or adjacent ones merge) and sorted ascending,
// which RFC 9110 §14.2 allows. When one range remains it is served as `single`; when several
// remain they are served as `multi`, unless the ranges as requested add up to the file's size
// or more (overlaps that would send bytes twice, or a cover of the whole file): then the
// whole file with 200 is cheaper and says the same, as NGINX answers.
//
// Abuse guards: at most `max_ranges` range-specs are read (limits.max_ranges; more: the header
// is ignored, as NGINX's max_ranges does, and 0 ignores every Range), the parts live in a
// caller's fixed array (no allocation), and numbers saturate instead of overflowing, so
// "bytes=0-99999999999999999999" means "to the end".
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>

namespace weft::http {

/// The largest limits.max_ranges the configuration accepts (config.cpp), and so the capacity of the
/// array the parts of one Range are kept in. Picked: far above what real clients send (a
/// handful), far below a costly sort or a long multipart head.
inline constexpr std::size_t kMaxRangesLimit = 100;

/// One slice of a representation: `length` bytes from `offset`.
struct ByteRange {
  std::uint64_t offset;
  std::uint64_t length;
};

/// Room for the parts of one Range header (the caller's, so that parsing allocates nothing).
using RangeParts = std::array<ByteRange, kMaxRangesLimit>;

/// What to answer to a Range header.
struct RangeResult {
  enum class Kind : std::uint8_t {
    none,           // serve the whole representation: 200
    single,         // serve [offset, offset + length): 206
    multi,          // serve `parts` as multipart/byteranges: 206
    unsatisfiable,  // 416, with `Content-Range: bytes */size`
  };

  Kind kind = Kind::none;
  std::uint64_t offset = 0;  // single only
  std::uint64_t length = 0;  // single only; never 0
  std::uint64_t size = 0;    // the representation's size, for Content-Range
  // multi only: 2 to max_ranges parts, ascending, disjoint and not adjacent, each non-empty
  // and inside the representation, viewing the RangeParts given to parse_range.
  std::span<const ByteRange> parts;
};

/// Decides how to answer `header` (the Range field value, OWS-trimmed) for a representation
/// of `size` bytes, reading at most `max_ranges` range-specs (more, or 0: `none`) and using
/// `scratch` for the ranges (a `multi` result's parts view it). A zero-length representation
/// has no bytes to slice: int ranges are unsatisfiable and suffix ranges give `none`.
RangeResult parse_range(std::string_view header, std::uint64_t size, std::size_t max_ranges,
                        RangeParts& scratch);

/// Longest Content-Range value: "bytes " + 20 digits + "-" + 20 digits + "/" + 20 digits.
inline constexpr std::size_t kContentRangeMax = 68;

/// A buffer that holds one Content-Range value.
using ContentRangeBuffer = std::array<char, kContentRangeMax>;

/// Writes the Content-Range value of a single or unsatisfiable result ("bytes 0-99/1000",
/// "bytes */1000") into `out` and returns a view of it; returns "" for `none` and `multi`
/// (whose parts each have their own: format_part_range).
std::string_view format_content_range(const RangeResult& range, ContentRangeBuffer& out);

/// Writes the Content-Range value of `part` of a representation of `size` bytes
/// ("bytes 0-99/1000") into `out` and returns a view of it.
std::string_view format_part_range(ByteRange part, std::uint64_t size, ContentRangeBuffer& out);

}  // namespace weft::http
