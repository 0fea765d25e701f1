// Reason phrases (RFC 9110 §15), prebuilt status lines and error pages, and errno → status.
#include "server/status.hpp"

#include <array>
#include <cerrno>
#include <string>

#include <fmt/core.h>

namespace weft::http {
namespace {

struct StatusInfo {
  int code;
  std::string_view reason;
};

constexpr std::array<StatusInfo, 18> kStatuses = {{
    {200, "OK"},
    {206, "Partial Content"},
    {301, "Moved Permanently"},
    {304, "Not Modified"},
    {400, "Bad Request"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {408, "Request Timeout"},
    {412, "Precondition Failed"},
    {413, "Content Too Large"},
    {414, "URI Too Long"},
    {416, "Range Not Satisfiable"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {503, "Service Unavailable"},
    {505, "HTTP Version Not Supported"},
}};

constexpr std::array<int, kStatuses.size()> kCodes = [] {
  std::array<int, kStatuses.size()> codes{};
  for (std::size_t i = 0; i < kStatuses.size(); ++i) codes[i] = kStatuses[i].code;
  return codes;
}();

// Index into kStatuses, or -1.
int index_of(int status) {
  for (std::size_t i = 0; i < kStatuses.size(); ++i) {
    if (kStatuses[i].code == status) return static_cast<int>(i);
  }
  return -1;
}

// Built once; function-local static initialization is thread-safe.
struct Prebuilt {
  std::array<std::string, kStatuses.size()> lines;
  std::array<std::string, kStatuses.size()> bodies;

  Prebuilt() {
    for (std::size_t i = 0; i < kStatuses.size(); ++i) {
      const auto& [code, reason] = kStatuses[i];
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
  return kCodes;
}

std::string_view reason_phrase(int status) {
  const int i = index_of(status);
  return i < 0 ? std::string_view{} : kStatuses[static_cast<std::size_t>(i)].reason;
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
