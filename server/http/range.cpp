// Range header parsing (RFC 9110 §14.1-14.2) without allocation: the ranges go into the
// caller's fixed array, then are sorted and coalesced in place.
#include "server/http/range.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>

#include "server/core/ascii.hpp"

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

// The satisfiable ranges of a range-set, as requested (unsorted, possibly overlapping).
struct Specs {
  bool ignored = false;          // malformed, or more range-specs than allowed
  std::size_t count = 0;         // range-specs read (satisfiable or not)
  std::size_t satisfiable = 0;   // ranges written to the scratch
  std::uint64_t requested = 0;   // their lengths added up, saturating
  bool suffix_on_empty = false;  // a suffix range of an empty representation
};

// Reads the range-specs of `set` (after "bytes=") into `out`: each satisfiable one clamped
// to the representation. `ignored` when one is malformed or there are more than `max`.
Specs read_specs(std::string_view set, std::uint64_t size, std::size_t max, RangeParts& out) {
  Specs s;
  auto add = [&](std::uint64_t begin, std::uint64_t end) {
    out[s.satisfiable++] = {begin, end - begin};
    s.requested = end - begin > kSaturated - s.requested ? kSaturated : s.requested + end - begin;
  };
  auto ignore = [&] {
    s.ignored = true;
    return s;
  };
  // range-set = 1#range-spec; the #rule allows empty list elements, which are skipped.
  while (!set.empty()) {
    const std::size_t comma = set.find(',');
    const std::string_view spec = ascii::trim_ows(set.substr(0, comma));
    set = comma == std::string_view::npos ? std::string_view{} : set.substr(comma + 1);
    if (spec.empty()) continue;
    const std::size_t dash = spec.find('-');
    if (++s.count > max || dash == std::string_view::npos) return ignore();
    if (dash == 0) {
      // suffix-range: the last N bytes.
      const auto n = parse_digits(spec.substr(1));
      if (!n) return ignore();
      if (*n == 0) continue;  // unsatisfiable
      if (size == 0) {
        s.suffix_on_empty = true;
        continue;
      }
      add(size - std::min(*n, size), size);
      continue;
    }
    // int-range: first-pos "-" [ last-pos ].
    const auto first = parse_digits(spec.substr(0, dash));
    if (!first) return ignore();
    std::uint64_t end = size;
    if (dash + 1 < spec.size()) {
      const auto last = parse_digits(spec.substr(dash + 1));
      if (!last || *last < *first) return ignore();
      end = *last >= size ? size : *last + 1;
    }
    if (*first >= size) continue;  // unsatisfiable
    add(*first, end);
  }
  if (s.count == 0) return ignore();  // "bytes=" with no range-spec: malformed
  return s;
}

// Sorts parts[0, n) and merges overlapping or adjacent ones; returns how many remain.
std::size_t coalesce(RangeParts& parts, std::size_t n) {
  std::sort(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(n),
            [](const ByteRange& a, const ByteRange& b) { return a.offset < b.offset; });
  std::size_t merged = 0;
  for (std::size_t i = 1; i < n; ++i) {
    ByteRange& last = parts[merged];
    const std::uint64_t last_end = last.offset + last.length;
    if (parts[i].offset <= last_end) {  // overlapping or adjacent
      last.length = std::max(last_end, parts[i].offset + parts[i].length) - last.offset;
    } else {
      parts[++merged] = parts[i];
    }
  }
  return merged + 1;
}

}  // namespace

RangeResult parse_range(std::string_view header, std::uint64_t size, std::size_t max_ranges,
                        RangeParts& scratch) {
  constexpr std::string_view kUnit = "bytes=";
  RangeResult result;
  result.size = size;
  if (!ascii::istarts_with(header, kUnit)) return result;  // no Range, or another unit
  const Specs specs =
      read_specs(header.substr(kUnit.size()), size, std::min(max_ranges, kMaxRangesLimit), scratch);
  if (specs.ignored) return result;
  if (specs.satisfiable == 0) {
    if (!specs.suffix_on_empty) result.kind = RangeResult::Kind::unsatisfiable;
    return result;
  }
  const std::size_t n = coalesce(scratch, specs.satisfiable);
  if (n == 1) {
    result.kind = RangeResult::Kind::single;
    result.offset = scratch[0].offset;
    result.length = scratch[0].length;
    return result;
  }
  // Several parts. Asked for with overlaps, or covering the file: the whole file instead.
  if (specs.requested >= size) return result;
  result.kind = RangeResult::Kind::multi;
  result.parts = {scratch.data(), n};
  return result;
}

std::string_view format_content_range(const RangeResult& range, ContentRangeBuffer& out) {
  char* p = out.data();
  char* const end = out.data() + out.size();
  auto put = [&](std::string_view s) { p = std::copy(s.begin(), s.end(), p); };
  auto num = [&](std::uint64_t v) { p = std::to_chars(p, end, v).ptr; };

  switch (range.kind) {
    case RangeResult::Kind::none:
    case RangeResult::Kind::multi:
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

std::string_view format_part_range(ByteRange part, std::uint64_t size, ContentRangeBuffer& out) {
  RangeResult single;
  single.kind = RangeResult::Kind::single;
  single.offset = part.offset;
  single.length = part.length;
  single.size = size;
  return format_content_range(single, out);
}

}  // namespace weft::http
