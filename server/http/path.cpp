// Request-target normalization: form, query, percent-decoding, then dot segments, in place.
#include "server/http/path.hpp"

#include <cstring>

#include "server/core/ascii.hpp"

namespace weft::http {
namespace {

// Sets `path` to the path part of an absolute-form target ("http://host/p?q" → "/p?q"), or
// "" when the authority is followed by a query or nothing; returns false when the target is
// not an acceptable http or https URI.
bool absolute_form_path(std::string_view raw, std::string_view& path) {
  std::string_view rest;
  if (ascii::istarts_with(raw, "http://")) {
    rest = raw.substr(7);
  } else if (ascii::istarts_with(raw, "https://")) {
    rest = raw.substr(8);
  } else {
    return false;
  }
  const std::size_t auth_end = rest.find_first_of("/?#");
  const std::string_view authority = rest.substr(0, auth_end);
  // RFC 9110 §4.2.1: an http URI with an empty host is invalid; §4.2.4: userinfo is not
  // allowed (and is a favourite of phishing URLs).
  if (authority.empty() || authority.find('@') != std::string_view::npos) return false;
  path = auth_end == std::string_view::npos ? std::string_view{} : rest.substr(auth_end);
  if (!path.empty() && path.front() != '/') path = {};  // "http://host?q": the root
  return true;
}

// Percent-decodes `path` into `out`; false on a bad escape or a NUL, raw or decoded.
bool percent_decode(std::string_view path, std::string& out) {
  out.resize(path.size());
  char* w = out.data();
  for (std::size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == '%') {
      if (i + 2 >= path.size() || !ascii::is_hex(path[i + 1]) || !ascii::is_hex(path[i + 2]))
        return false;
      c = static_cast<char>(ascii::hex_value(path[i + 1]) * 16 + ascii::hex_value(path[i + 2]));
      i += 2;
    }
    if (c == '\0') return false;
    *w++ = c;
  }
  out.resize(static_cast<std::size_t>(w - out.data()));
  return true;
}

// Removes empty, "." and ".." segments of `p` (which starts with "/") in place.
TargetStatus remove_dot_segments(std::string& p) {
  char* const s = p.data();
  const std::size_t n = p.size();
  std::size_t w = 0;  // s[0, w) is the result so far: "" (the root) or "/seg/seg"
  std::size_t r = 0;
  bool directory = false;  // whether the result names a directory (trailing "/")
  while (r < n) {
    while (r < n && s[r] == '/') ++r;
    if (r == n) {
      directory = true;
      break;
    }
    const std::size_t start = r;
    while (r < n && s[r] != '/') ++r;
    const std::size_t len = r - start;
    if (len == 1 && s[start] == '.') {
      directory = true;
      continue;
    }
    if (len == 2 && s[start] == '.' && s[start + 1] == '.') {
      if (w == 0) return TargetStatus::bad_request;  // above the root
      while (s[--w] != '/') {
      }
      directory = true;
      continue;
    }
    if (len > kMaxSegmentBytes) return TargetStatus::not_found;
    // The write position trails the read position by at least the one '/' skipped above.
    s[w++] = '/';
    std::memmove(s + w, s + start, len);
    w += len;
    directory = false;
  }
  if (w == 0 || directory) s[w++] = '/';  // fits: a '/' or a dot segment was consumed
  p.resize(w);
  return p.size() > kMaxPathBytes ? TargetStatus::not_found : TargetStatus::ok;
}

}  // namespace

TargetStatus normalize_target(std::string_view raw_target, std::string& out) {
  out.clear();
  std::string_view path;
  if (!raw_target.empty() && raw_target.front() == '/') {
    path = raw_target;
  } else if (!absolute_form_path(raw_target, path)) {
    return TargetStatus::bad_request;
  }
  path = path.substr(0, path.find_first_of("?#"));
  if (path.empty()) {
    out.push_back('/');  // (not out = "/": GCC 12 warns falsely, PR 105329)
    return TargetStatus::ok;
  }
  if (!percent_decode(path, out)) return TargetStatus::bad_request;
  return remove_dot_segments(out);
}

std::string root_relative(std::string_view path) {
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  return path.empty() ? std::string(".") : std::string(path);
}

void append_encoded_path(std::string_view path, std::string& out) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : path) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                (c != 0 && std::strchr("-._~/!$&*+,;=@", c) != nullptr);
    if (keep) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
}

}  // namespace weft::http
