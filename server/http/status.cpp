// Reason phrases (RFC 9110 §15), prebuilt status lines and error pages, and errno → status.
#include "server/http/status.hpp"

#include <array>
#include <cerrno>
#include <string>

#include <fmt/core.h>

namespace weft::http {
namespace {

// The reason phrase of each of kStatusCodes, in its order.
constexpr std::array<std::string_view, kStatusCodes.size()> kReasons = {
    "OK",
    "Partial Content",
    "Moved Permanently",
    "Found",
    "See Other",
    "Not Modified",
    "Temporary Redirect",
    "Permanent Redirect",
    "Bad Request",
    "Forbidden",
    "Not Found",
    "Method Not Allowed",
    "Not Acceptable",
    "Request Timeout",
    "Precondition Failed",
    "Content Too Large",
    "URI Too Long",
    "Range Not Satisfiable",
    "Request Header Fields Too Large",
    "Internal Server Error",
    "Not Implemented",
    "Service Unavailable",
    "HTTP Version Not Supported",
};

// Index into kStatusCodes, or -1.
int index_of(int status) {
  for (std::size_t i = 0; i < kStatusCodes.size(); ++i) {
    if (kStatusCodes[i] == status) return static_cast<int>(i);
  }
  return -1;
}

// Built once; function-local static initialization is thread-safe.
struct Prebuilt {
  std::array<std::string, kStatusCodes.size()> lines;
  std::array<std::string, kStatusCodes.size()> bodies;

  Prebuilt() {
    for (std::size_t i = 0; i < kStatusCodes.size(); ++i) {
      int code = kStatusCodes[i];
      std::string_view reason = kReasons[i];
      lines[i] = fmt::format("HTTP/1.1 {} {}\r\n", code, reason);
      // 2xx bodies are files, and 304 must not have a body (RFC 9110 §15.4.5).
      if (code >= 300 && code != 304) {
        bodies[i] = fmt::format(
            "<!DOCTYPE html>\n<html>\n<head><title>{0} {1}</title></head>\n"
            "<body>\n<h1>{0} {1}</h1>\n<hr>weft\n</body>\n</html>\n",
            code, reason);
      }
    }
  }
};

const Prebuilt& prebuilt() {
  static const Prebuilt p;
  return p;
}

}  // namespace

std::span<const int> known_statuses() {
  return kStatusCodes;
}

std::string_view reason_phrase(int status) {
  const int i = index_of(status);
  return i < 0 ? std::string_view{} : kReasons[static_cast<std::size_t>(i)];
}

std::string_view status_line(int status) {
  const int i = index_of(status);
  return i < 0 ? std::string_view{} : prebuilt().lines[static_cast<std::size_t>(i)];
}

std::string_view error_body(int status) {
  const int i = index_of(status);
  return i < 0 ? std::string_view{} : prebuilt().bodies[static_cast<std::size_t>(i)];
}

ErrnoStatus status_from_errno(int err) {
  using spdlog::level::level_enum;
  switch (err) {
    case ENOENT:
    case ENOTDIR:
    case ENAMETOOLONG:
      // The everyday miss: the access log records it; the error log only when debugging.
      return {404, level_enum::debug};
    case ELOOP:
    case EXDEV:
      // The symlink policy said no: O_NOFOLLOW / RESOLVE_NO_SYMLINKS give ELOOP, and
      // RESOLVE_BENEATH gives EXDEV for a link out of the root. Answered like a missing file,
      // so a client cannot tell a forbidden link from no file.
      return {404, level_enum::info};
    case EACCES:
    case EPERM:
      // A file the server may not read sits in its own document root: worth a look.
      return {403, level_enum::warn};
    case EMFILE:
    case ENFILE:
      // Out of descriptors: a capacity problem, not the client's fault; it may pass.
      return {503, level_enum::err};
    default:
      return {500, level_enum::critical};
  }
}

}  // namespace weft::http
