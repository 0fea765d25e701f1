// weft::http site rules: a site's [[headers]] and [[redirects]], compiled once per
// configuration (when its generation's context is built) and matched per request without
// allocating.
//
// HeaderRules: every rule whose glob matches the request's normalised path adds its fields,
// in file order, to responses of the statuses NGINX's add_header covers (200, 201, 204, 206,
// 301, 302, 303, 304, 307 and 308: a year's Cache-Control must not stick to a 404), or to
// every response when the rule says `always = true` (NGINX's "always"). Each rule's fields are one
// prebuilt "Name: value\r\n..." text, so a match costs one append.
//
// RedirectRules: the first rule (file order) whose glob matches answers with its status and
// a Location made of its destination, where $1..$9 stand for the glob's captures,
// percent-encoded as a path (so no byte of the client's can end the field); any method gets
// it, as NGINX's `return` answers any method.
//
// Validation (check_*): what the configuration parser refuses, so that `weft -t` names the
// rule: a field name that is not a token, one the server writes itself or that frames the
// message (kServerOwnedFields), and a name or value with CR, LF, NUL or another control byte.
//
// Threads: immutable once built; any thread may match.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "server/core/config.hpp"
#include "server/http/response.hpp"
#include "server/site/glob.hpp"

namespace weft::http {

/// The fields a [[headers]] rule may not set: hop-by-hop and framing fields, which would
/// break the message (RFC 9110 §7.6.1, RFC 9112 §6), and the fields weft writes itself,
/// which a rule could only duplicate.
inline constexpr std::string_view kServerOwnedFields[] = {
    "Connection",       "Keep-Alive",
    "Proxy-Connection", "TE",
    "Trailer",          "Transfer-Encoding",
    "Upgrade",          "Content-Length",
    "Content-Range",    "Content-Type",
    "Content-Encoding", "Date",
    "Server",           "ETag",
    "Last-Modified",    "Location",
    "Accept-Ranges",    "Allow",
};

/// Most bytes the fields of one site's [[headers]] rules may add to a response head, all
/// rules together: HeadBuffer::kCapacity less room for the server's own fields and a
/// redirect's Location.
inline constexpr std::size_t kMaxRuleFieldBytes = 2048;

/// Returns why `name` cannot be a [[headers]] field name, or "" when it can.
std::string check_rule_field_name(std::string_view name);

/// Returns why `value` cannot be a [[headers]] field value, or "" when it can.
std::string check_rule_field_value(std::string_view value);

/// Returns why `destination` cannot be a redirect's destination for a glob with `captures`
/// captures, or "" when it can.
std::string check_redirect_destination(std::string_view destination, std::size_t captures);

/// Returns whether `status` is one a redirect may answer with (301, 302, 303, 307, 308).
constexpr bool is_redirect_status(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/// Returns whether NGINX's add_header (without "always") covers responses of `status`.
constexpr bool headers_apply_to(int status) {
  switch (status) {
    case 200:
    case 201:
    case 204:
    case 206:
    case 301:
    case 302:
    case 303:
    case 304:
    case 307:
    case 308:
      return true;
    default:
      return false;
  }
}

/// A site's [[headers]] rules, compiled.
class HeaderRules {
 public:
  /// Compiles `rules` (validated by the configuration parser; throws ConfigError if not).
  explicit HeaderRules(const std::vector<HeaderRuleConfig>& rules);
  HeaderRules() = default;

  /// Returns whether there is no rule (nothing to match).
  bool empty() const { return rules_.empty(); }

  /// Appends to `h` the fields of every rule that matches normalised `path` and covers
  /// `status`, in file order.
  void append_matching(std::string_view path, int status, HeadBuffer& h) const;

 private:
  struct Rule {
    Glob source;
    std::string fields;  // "Name: value\r\n" per field
    bool always = false;
  };
  std::vector<Rule> rules_;
};

/// A site's [[redirects]] rules, compiled.
class RedirectRules {
 public:
  /// Compiles `rules` (validated by the configuration parser; throws ConfigError if not).
  explicit RedirectRules(const std::vector<RedirectRuleConfig>& rules);
  RedirectRules() = default;

  /// Returns whether there is no rule.
  bool empty() const { return rules_.empty(); }

  /// Finds the first rule matching normalised `path`; writes "Location: ...\r\n" into `out`
  /// (cleared first; reuse one string so that only its first use allocates) and returns the
  /// rule's status, or returns 0 when none matches.
  int find(std::string_view path, std::string& out) const;

 private:
  struct Rule {
    Glob source;
    std::string destination;
    int status = 301;
  };
  std::vector<Rule> rules_;
};

}  // namespace weft::http
