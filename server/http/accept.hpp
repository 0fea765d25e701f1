// weft::http Accept (RFC 9110 §12.5.1): how much a client wants a media type, for the one
// answer weft has in two forms (a directory listing: HTML or JSON).
//
// The field is a list of media ranges ("type/subtype", "type/*" or "*/*"), each with
// optional parameters and an optional weight ("text/html;q=0.8"), on one or more lines. A
// type gets the weight of the most specific range that matches it (the type itself, then
// "type/*", then "*/*"); on a tie of specificity the first listed counts; none: 0. Types,
// subtypes and the "q" are compared without case; parameters other than q are ignored (a
// client that asks for "application/json; charset=utf-8" gets JSON). A list element that
// does not parse (no "/", a bad weight, a stray character) is skipped, and a field with no
// element that parses counts as absent: every type is then acceptable, at q=1.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "server/http/request.hpp"

namespace weft::http {

/// Returns the weight in thousandths (1000 is q=1; 0: not acceptable) that the Accept lines
/// among `headers` give the media type `type` ("application/json").
std::uint16_t accept_weight(std::span<const Header> headers, std::string_view type);

}  // namespace weft::http
