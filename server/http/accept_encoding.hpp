// weft::http Accept-Encoding (RFC 9110 §12.5.3): how much a client wants each content coding
// weft can send precompressed (server.precompressed): br and gzip.
//
// The field is a list of codings, each with an optional weight ("br;q=0.8, gzip"), on one or
// more lines. A coding listed with q=0 is refused; `*` stands for every coding not listed;
// "x-gzip" is gzip (§8.4.1.3); codings and the "q" are compared without case. A coding that
// is neither listed nor covered by `*` is not acceptable (but not refused: that takes an
// explicit q=0, which server.precompressed = "always" obeys), and so is every coding when the
// field is absent or empty: RFC 9110 lets a server send any coding to a client that sends no
// Accept-Encoding, but like NGINX and H2O weft sends a compressed file only to one that asks.
// A list element that does not parse (a bad weight, a stray character) is skipped; the
// others still count. When a coding is listed twice, its first listing counts.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "server/http/request.hpp"

namespace weft::http {

/// The weights of the codings weft can send, in thousandths (1000 is q=1); 0: not acceptable.
struct CodingWeights {
  std::uint16_t br = 0;
  std::uint16_t gzip = 0;
  bool gzip_refused = false;  // gzip got an explicit q=0 (itself, or a `*` that covers it)
};

/// Parses a qvalue (RFC 9110 §12.4.2: "0" ["." 0*3DIGIT] / "1" ["." 0*3"0"]) into
/// thousandths; returns nullopt when it is malformed. Accept (server/http/accept.hpp) shares it.
std::optional<std::uint16_t> parse_qvalue(std::string_view s);

/// Returns the weights `lines` (the Accept-Encoding lines of a request) give br and gzip.
CodingWeights parse_accept_encoding(FieldLines lines);

}  // namespace weft::http
