// weft::http Accept-Encoding (RFC 9110 §12.5.3): how much a client wants each content coding
// weft can send (precompressed, server.precompressed, or compressed on the fly,
// [compression]): zstd, br and gzip, and whether it refuses identity.
//
// The field is a list of codings, each with an optional weight ("br;q=0.8, gzip"), on one or
// more lines. A coding listed with q=0 is refused; `*` stands for every coding not listed;
// "x-gzip" is gzip (§8.4.1.3); codings and the "q" are compared without case. A coding that
// is neither listed nor covered by `*` is not acceptable (but not refused: that takes an
// explicit q=0, which server.precompressed = "always" obeys), and so is every coding when the
// field is absent or empty: RFC 9110 lets a server send any coding to a client that sends no
// Accept-Encoding, but like NGINX and H2O weft sends a compressed file only to one that asks.
// A list element that does not parse (a bad weight, a stray character) is skipped; the
// others still count. When a coding is listed twice, its first listing counts. Identity is
// acceptable unless refused: "identity;q=0", or "*;q=0" without an entry for identity.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include "server/http/request.hpp"

namespace weft::http {

/// A content coding weft sends: precompressed or compressed on the fly.
enum class ContentCoding : std::uint8_t { zstd, br, gzip };
inline constexpr std::size_t kContentCodings = 3;

/// Returns the coding's name as Content-Encoding says it ("zstd", "br", "gzip").
std::string_view coding_name(ContentCoding c);

/// Returns the coding named `name` (exactly, lower case), or nullopt.
std::optional<ContentCoding> coding_named(std::string_view name);

/// The weights of the codings weft can send, in thousandths (1000 is q=1); 0: not acceptable.
struct CodingWeights {
  std::uint16_t br = 0;
  std::uint16_t gzip = 0;
  bool gzip_refused = false;  // gzip got an explicit q=0 (itself, or a `*` that covers it)
  std::uint16_t zstd = 0;
  bool identity_refused = false;  // "identity;q=0", or "*;q=0" with no entry for identity

  /// Returns the weight of `c`.
  std::uint16_t weight(ContentCoding c) const {
    return c == ContentCoding::zstd ? zstd : c == ContentCoding::br ? br : gzip;
  }
};

/// The codings a client accepts, best first (at most one of each).
struct RankedCodings {
  std::array<ContentCoding, kContentCodings> codings{};
  std::size_t count = 0;
};

/// Returns the codings of `server_order` that `w` accepts (weight above 0), the higher weight
/// first and, on a tie, the one earlier in `server_order`.
RankedCodings rank_codings(const CodingWeights& w, std::span<const ContentCoding> server_order);

/// Parses a qvalue (RFC 9110 §12.4.2: "0" ["." 0*3DIGIT] / "1" ["." 0*3"0"]) into
/// thousandths; returns nullopt when it is malformed. Accept (server/http/accept.hpp) shares it.
std::optional<std::uint16_t> parse_qvalue(std::string_view s);

/// Returns the weights `lines` (the Accept-Encoding lines of a request) give zstd, br and
/// gzip, and whether they refuse identity.
CodingWeights parse_accept_encoding(FieldLines lines);

}  // namespace weft::http
