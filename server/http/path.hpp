// weft::http request-target normalization: the raw target of a request to a clean path.
//
// normalize_target() turns what the client sent into the path looked up under the document
// root, in this order (the order is the security argument):
//   1. form: origin-form ("/a/b?q") as is; absolute-form ("http://host/a/b") loses its scheme
//      and authority (weft serves one site; RFC 9112 §3.2.2 makes the target's authority win
//      over Host anyway); anything else (asterisk-form "*", authority-form, relative) is 400.
//   2. the query and fragment are cut off; the query never takes part in the lookup.
//   3. percent-decoding, exactly once: "%252e" becomes the three bytes "%2e", never ".".
//      A bad escape is 400, and so are %00 and a raw NUL (a C path would end there).
//      A decoded "%2F" is a slash like any other, as in NGINX.
//      Bytes are bytes: "\" is an ordinary file-name byte on Linux, and overlong UTF-8 such
//      as "%c0%ae" stays the two bytes C0 AE, which can only name a file called that.
//   4. segments: repeated slashes merge, "." and ".." are removed after decoding (RFC 3986
//      §5.2.4), and a ".." that would climb above the root is 400 (like NGINX), rather than
//      being clamped silently.
// The result starts with "/", has no "." or ".." segment and no empty segment, and keeps a
// trailing "/" when the target had one or ended in a dot segment: it means "directory".
// A segment longer than NAME_MAX or a path longer than PATH_MAX cannot name a file: 404.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace weft::http {

/// The outcome of normalize_target().
enum class TargetStatus : std::uint8_t {
  ok,           // `out` holds the normalized path
  bad_request,  // 400: not origin- or absolute-form, bad escape, NUL, or ".." above the root
  not_found,    // 404: a segment or the whole path too long to name a file
};

/// Returns the HTTP status a TargetStatus answers with (0 for ok: go on with the lookup).
constexpr int http_status(TargetStatus s) {
  switch (s) {
    case TargetStatus::ok:
      return 0;
    case TargetStatus::bad_request:
      return 400;
    case TargetStatus::not_found:
      return 404;
  }
  return 400;
}

/// Longest normalized path accepted (PATH_MAX less its NUL); longer gives not_found.
inline constexpr std::size_t kMaxPathBytes = 4095;

/// Longest path segment accepted (NAME_MAX); longer gives not_found.
inline constexpr std::size_t kMaxSegmentBytes = 255;

/// Returns whether `raw_target` is the asterisk-form "*", which only OPTIONS may use (for
/// the server as a whole); normalize_target() rejects it.
constexpr bool is_asterisk_form(std::string_view raw_target) {
  return raw_target == "*";
}

/// Normalizes `raw_target` into `out` (cleared first; reuse one string per connection so
/// that only its first use allocates) and says whether the lookup may go on.
TargetStatus normalize_target(std::string_view raw_target, std::string& out);

/// Returns whether normalized `path` names a directory: it ends in "/" (the root "/" too).
/// This is the one place the trailing-slash rule is decided.
constexpr bool names_directory(std::string_view path) {
  return !path.empty() && path.back() == '/';
}

/// Returns the name of normalized `path` relative to the document root, as openat(2) takes
/// it under the root's descriptor: no leading or trailing "/", and "." for the root itself.
std::string root_relative(std::string_view path);

/// Appends `path` (decoded bytes) to `out` percent-encoded for a URL's path, keeping only
/// unreserved bytes, "/" and the sub-delimiters that cannot end a path or start a scheme
/// ("!$&*+,;=@"), so the result is safe as a Location value and, behind "./", as an href.
void append_encoded_path(std::string_view path, std::string& out);

}  // namespace weft::http
