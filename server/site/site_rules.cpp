// Site rules: the checks the configuration parser applies to [[headers]] and [[redirects]],
// their compilation, and matching.
#include "server/site/site_rules.hpp"

#include <algorithm>

#include <fmt/core.h>

#include "server/core/ascii.hpp"
#include "server/http/path.hpp"

namespace weft::http {

namespace {

// A byte that may not appear in a field value (RFC 9110 §5.5): CR, LF and NUL break the
// message's framing; the other controls but HTAB are invalid.
constexpr bool is_bad_value_byte(unsigned char c) {
  return (c < 0x20 && c != '\t') || c == 0x7f;
}

// Whether destination[i] starts a capture reference "$1" .. "$9"; sets `n` to its number.
bool capture_at(std::string_view destination, std::size_t i, std::size_t& n) {
  if (destination[i] != '$' || i + 1 == destination.size()) return false;
  const char d = destination[i + 1];
  if (d < '1' || d > '9') return false;
  n = static_cast<std::size_t>(d - '0');
  return true;
}

// Compiles a glob the parser already accepted.
Glob compile_checked(const std::string& source) {
  std::string error;
  auto glob = Glob::compile(source, error);
  if (!glob) throw ConfigError(fmt::format("rule source \"{}\": {}", source, error));
  return std::move(*glob);
}

// Where the path of `destination` begins: after "scheme://authority" or "//authority" (at
// the first '/', '?' or '#' after it), 0 for a path or relative reference, and the end for a
// scheme without an authority ("mailto:", "https:x"), where a capture could make one (WHATWG
// URL parsers read "https:/evil.com" from an http: page as https://evil.com/).
std::size_t redirect_path_start(std::string_view destination) {
  std::size_t authority = std::string_view::npos;
  if (destination.starts_with("//")) {
    authority = 2;
  } else if (const std::size_t k = destination.find_first_of(":/?#");
             k != std::string_view::npos && destination[k] == ':') {
    if (destination.substr(k + 1, 2) != "//") return destination.size();
    authority = k + 3;
  }
  if (authority == std::string_view::npos) return 0;
  return std::min(destination.find_first_of("/?#", authority), destination.size());
}

}  // namespace

std::string check_rule_field_name(std::string_view name) {
  if (name.empty()) return "has a field with an empty name";
  for (char c : name) {
    if (!ascii::is_tchar(c)) {
      return fmt::format(
          "field name {:?} is not a token (RFC 9110 §5.1: letters, digits and "
          "!#$%&'*+-.^_`|~)",
          name);
    }
  }
  for (std::string_view owned : kServerOwnedFields) {
    if (ascii::iequals(name, owned)) {
      return fmt::format(
          "field '{}' cannot be set by a rule: weft writes it (or it frames the "
          "message)",
          name);
    }
  }
  return {};
}

std::string check_rule_field_value(std::string_view value) {
  for (unsigned char c : value) {
    if (is_bad_value_byte(c)) {
      return fmt::format("value {:?} holds a control byte (CR, LF, NUL ...)", value);
    }
  }
  if (!value.empty() && (value.front() == ' ' || value.front() == '\t' || value.back() == ' ' ||
                         value.back() == '\t')) {
    return fmt::format("value {:?} must not start or end with white space", value);
  }
  return {};
}

std::string check_redirect_destination(std::string_view destination, std::size_t captures) {
  if (destination.empty()) return "must not be empty";
  const std::size_t path_at = redirect_path_start(destination);
  for (std::size_t i = 0; i < destination.size(); ++i) {
    const auto c = static_cast<unsigned char>(destination[i]);
    if (c <= 0x20 || c >= 0x7f) {
      return fmt::format(
          "{:?} must be a URI: no space, control or non-ASCII byte (percent-encode "
          "them)",
          destination);
    }
    std::size_t n = 0;
    if (capture_at(destination, i, n) && n > captures) {
      return fmt::format("\"{}\" uses ${} but its source has {} capture(s)", destination, n,
                         captures);
    }
    if (i < path_at && capture_at(destination, i, n)) {
      return fmt::format(
          "\"{}\" puts ${} before the path: the client's path would choose the scheme or "
          "host (\"/blog.evil.com\" after \"https://blog.example.com\"); put captures "
          "after the first '/' that follows the host",
          destination, n);
    }
  }
  return {};
}

HeaderRules::HeaderRules(const std::vector<HeaderRuleConfig>& rules) {
  for (const auto& r : rules) {
    Rule rule{compile_checked(r.source), {}, r.always};
    for (const auto& [name, value] : r.set) {
      if (!check_rule_field_name(name).empty() || !check_rule_field_value(value).empty()) {
        throw ConfigError(fmt::format("rule {}: field '{}' refused", r.source, name));
      }
      rule.fields.append(name).append(": ").append(value).append("\r\n");
    }
    rules_.push_back(std::move(rule));
  }
}

void HeaderRules::append_matching(std::string_view path, int status, HeadBuffer& h) const {
  const bool covered = headers_apply_to(status);
  for (const Rule& r : rules_) {
    if ((covered || r.always) && r.source.match(path)) h.append(r.fields);
  }
}

RedirectRules::RedirectRules(const std::vector<RedirectRuleConfig>& rules) {
  for (const auto& r : rules) {
    Glob source = compile_checked(r.source);
    if (!is_redirect_status(r.status) ||
        !check_redirect_destination(r.destination, source.captures()).empty()) {
      throw ConfigError(fmt::format("redirect {}: destination or status refused", r.source));
    }
    rules_.push_back({std::move(source), r.destination, r.status});
  }
}

int RedirectRules::find(std::string_view path, std::string& out) const {
  GlobCaptures captures;
  for (const Rule& r : rules_) {
    if (!r.source.match(path, &captures)) continue;
    out.assign("Location: ");
    const std::string_view d = r.destination;
    for (std::size_t i = 0; i < d.size(); ++i) {
      std::size_t n = 0;
      if (capture_at(d, i, n)) {
        // Decoded client bytes: encoded again, so that none can end the field or the URI.
        std::string_view capture = captures.get(path, n);
        // "/$1" with a capture "/evil.com" would make "//evil.com", another host: one slash.
        if (capture.starts_with('/') && out.back() == '/') capture.remove_prefix(1);
        append_encoded_path(capture, out);
        ++i;
      } else {
        out.push_back(d[i]);
      }
    }
    out.append("\r\n");
    return r.status;
  }
  return 0;
}

}  // namespace weft::http
