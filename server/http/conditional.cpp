// ETags and precondition evaluation (RFC 9110 §8.8.3, §13.1, §13.2).
#include "server/http/conditional.hpp"

#include <algorithm>
#include <charconv>

#include "server/core/ascii.hpp"
#include "server/http/http_date.hpp"

namespace weft::http {
namespace {

// An entity-tag split into its weakness and its opaque-tag (quotes included).
struct Tag {
  bool weak = false;
  std::string_view opaque;
};

// etagc = %x21 / %x23-7E / obs-text (RFC 9110 §8.8.3).
bool is_etagc(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u == 0x21 || (u >= 0x23 && u != 0x7f);
}

// Takes one entity-tag from the front of `s`; nullopt when `s` does not start with one.
std::optional<Tag> take_tag(std::string_view& s) {
  Tag t;
  if (s.starts_with("W/")) {
    t.weak = true;
    s.remove_prefix(2);
  }
  if (s.empty() || s.front() != '"') return std::nullopt;
  std::size_t i = 1;
  while (i < s.size() && is_etagc(s[i])) ++i;
  if (i == s.size() || s[i] != '"') return std::nullopt;
  t.opaque = s.substr(0, i + 1);
  s.remove_prefix(i + 1);
  return t;
}

// The representation's own tag; nullopt when it has none (or an unparsable one).
std::optional<Tag> own_tag(std::string_view etag) {
  if (etag.empty()) return std::nullopt;
  auto t = take_tag(etag);
  return t && etag.empty() ? t : std::nullopt;
}

bool tags_match(const Tag& a, const Tag& b, bool strong) {
  if (strong && (a.weak || b.weak)) return false;
  return a.opaque == b.opaque;
}

// Whether any line of `lines` is "*" or lists a tag matching `own` (RFC 9110 §13.1.1-2).
bool list_matches(FieldLines lines, const std::optional<Tag>& own, bool strong) {
  for (std::string_view line : lines) {
    std::string_view s = ascii::trim_ows(line);
    if (s == "*") return true;  // "any current representation": a file always has one
    for (;;) {
      while (!s.empty() && (s.front() == ',' || ascii::is_ows(s.front()))) s.remove_prefix(1);
      if (s.empty()) break;
      const auto tag = take_tag(s);
      if (!tag) break;  // malformed: the rest of this line counts for nothing
      if (own && tags_match(*tag, *own, strong)) return true;
      while (!s.empty() && ascii::is_ows(s.front())) s.remove_prefix(1);
      if (!s.empty() && s.front() != ',') break;
    }
  }
  return false;
}

}  // namespace

ETag make_etag(std::int64_t mtime, std::int64_t mtime_ns, std::uint64_t size) {
  ETag tag;
  char* p = tag.bytes.data();
  char* const end = tag.bytes.data() + tag.bytes.size();
  *p++ = '"';
  p = std::to_chars(p, end, static_cast<std::uint64_t>(std::max<std::int64_t>(mtime, 0)), 16).ptr;
  if (mtime > 0 && mtime_ns > 0) {
    *p++ = '.';
    p = std::to_chars(p, end, static_cast<std::uint64_t>(mtime_ns), 16).ptr;
  }
  *p++ = '-';
  p = std::to_chars(p, end, size, 16).ptr;
  *p++ = '"';
  tag.size = static_cast<std::uint8_t>(p - tag.bytes.data());
  return tag;
}

Preconditions Preconditions::of(const Request& request) {
  return {request.if_match(), request.if_none_match(), request.if_modified_since(),
          request.if_unmodified_since()};
}

Precondition evaluate_preconditions(const Preconditions& p, const Validators& v, Method method,
                                    std::int64_t now) {
  const auto own = own_tag(v.etag);
  const bool get_or_head = method == Method::get || method == Method::head;

  // Step 1: If-Match, strong comparison; step 2 only without it: If-Unmodified-Since.
  if (!p.if_match.empty()) {
    if (!list_matches(p.if_match, own, /*strong=*/true)) return Precondition::failed;
  } else if (p.if_unmodified_since) {
    // An invalid date (or a list of them) means the field is ignored (§13.1.4).
    const auto date = parse_http_date(*p.if_unmodified_since, now);
    if (date && v.mtime > *date) return Precondition::failed;
  }

  // Step 3: If-None-Match, weak comparison; step 4 only without it: If-Modified-Since.
  if (!p.if_none_match.empty()) {
    if (list_matches(p.if_none_match, own, /*strong=*/false)) {
      return get_or_head ? Precondition::not_modified : Precondition::failed;
    }
  } else if (p.if_modified_since && get_or_head) {
    const auto date = parse_http_date(*p.if_modified_since, now);
    // A date later than the server's clock is invalid (§13.1.3), and so ignored.
    if (date && *date <= now && v.mtime <= *date) return Precondition::not_modified;
  }
  return Precondition::proceed;
}

bool if_range_allows(std::optional<std::string_view> if_range, const Validators& v,
                     std::int64_t now) {
  if (!if_range) return true;
  std::string_view s = ascii::trim_ows(*if_range);
  if (s.starts_with('"') || s.starts_with("W/")) {
    const auto own = own_tag(v.etag);
    const auto tag = take_tag(s);
    return own && tag && s.empty() && tags_match(*tag, *own, /*strong=*/true);
  }
  // An HTTP-date must be a strong validator (RFC 9110 §13.1.5, §8.8.2.2): the server must
  // know that the file did not change twice in that second. weft knows it when it looked at
  // the file after that second had ended (v.mtime_strong), and only then sends Last-Modified.
  const auto date = parse_http_date(s, now);
  return v.mtime_strong && date && *date == v.mtime;
}

}  // namespace weft::http
