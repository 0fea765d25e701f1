// Accept-Encoding parsing without allocation: one pass over each line's list elements.
#include "server/http/accept_encoding.hpp"

#include <optional>
#include <string_view>

#include "server/core/ascii.hpp"

namespace weft::http {
namespace {

// One list element: a coding and its weight; nullopt when it does not parse.
struct Element {
  std::string_view coding;
  std::uint16_t weight = 1000;
};

std::optional<Element> parse_element(std::string_view e) {
  Element out;
  const std::size_t semi = e.find(';');
  out.coding = ascii::trim_ows(e.substr(0, semi));
  if (out.coding.empty()) return std::nullopt;
  for (char c : out.coding) {
    if (!ascii::is_tchar(c)) return std::nullopt;
  }
  // weight = OWS ";" OWS "q=" qvalue; other parameters are not defined for this field, and
  // are skipped rather than refused, as other servers do.
  std::string_view params = semi == std::string_view::npos ? std::string_view{} : e.substr(semi);
  while (!params.empty()) {
    params.remove_prefix(1);  // the ';'
    const std::size_t next = params.find(';');
    const std::string_view p = ascii::trim_ows(params.substr(0, next));
    params = next == std::string_view::npos ? std::string_view{} : params.substr(next);
    const bool is_weight = !p.empty() && ascii::to_lower(p[0]) == 'q' &&
                           (p.size() == 1 || p[1] == '=' || ascii::is_ows(p[1]));
    if (is_weight) {
      // "q = 0.5" has whitespace where the grammar allows none: not a weight to trust.
      if (p.size() < 2 || p[1] != '=') return std::nullopt;
      const auto q = parse_qvalue(p.substr(2));
      if (!q) return std::nullopt;
      out.weight = *q;
    }
  }
  return out;
}

}  // namespace

std::optional<std::uint16_t> parse_qvalue(std::string_view s) {
  if (s.empty() || (s[0] != '0' && s[0] != '1')) return std::nullopt;
  unsigned v = static_cast<unsigned>(s[0] - '0') * 1000;
  if (s.size() == 1) return static_cast<std::uint16_t>(v);
  if (s[1] != '.' || s.size() > 5) return std::nullopt;
  unsigned scale = 100;
  for (char c : s.substr(2)) {
    if (!ascii::is_digit(c)) return std::nullopt;
    v += static_cast<unsigned>(c - '0') * scale;
    scale /= 10;
  }
  if (v > 1000) return std::nullopt;  // "1.5"
  return static_cast<std::uint16_t>(v);
}

std::string_view coding_name(ContentCoding c) {
  switch (c) {
    case ContentCoding::zstd:
      return "zstd";
    case ContentCoding::br:
      return "br";
    case ContentCoding::gzip:
      return "gzip";
  }
  return "";
}

std::optional<ContentCoding> coding_named(std::string_view name) {
  for (auto c : {ContentCoding::zstd, ContentCoding::br, ContentCoding::gzip}) {
    if (coding_name(c) == name) return c;
  }
  return std::nullopt;
}

RankedCodings rank_codings(const CodingWeights& w, std::span<const ContentCoding> server_order) {
  RankedCodings out;
  for (ContentCoding c : server_order) {
    if (w.weight(c) == 0 || out.count == kContentCodings) continue;
    // Insertion after every coding of at least the same weight: ties keep the server's order.
    std::size_t at = out.count;
    while (at > 0 && w.weight(out.codings[at - 1]) < w.weight(c)) {
      out.codings[at] = out.codings[at - 1];
      --at;
    }
    out.codings[at] = c;
    ++out.count;
  }
  return out;
}

CodingWeights parse_accept_encoding(FieldLines lines) {
  // -1: not listed (yet).
  int br = -1, gzip = -1, zstd = -1, identity = -1, star = -1;
  for (std::string_view line : lines) {
    while (!line.empty()) {
      const std::size_t comma = line.find(',');
      const std::string_view element = line.substr(0, comma);
      line = comma == std::string_view::npos ? std::string_view{} : line.substr(comma + 1);
      const auto e = parse_element(element);
      if (!e) continue;  // an empty list element, or one that does not parse
      int* slot = ascii::iequals(e->coding, "br") ? &br : e->coding == "*" ? &star : nullptr;
      if (ascii::iequals(e->coding, "gzip") || ascii::iequals(e->coding, "x-gzip")) slot = &gzip;
      if (ascii::iequals(e->coding, "zstd")) slot = &zstd;
      if (ascii::iequals(e->coding, "identity")) slot = &identity;
      if (slot && *slot < 0) *slot = e->weight;
    }
  }
  auto weight = [star](int listed) {
    return static_cast<std::uint16_t>(listed >= 0 ? listed : star >= 0 ? star : 0);
  };
  // A weight of 0 that the client gave (gzip's own, or the `*` that stands for it) refuses
  // gzip; one that is 0 because nothing named it only leaves it out.
  const bool gzip_refused = gzip == 0 || (gzip < 0 && star == 0);
  const bool identity_refused = identity == 0 || (identity < 0 && star == 0);
  return {weight(br), weight(gzip), gzip_refused, weight(zstd), identity_refused};
}

}  // namespace weft::http
