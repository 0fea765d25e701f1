// weft::http::ascii: the character classes and case-insensitive comparisons of HTTP's grammar.
//
// HTTP field names, methods, schemes, range units and file extensions are ASCII and compared
// without regard to case; these helpers never consult the C locale (whose tolower() depends on
// setlocale() and may treat bytes above 0x7f as letters).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace weft::http::ascii {

/// Returns `c` with A-Z mapped to a-z and every other byte unchanged.
constexpr char to_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c;
}

/// Returns whether `c` is 0-9.
constexpr bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

/// Returns whether `c` is 0-9, a-f or A-F.
constexpr bool is_hex(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/// Returns the value of the hex digit `c` (which must satisfy is_hex).
constexpr int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  return to_lower(c) - 'a' + 10;
}

/// Returns whether `c` is a letter A-Z or a-z.
constexpr bool is_alpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" /
// "~" / DIGIT / ALPHA, as a table: field names are checked byte by byte on every request.
inline constexpr std::array<bool, 256> kTcharTable = [] {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c) t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) t[c] = t[c - 32] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~")) t[static_cast<unsigned char>(c)] = true;
  return t;
}();

/// Returns whether `c` is a tchar: the bytes of a token (RFC 9110 §5.6.2).
constexpr bool is_tchar(char c) {
  return kTcharTable[static_cast<unsigned char>(c)];
}

/// Returns whether `c` is optional whitespace: SP or HTAB (RFC 9110 §5.6.3).
constexpr bool is_ows(char c) {
  return c == ' ' || c == '\t';
}

/// Returns whether `a` and `b` are equal when ASCII letters are compared without case.
constexpr bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (to_lower(a[i]) != to_lower(b[i])) return false;
  }
  return true;
}

/// Returns whether `s` begins with `prefix`, comparing ASCII letters without case.
constexpr bool istarts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

/// Returns `s` without leading and trailing SP and HTAB.
constexpr std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

}  // namespace weft::http::ascii
