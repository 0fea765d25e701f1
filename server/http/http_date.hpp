// weft::http HTTP-date: formatting, parsing, and the shared cache of the Date header value.
//
// Times are Unix seconds (std::int64_t, UTC). Formatting writes the IMF-fixdate form
// ("Sun, 06 Nov 1994 08:49:37 GMT", always 29 bytes) into a caller buffer and never allocates;
// it does its own calendar arithmetic, because glibc's gmtime_r takes a process-wide lock.
// Parsing accepts the three forms RFC 9110 §5.6.7 requires a recipient to accept.
//
// DateCache holds the Date value of the current second. Any thread may call get(); the first
// caller that sees a new second formats it (published at most once per second, whichever
// thread), and readers copy it out of a SecondText (second_text.hpp).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "server/http/second_text.hpp"

namespace weft::http {

/// Length of an IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
inline constexpr std::size_t kHttpDateLength = 29;

/// A buffer that holds one formatted HTTP-date.
using HttpDateBuffer = std::array<char, kHttpDateLength>;

/// Writes `unix_seconds` as an IMF-fixdate into `out` and returns a view of `out`; times
/// outside years 0000-9999 are clamped to that range.
std::string_view format_http_date(std::int64_t unix_seconds, HttpDateBuffer& out);

/// Parses an IMF-fixdate, RFC 850 or asctime date into Unix seconds, or returns nullopt when
/// `text` is none of them; `now` (Unix seconds) resolves RFC 850's two-digit year to the
/// latest year not more than 50 years ahead of it. Day names are checked for spelling, not
/// against the date.
std::optional<std::int64_t> parse_http_date(std::string_view text, std::int64_t now);

/// The Date header value of the current second, shared by every thread.
class DateCache {
 public:
  /// Returns the current time in Unix seconds.
  using Clock = std::function<std::int64_t()>;

  /// Returns the wall-clock time in Unix seconds (CLOCK_REALTIME_COARSE: cheap, and a Date
  /// header needs no better than a second).
  static std::int64_t system_seconds();

  /// Makes a cache reading `clock`, with the clock's current second already formatted.
  explicit DateCache(Clock clock = system_seconds);

  DateCache(const DateCache&) = delete;
  DateCache& operator=(const DateCache&) = delete;

  /// Copies the Date value for the clock's current second into `out` and returns a view of
  /// `out`; formats only when the clock reached a later second than the cached one (or went
  /// back by two seconds or more: a stepped clock, not a late reader). Thread-safe.
  std::string_view get(HttpDateBuffer& out);

  /// Returns how many times the value has been formatted since construction (for tests and
  /// metrics). Thread-safe.
  std::uint64_t refreshes() const;

 private:
  void refresh(std::int64_t now);

  Clock clock_;
  SecondText<kHttpDateLength> text_;
};

}  // namespace weft::http
