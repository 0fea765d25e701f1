// UTF-8 well-formedness, byte by byte: for escaping text that may not be UTF-8 at all
// (file names, request fields) into HTML, JSON and log lines. Hand-written: a dozen lines of
// RFC 3629's table, where a library (ICU, iconv) would convert whole strings.
#pragma once

#include <cstddef>
#include <string_view>

namespace weft::http {

/// Returns the length of the well-formed UTF-8 sequence at the start of `s` (1 for ASCII), or
/// 0 when there is none: RFC 3629's table, so no overlong forms, no surrogates and nothing
/// above U+10FFFF.
inline std::size_t utf8_sequence_length(std::string_view s) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned c = byte(0);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0/C1 (overlong), F5..FF
  }
  if (s.size() < n || byte(1) < lo || byte(1) > hi) return 0;
  for (std::size_t i = 2; i < n; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
  }
  return n;
}

}  // namespace weft::http
