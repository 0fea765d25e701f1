// Range header parsing (RFC 9110 §14.1-14.2) without allocation: the ranges go into a
// fixed array on the stack, then are sorted and coalesced.
#include "server/range.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>

#include "server/ascii.hpp"

namespace weft::http {
namespace {

constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();

// Parses 1*DIGIT, saturating at 2^64-1; nullopt when `s` is empty or has a non-digit.
std::optional<std::uint64_t> parse_digits(std::string_view s) {
  if (s.empty()) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    if (!ascii::is_digit(c)) return std::nullopt;
    const auto d = static_cast<std::uint64_t>(c - '0');
    v = v > (kSaturated - d) / 10 ? kSaturated : v * 10 + d;
  }
  return v;
}

struct Span {
  std::uint64_t begin;
  std::uint64_t end;  // exclusive
};

}  // namespace

RangeResult parse_range(std::string_view header, std::uint64_t size) {
  constexpr std::string_view kUnit = "bytes=";
  RangeResult result;
  result.size = size;
  if (!ascii::istarts_with(header, kUnit)) return result;  // no Range, or another unit
  std::string_view set = header.substr(kUnit.size());

  std::array<Span, kMaxRanges> spans;
  std::size_t nspans = 0;
  std::size_t nspecs = 0;
  bool suffix_on_empty = false;

  // range-set = 1#range-spec; the #rule allows empty list elements, which are skipped.
  while (!set.empty()) {
    const std::size_t comma = set.find(',');
    const std::string_view spec = ascii::trim_ows(set.substr(0, comma));
    set = comma == std::string_view::npos ? std::string_view{} : set.substr(comma + 1);
    if (spec.empty()) continue;
    if (++nspecs > kMaxRanges) return result;

    const std::size_t dash = spec.find('-');
    if (dash == std::string_view::npos) return result;
    if (dash == 0) {
      // suffix-range: the last N bytes.
      const auto n = parse_digits(spec.substr(1));
      if (!n) return result;
      if (*n == 0) continue;  // unsatisfiable
      if (size == 0) {
        suffix_on_empty = true;
        continue;
      }
      const std::uint64_t len = std::min(*n, size);
      spans[nspans++] = {size - len, size};
      continue;
    }
    // int-range: first-pos "-" [ last-pos ].
    const auto first = parse_digits(spec.substr(0, dash));
    if (!first) return result;
    std::uint64_t end = size;
    if (dash + 1 < spec.size()) {
      const auto last = parse_digits(spec.substr(dash + 1));
      if (!last || *last < *first) return result;
      end = *last >= size ? size : *last + 1;
    }
    if (*first >= size) continue;  // unsatisfiable
    spans[nspans++] = {*first, end};
  }

  if (nspecs == 0) return result;  // "bytes=" with no range-spec: malformed
  if (nspans == 0) {
    if (!suffix_on_empty) result.kind = RangeResult::Kind::unsatisfiable;
    return result;
  }

  std::sort(spans.begin(), spans.begin() + static_cast<std::ptrdiff_t>(nspans),
            [](const Span& a, const Span& b) { return a.begin < b.begin; });
  std::size_t merged = 0;
  for (std::size_t i = 1; i < nspans; ++i) {
    if (spans[i].begin <= spans[merged].end) {  // overlapping or adjacent
      spans[merged].end = std::max(spans[merged].end, spans[i].end);
    } else {
      spans[++merged] = spans[i];
    }
  }
  if (merged != 0) return result;  // several disjoint ranges: whole file (no multipart)

  result.kind = RangeResult::Kind::single;
  result.offset = spans[0].begin;
  result.length = spans[0].end - spans[0].begin;
  return result;
}

std::string_view format_content_range(const RangeResult& range, ContentRangeBuffer& out) {
  char* p = out.data();
  char* const end = out.data() + out.size();
  auto put = [&](std::string_view s) { p = std::copy(s.begin(), s.end(), p); };
  auto num = [&](std::uint64_t v) { p = std::to_chars(p, end, v).ptr; };

  switch (range.kind) {
    case RangeResult::Kind::none:
      return {};
    case RangeResult::Kind::single:
      put("bytes ");
      num(range.offset);
      put("-");
      num(range.offset + range.length - 1);
      break;
    case RangeResult::Kind::unsatisfiable:
      put("bytes *");
      break;
  }
  put("/");
  num(range.size);
  return {out.data(), static_cast<std::size_t>(p - out.data())};
}

}  // namespace weft::http
