// weft::http multipart/byteranges (RFC 9110 §14.6): the framing of a 206 with several parts.
//
// The body of such a response is, for each part, a delimiter and a small head, then the
// part's bytes, and at the end a close delimiter:
//
//   "\r\n--B\r\nContent-Type: T\r\nContent-Range: bytes a-b/size\r\n\r\n" <bytes a..b>
//   ... one such piece per part ...
//   "\r\n--B--\r\n"
//
// (the body starts with CRLF: an empty preamble, as RFC 2046 §5.1.1 allows and NGINX sends).
// The framing is text the writer sends between the file slices, which still go out through
// the zero-copy paths; its length is computed up front, by the same code that writes it, so
// the Content-Length is exact.
//
// The boundary: RFC 2046 §5.1.1 only asks that it not occur in the parts. It is 20 hex digits
// (80 bits) from getrandom(2), new for every response, so the chance that a part holds
// "\r\n--B" by accident is negligible, and nobody, not even the author of the file, can
// plant it in advance: it is not known before the response is made.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "server/http/range.hpp"
#include "server/http/response.hpp"

namespace weft::http {

/// Hex digits of a boundary.
inline constexpr std::size_t kBoundaryLength = 20;

/// Room for one boundary.
using Boundary = std::array<char, kBoundaryLength>;

/// The Content-Type value of a multipart/byteranges response, up to its boundary.
inline constexpr std::string_view kMultipartType = "multipart/byteranges; boundary=";

/// Writes a fresh random boundary into `out` and returns a view of it.
std::string_view make_boundary(Boundary& out);

/// Appends the delimiter and head of `part` of a representation of `size` bytes and
/// Content-Type `type` to `h`; returns false when it does not fit.
bool append_part_head(HeadBuffer& h, std::string_view boundary, std::string_view type,
                      ByteRange part, std::uint64_t size);

/// Appends the close delimiter that ends the body to `h`; returns false when it does not fit.
bool append_close_delimiter(HeadBuffer& h, std::string_view boundary);

/// Returns the exact body length of a multipart/byteranges response of `parts` (framing and
/// bytes), or nullopt when a part's head cannot fit a HeadBuffer (an absurdly long type).
std::optional<std::uint64_t> multipart_length(std::string_view boundary, std::string_view type,
                                              std::span<const ByteRange> parts, std::uint64_t size);

}  // namespace weft::http
