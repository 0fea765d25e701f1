// libFuzzer target: Range, If-Range, the conditional header fields and HTTP-dates, against a
// file whose size and mtime come from the input.
//
// Input: text lines (LF-separated, so a seed is readable and a field value can never hold
// what a parsed header cannot):
//   1: the file size, decimal (saturating; empty or not a number: 1000)
//   2: Range            3: If-Range
//   4: If-Match         5: If-None-Match
//   6: If-Modified-Since  7: If-Unmodified-Since
//   8: the file's mtime, decimal seconds (default 1577934245)
//   9: limits.max_ranges, decimal (default 16; above 100: 100); 0 and 1 are checked too
// Missing lines are absent fields.
//
// Invariants checked (a failure aborts, and libFuzzer saves the input):
//   - single: 0 < length and offset + length <= size; RangeResult.size is the file size;
//   - multi: 2 to max_ranges parts, ascending, disjoint and not adjacent, each non-empty and
//     inside the file, adding up to less than the file;
//   - Content-Range fits its buffer and reads back as the range it describes;
//   - the answer matches a straightforward reference model of RFC 9110 §14.1.2 (the union
//     of the satisfiable ranges: one span is `single`, several are `multi` unless the
//     ranges as requested add up to the size or more, none is `unsatisfiable`; more
//     range-specs than max_ranges are ignored);
//   - a parsed HTTP-date formats and parses back to the same second;
//   - the preconditions give the answers RFC 9110 §13.2.2 requires in the cases that are
//     easy to state: no field proceeds; If-None-Match: * is 304 for GET and 412 for others.
#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/http/conditional.hpp"
#include "server/http/http_date.hpp"
#include "server/http/range.hpp"
#include "server/http/request.hpp"

namespace {

using namespace weft::http;

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_range: invariant violated: %s\n", what);
  std::abort();
}

void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

std::uint64_t parse_u64(std::string_view s, std::uint64_t fallback) {
  if (s.empty()) return fallback;
  std::uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return fallback;
    const auto d = static_cast<std::uint64_t>(c - '0');
    v = v > (~std::uint64_t{0} - d) / 10 ? ~std::uint64_t{0} : v * 10 + d;
  }
  return v;
}

bool is_ows(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

// The reference model of parse_range: returns nullopt where the header is to be ignored
// (malformed, not bytes, too many specs), else the satisfiable spans, unmerged.
struct Model {
  bool ignored = false;
  bool suffix_on_empty = false;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;  // [begin, end)
};

std::optional<std::uint64_t> digits(std::string_view s) {
  if (s.empty()) return std::nullopt;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return parse_u64(s, 0);
}

Model model(std::string_view header, std::uint64_t size, std::size_t max_ranges) {
  Model m;
  if (header.size() < 6) {
    m.ignored = true;
    return m;
  }
  std::string unit(header.substr(0, 6));
  for (char& c : unit) c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  if (unit != "bytes=") {
    m.ignored = true;
    return m;
  }
  std::string_view set = header.substr(6);
  std::size_t specs = 0;
  while (true) {
    const std::size_t comma = set.find(',');
    const std::string_view spec = trim(set.substr(0, comma));
    if (!spec.empty()) {
      if (++specs > max_ranges) {
        m.ignored = true;
        return m;
      }
      const std::size_t dash = spec.find('-');
      if (dash == std::string_view::npos) {
        m.ignored = true;
        return m;
      }
      if (dash == 0) {
        const auto n = digits(spec.substr(1));
        if (!n) {
          m.ignored = true;
          return m;
        }
        if (*n > 0 && size == 0) m.suffix_on_empty = true;
        if (*n > 0 && size > 0) m.spans.push_back({size - std::min(*n, size), size});
      } else {
        const auto first = digits(spec.substr(0, dash));
        const std::string_view rest = spec.substr(dash + 1);
        const auto last = rest.empty() ? std::optional<std::uint64_t>{} : digits(rest);
        if (!first || (!rest.empty() && (!last || *last < *first))) {
          m.ignored = true;
          return m;
        }
        if (*first < size) {
          const std::uint64_t end = last && *last < size ? *last + 1 : size;
          m.spans.push_back({*first, end});
        }
      }
    }
    if (comma == std::string_view::npos) break;
    set.remove_prefix(comma + 1);
  }
  if (specs == 0) m.ignored = true;
  return m;
}

// The union of `spans` (sorted here), as [begin, end) pairs apart from each other.
std::vector<std::pair<std::uint64_t, std::uint64_t>> merge(
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const auto& [b, e] : spans) {
    if (!out.empty() && b <= out.back().second) {
      out.back().second = std::max(out.back().second, e);
    } else {
      out.push_back({b, e});
    }
  }
  return out;
}

// What the model says parse_range must answer, with the spans of a single or multi answer.
RangeResult::Kind expected(const Model& m, std::uint64_t size,
                           std::vector<std::pair<std::uint64_t, std::uint64_t>>& spans) {
  if (m.ignored) return RangeResult::Kind::none;
  if (m.spans.empty()) {
    return m.suffix_on_empty ? RangeResult::Kind::none : RangeResult::Kind::unsatisfiable;
  }
  spans = merge(m.spans);
  if (spans.size() == 1) return RangeResult::Kind::single;
  // Ranges as requested that add up to the size or more: the whole file (an overflowing
  // sum is more than any size; parse_range saturates instead).
  std::uint64_t requested = 0;
  bool overflow = false;
  for (const auto& [b, e] : m.spans)
    overflow |= __builtin_add_overflow(requested, e - b, &requested);
  return overflow || requested >= size ? RangeResult::Kind::none : RangeResult::Kind::multi;
}

void check_parts(const RangeResult& r, std::uint64_t size, std::size_t max_ranges,
                 const std::vector<std::pair<std::uint64_t, std::uint64_t>>& spans) {
  check(r.parts.size() >= 2 && r.parts.size() <= max_ranges, "multi: part count");
  check(r.parts.size() == spans.size(), "parse_range disagrees with the reference model (parts)");
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < r.parts.size(); ++i) {
    const ByteRange& p = r.parts[i];
    check(p.length > 0, "multi: an empty part");
    check(p.offset < size && p.length <= size - p.offset, "multi: a part outside the file");
    if (i > 0) {
      const ByteRange& q = r.parts[i - 1];
      check(p.offset > q.offset + q.length, "multi: parts not sorted, disjoint, apart");
    }
    check(p.offset == spans[i].first && p.offset + p.length == spans[i].second,
          "parse_range disagrees with the reference model (a part)");
    sum += p.length;
  }
  check(sum < size, "multi: the parts add up to the file");
  ContentRangeBuffer buf;
  check(format_content_range(r, buf).empty(), "a Content-Range for a multipart answer");
}

void check_range(std::string_view header, std::uint64_t size, std::size_t max_ranges) {
  RangeParts scratch;
  const RangeResult r = parse_range(header, size, max_ranges, scratch);
  check(r.size == size, "RangeResult.size differs from the file size");

  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  const RangeResult::Kind want = expected(model(header, size, max_ranges), size, spans);
  check(r.kind == want, "parse_range disagrees with the reference model (kind)");
  check(r.kind == RangeResult::Kind::multi || r.parts.empty(), "parts outside a multi answer");

  ContentRangeBuffer buf;
  const std::string_view cr = format_content_range(r, buf);
  check(cr.size() <= buf.size(), "Content-Range longer than its buffer");
  if (r.kind == RangeResult::Kind::single) {
    check(r.length > 0, "empty single range");
    check(r.offset < size && r.length <= size - r.offset, "single range outside the file");
    check(r.offset == spans[0].first && r.offset + r.length == spans[0].second,
          "parse_range disagrees with the reference model (span)");
    const std::string want_cr = "bytes " + std::to_string(r.offset) + "-" +
                                std::to_string(r.offset + r.length - 1) + "/" +
                                std::to_string(size);
    check(cr == want_cr, "Content-Range does not describe the range");
  } else if (r.kind == RangeResult::Kind::multi) {
    check_parts(r, size, max_ranges, spans);
  } else if (r.kind == RangeResult::Kind::unsatisfiable) {
    check(cr == "bytes */" + std::to_string(size), "unsatisfiable Content-Range");
  } else {
    check(cr.empty(), "Content-Range for a whole-file answer");
  }
}

void check_date(std::string_view text, std::int64_t now) {
  const auto t = parse_http_date(text, now);
  if (!t) return;
  // Years 0000-9999 format exactly; outside them format_http_date clamps.
  constexpr std::int64_t kMin = -62167219200;  // 0000-01-01T00:00:00Z
  constexpr std::int64_t kMax = 253402300799;  // 9999-12-31T23:59:59Z
  if (*t < kMin || *t > kMax) return;
  HttpDateBuffer buf;
  const std::string_view s = format_http_date(*t, buf);
  const auto back = parse_http_date(s, now);
  check(back && *back == *t, "an HTTP-date does not survive format and parse");
}

// Builds a one-field-per-line header table for Preconditions.
struct Fields {
  std::vector<Header> headers;
  void add(Field f, std::optional<std::string_view> v) {
    if (v) headers.push_back({"", *v, f});
  }
  FieldLines lines(Field f) const { return {headers, f}; }
};

void check_conditionals(const std::vector<std::optional<std::string_view>>& line,
                        std::uint64_t size, std::int64_t mtime) {
  const std::int64_t now = 1700000000;
  Fields f;
  f.add(Field::if_match, line[3]);
  f.add(Field::if_none_match, line[4]);
  Preconditions p{f.lines(Field::if_match), f.lines(Field::if_none_match), line[5], line[6]};

  const ETag tag = make_etag(mtime, 0, size);
  const std::string_view etag = tag.view();
  check(etag.size() >= 2 && etag.front() == '"' && etag.back() == '"', "malformed own ETag");
  for (const std::string_view own : {etag, std::string_view{}}) {
    const Validators v{own, mtime};
    for (const Method method : {Method::get, Method::head, Method::options, Method::other}) {
      const Precondition r = evaluate_preconditions(p, v, method, now);
      if (!line[3] && !line[4] && !line[5] && !line[6]) {
        check(r == Precondition::proceed, "a request without preconditions did not proceed");
      }
      if (!line[3] && !line[6] && line[4] && trim(*line[4]) == "*") {
        const bool gh = method == Method::get || method == Method::head;
        check(r == (gh ? Precondition::not_modified : Precondition::failed),
              "If-None-Match: * on an existing file");
      }
      if (line[3] && trim(*line[3]) == "*" && !line[4] && !line[5]) {
        check(r == Precondition::proceed, "If-Match: * on an existing file");
      }
    }
    const bool allows = if_range_allows(line[2], v, now);
    if (!line[2]) check(allows, "no If-Range must allow the range");
    if (line[2] && *line[2] == etag && !own.empty()) {
      check(allows, "If-Range with the file's own strong ETag");
    }
  }
  for (std::size_t i : {2u, 5u, 6u}) {
    if (line[i]) check_date(*line[i], now);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  std::vector<std::optional<std::string_view>> line(9);
  for (std::size_t i = 0; i < line.size() && !in.empty(); ++i) {
    const std::size_t nl = in.find('\n');
    line[i] = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view{} : in.substr(nl + 1);
  }
  const std::uint64_t file_size = parse_u64(line[0].value_or(""), 1000);
  const auto mtime = static_cast<std::int64_t>(parse_u64(line[7].value_or(""), 1577934245) >> 1);
  const std::size_t max_ranges = static_cast<std::size_t>(
      std::min<std::uint64_t>(parse_u64(line[8].value_or(""), 16), kMaxRangesLimit));
  if (line[1]) {
    // The connection passes Range values OWS-trimmed (the parser trims them).
    const std::string_view range = trim(*line[1]);
    for (std::size_t max : {max_ranges, std::size_t{0}, std::size_t{1}}) {
      check_range(range, file_size, max);
      // Small sizes hit the edges (empty file, one byte) whatever the first line says.
      for (std::uint64_t s : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{2}}) {
        check_range(range, s, max);
      }
    }
  }
  check_conditionals(line, file_size, mtime);
  return 0;
}
