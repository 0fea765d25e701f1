// weft::http status codes: reason phrases, status lines, error pages, and the errno mapping.
//
// weft answers with a closed set of statuses: 200, 206, 301, 302, 303, 304, 307, 308, 400,
// 403, 404, 405, 406, 408, 412, 413, 414, 416, 431, 500, 501, 503, 505 (302, 303, 307 and 308 only
// for [[redirects]], 406 for [compression]). Their status lines and HTML pages are built
// once, on first use, and handed out as views that live until exit. status_from_errno() is the
// one place that decides what a failed open or stat means to the client and to the error log.
#pragma once

#include <array>
#include <span>
#include <string_view>

#include <spdlog/common.h>

namespace weft::http {

/// The statuses weft answers with, ascending: the one list of them (the metrics count each).
inline constexpr std::array<int, 23> kStatusCodes = {200, 206, 301, 302, 303, 304, 307, 308,
                                                     400, 403, 404, 405, 406, 408, 412, 413,
                                                     414, 416, 431, 500, 501, 503, 505};

/// Returns kStatusCodes.
std::span<const int> known_statuses();

/// Returns the reason phrase of `status` ("Not Found"), or "" when weft does not use it.
std::string_view reason_phrase(int status);

/// Returns "HTTP/1.1 <status> <reason>\r\n" for a status weft uses, or "" for any other.
std::string_view status_line(int status);

/// Returns the small HTML page sent as the body of `status`, or "" for statuses that carry
/// none of ours (2xx, 304) and for statuses weft does not use.
std::string_view error_body(int status);

/// What a failed file-system call means: the status to answer and the error-log level.
struct ErrnoStatus {
  int status;
  spdlog::level::level_enum level;
};

/// Maps the errno of a failed open/openat2/statx under the document root to the status to
/// answer and the level at which to log it: ENOENT, ENOTDIR, ENAMETOOLONG and the symlink
/// policy's ELOOP/EXDEV give 404; EACCES and EPERM 403; EMFILE and ENFILE 503; anything else
/// 500 logged at critical.
ErrnoStatus status_from_errno(int err);

}  // namespace weft::http
