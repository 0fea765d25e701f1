// weft::http conditional requests: the ETag of a file and the preconditions of RFC 9110 §13.
//
// A file's validators are its ETag, made like NGINX's ("<mtime hex>-<size hex>" in quotes,
// strong, with the nanoseconds of the mtime), and its modification time in seconds (the
// Last-Modified value, a strong validator only once its second is over). With them:
//   - evaluate_preconditions() applies If-Match, If-Unmodified-Since, If-None-Match and
//     If-Modified-Since in the order of RFC 9110 §13.2.2 and says proceed, 304 or 412;
//   - if_range_allows() says whether a Range still applies (§13.1.5), which the caller asks
//     only after the preconditions said proceed and only when a Range was sent.
// Comparisons follow §8.8.3.2: If-Match and If-Range compare strongly (a weak tag never
// matches), If-None-Match weakly (W/ ignored on both sides). A list element that cannot be
// parsed ends the list: the elements before it still count, nothing after it does.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "server/http/request.hpp"

namespace weft::http {

/// An entity-tag held by value: at most '"' + 16 hex + '.' + 8 hex + '-' + 16 hex + '"'.
struct ETag {
  std::array<char, 48> bytes{};
  std::uint8_t size = 0;

  /// Returns the tag as sent on the wire, quotes included.
  std::string_view view() const { return {bytes.data(), size}; }
};

/// Returns the strong ETag of a file modified at `mtime` (Unix seconds; a time before 1970
/// counts as 0) plus `mtime_ns` nanoseconds, with `size` bytes: NGINX's form
/// ("\"5f5e0ff0-1a2b\"") when mtime_ns is 0, else with the nanoseconds after a dot
/// ("\"5f5e0ff0.1dcd6500-1a2b\""), so that two versions in one second differ.
ETag make_etag(std::int64_t mtime, std::int64_t mtime_ns, std::uint64_t size);

/// What the server knows about the selected representation.
struct Validators {
  std::string_view etag;     // as on the wire ("\"...\"" or "W/\"...\""); "" when none
  std::int64_t mtime = 0;    // Last-Modified, Unix seconds
  bool mtime_strong = true;  // the file was seen after that second ended (see FileEntry)
};

/// The conditional header fields of a request.
struct Preconditions {
  FieldLines if_match;
  FieldLines if_none_match;
  std::optional<std::string_view> if_modified_since;
  std::optional<std::string_view> if_unmodified_since;

  /// Returns the conditional fields of `request`.
  static Preconditions of(const Request& request);
};

/// The outcome of the preconditions.
enum class Precondition : std::uint8_t {
  proceed,       // serve the request (then look at Range)
  not_modified,  // 304
  failed,        // 412
};

/// Evaluates `p` for a request with `method` against the representation's validators, in
/// RFC 9110 §13.2.2's order; `now` (Unix seconds) disqualifies an If-Modified-Since in the
/// future, which §13.1.3 calls invalid. If-Modified-Since applies to GET and HEAD only.
Precondition evaluate_preconditions(const Preconditions& p, const Validators& v, Method method,
                                    std::int64_t now);

/// Returns whether a Range applies given `if_range` (absent: yes; an entity-tag: only when it
/// strongly matches v.etag; an HTTP-date: only when v.mtime is strong and equals it exactly;
/// anything else:
/// no, and the whole representation is sent); `now` resolves two-digit years.
bool if_range_allows(std::optional<std::string_view> if_range, const Validators& v,
                     std::int64_t now);

}  // namespace weft::http
