// Accept parsing without allocation: one pass over each line's list elements.
#include "server/http/accept.hpp"

#include <optional>

#include "server/core/ascii.hpp"
#include "server/http/accept_encoding.hpp"

namespace weft::http {
namespace {

// One list element: a media range and its weight.
struct MediaRange {
  std::string_view type;
  std::string_view subtype;
  std::uint16_t weight = 1000;
};

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!ascii::is_tchar(c)) return false;
  }
  return true;
}

// Parses one element; nullopt when it does not parse.
std::optional<MediaRange> parse_range(std::string_view e) {
  MediaRange out;
  const std::size_t semi = e.find(';');
  const std::string_view range = ascii::trim_ows(e.substr(0, semi));
  const std::size_t slash = range.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  out.type = range.substr(0, slash);
  out.subtype = range.substr(slash + 1);
  if (!is_token(out.type) || !is_token(out.subtype)) return std::nullopt;
  if (out.type == "*" && out.subtype != "*") return std::nullopt;  // "*/json"
  // parameters, then weight = OWS ";" OWS "q=" qvalue (what follows the weight is
  // accept-ext, ignored like the parameters).
  std::string_view params = semi == std::string_view::npos ? std::string_view{} : e.substr(semi);
  while (!params.empty()) {
    params.remove_prefix(1);  // the ';'
    const std::size_t next = params.find(';');
    const std::string_view p = ascii::trim_ows(params.substr(0, next));
    params = next == std::string_view::npos ? std::string_view{} : params.substr(next);
    if (p.size() >= 2 && ascii::to_lower(p[0]) == 'q' && p[1] == '=') {
      const auto q = parse_qvalue(p.substr(2));
      if (!q) return std::nullopt;
      out.weight = *q;
      break;
    }
  }
  return out;
}

// How specifically `r` matches type/subtype: 0 not at all, 1 "*/*", 2 "type/*", 3 exactly.
int specificity(const MediaRange& r, std::string_view type, std::string_view subtype) {
  if (r.type == "*") return 1;
  if (!ascii::iequals(r.type, type)) return 0;
  if (r.subtype == "*") return 2;
  return ascii::iequals(r.subtype, subtype) ? 3 : 0;
}

}  // namespace

std::uint16_t accept_weight(std::span<const Header> headers, std::string_view type) {
  const std::size_t slash = type.find('/');
  const std::string_view main = type.substr(0, slash);
  const std::string_view sub = slash == std::string_view::npos ? "" : type.substr(slash + 1);
  bool any = false;  // an element parsed
  int best = 0;
  std::uint16_t weight = 0;
  for (const Header& h : headers) {
    if (!ascii::iequals(h.name, "Accept")) continue;
    std::string_view line = h.value;
    while (!line.empty()) {
      const std::size_t comma = line.find(',');
      const std::string_view element = line.substr(0, comma);
      line = comma == std::string_view::npos ? std::string_view{} : line.substr(comma + 1);
      const auto r = parse_range(element);
      if (!r) continue;
      any = true;
      const int s = specificity(*r, main, sub);
      if (s > best) {
        best = s;
        weight = r->weight;
      }
    }
  }
  return any ? weight : 1000;
}

}  // namespace weft::http
