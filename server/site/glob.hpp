// weft::http::Glob: a path pattern of the [[headers]] and [[redirects]] rules, compiled once
// per configuration and matched against normalised request paths without allocating.
//
// Syntax (the subset of globset's that static-web-server users write):
//   *       any run of characters within one segment (no '/'), possibly empty
//   ?       one character other than '/'
//   **      any run of characters, '/' included, possibly empty ("/assets/**")
//   **/     at the start of the pattern or after a '/': zero or more whole segments, so that
//           "/**/*.html" matches "/a.html" as well as "/a/b/c.html"
//   {a,b}   one of the comma-separated alternatives, each plain text (no wildcard, no braces)
//   \c      the character c itself (to match a literal '*', '?', '{', '}', ',' or '\')
// Anything else matches itself; a pattern must start with '/' (it is matched against the
// normalised path, which does). Each wildcard and each {..} group is a capture, numbered from
// 1 in the order they appear, that a redirect's destination refers to as $1, $2, ...
//
// Matching backtracks over the wildcards, with a budget of kMaxSteps steps per match: a
// pattern with many "**" against a long path costs a bounded amount of work per request, and
// a match that would take longer counts as no match (no real pattern comes near it).
//
// Threads: a compiled Glob is immutable; any thread may match against it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weft::http {

/// What a match captured: for each capture, its offset and length in the matched path.
struct GlobCaptures {
  static constexpr std::size_t kMax = 9;  // $1 .. $9
  struct Span {
    uint32_t at = 0;
    uint32_t length = 0;
  };
  std::array<Span, kMax> spans{};
  std::size_t count = 0;

  /// Returns capture `n` (1-based) as a view of `path`, or empty when there is none.
  std::string_view get(std::string_view path, std::size_t n) const {
    if (n == 0 || n > count) return {};
    return path.substr(spans[n - 1].at, spans[n - 1].length);
  }
};

class Glob {
 public:
  /// Upper bound on the backtracking steps of one match (see the top). Picked: a pattern of
  /// three "**" against a 4 KiB path stays far below it; ten thousand steps take ~20 us.
  static constexpr std::size_t kMaxSteps = 10'000;
  /// Most alternatives the braces of one pattern may expand to.
  static constexpr std::size_t kMaxAlternatives = 64;

  /// Compiles `pattern`; returns the glob, or nullopt with `error` saying what is wrong.
  static std::optional<Glob> compile(std::string_view pattern, std::string& error);

  /// Returns whether `path` matches the whole pattern; fills `captures` when given.
  bool match(std::string_view path, GlobCaptures* captures = nullptr) const;

  /// Returns how many captures a match yields ($1 .. $N).
  std::size_t captures() const { return captures_; }

  /// Returns the pattern as written.
  const std::string& pattern() const { return pattern_; }

  /// Returns whether the pattern has no wildcard and no braces (matches one path only).
  bool exact() const { return exact_; }

  enum class Kind : uint8_t {
    literal,   // `text` itself
    star,      // *
    question,  // ?
    any,       // **
    segments,  // **/ : zero or more segments, each with its '/'
  };
  struct Token {
    Kind kind = Kind::literal;
    std::string text;  // of a literal
    int capture = -1;  // the capture it fills (0-based), or -1 (plain text)
  };

 private:
  std::string pattern_;
  std::vector<std::vector<Token>> alternatives_;  // the braces expanded
  std::size_t captures_ = 0;
  bool exact_ = false;
};

}  // namespace weft::http
