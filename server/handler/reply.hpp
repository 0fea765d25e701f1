// Reply: what to answer one request with (what to send, not how), the response model between
// the handlers, which decide it (static_handler.hpp, metrics_endpoint.hpp), the head built
// for it (response_head.hpp) and the ResponseWriter, which sends that head and the body.
#pragma once

#include <cstdint>
#include <string_view>

#include "server/files/file_entry.hpp"
#include "server/http/range.hpp"

namespace weft::http {

class HeaderRules;

/// The methods a static server answers, as its Allow field lists them.
inline constexpr std::string_view kAllowedMethods = "GET, HEAD, OPTIONS";

/// The field every answer for a file carries when precompressed variants are looked for.
inline constexpr std::string_view kVaryLine = "Vary: Accept-Encoding\r\n";

/// What to answer one request with.
struct Reply {
  enum class Kind : std::uint8_t {
    error,         // an error page for `status`, with `extra` fields (Location, Allow, ...)
    options,       // 200 with Allow and no body
    file,          // `length` bytes of `file` from `offset` (200, or 206 with `range`),
                   // or with a `boundary` the multipart body of range.parts (`length` long)
    not_modified,  // 304 with the file's validators
    page,          // 200 with the ConnectionWork's `body` (a listing, the metrics)
    error_file,    // an error `status` whose body is the site's page `file` (error_pages), with
                   // `extra` fields; no validators (preconditions do not apply to errors)
  };
  Kind kind = Kind::error;
  int status = 500;
  FileRef file;
  uint64_t offset = 0;
  uint64_t length = 0;
  RangeResult range;              // the Content-Range of a 206 (and of a 416, in `extra`)
  std::string_view extra;         // "Name: value\r\n" lines for an error page or a page, or empty
  std::string_view content_type;  // of a page; of a precompressed variant, the original's
  std::string_view boundary;      // of a multipart 206: a view of ConnectionWork::boundary
  std::string_view encoding;      // of a coded representation: its Content-Encoding (static)
  std::string_view validators;    // of a coded representation: its fields with its own ETag
  bool vary = false;              // "Vary: Accept-Encoding" (server.precompressed is on)
  uint16_t site = 0;              // the SiteContext::number that answered (the access log names it)
  const HeaderRules* headers = nullptr;  // the site's [[headers]], when it has any: matched
                                         // on `page_path`, else on the request's normalised path
                                         // (work.path)
  // The site's page this reply serves instead of the path asked for (server.fallback_page,
  // server.error_pages), or empty: [[headers]] match the page served, as after NGINX's
  // internal redirect, never the request's path (an /assets/** rule's year-long immutable
  // Cache-Control must not stick to index.html served for a removed /assets/app.OLD.js).
  std::string_view page_path;

  /// Returns an error reply for `status`, with `extra` header lines.
  static Reply error_page(int status, std::string_view extra = {}) {
    Reply r;
    r.status = status;
    r.extra = extra;
    return r;
  }
};

/// Returns a page reply: 200 with `work.body` of `content_type` (a static string).
inline Reply page_reply(std::string_view content_type) {
  Reply r;
  r.kind = Reply::Kind::page;
  r.status = 200;
  r.content_type = content_type;
  return r;
}

}  // namespace weft::http
