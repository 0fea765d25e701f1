// weft::http static handler: decides the answer to one request from the document root.
//
// handle_static() turns a parsed request into a Reply (what to send, not how): the method
// check, path normalization, the fd cache lookup, the trailing-slash rule, the directory
// redirect, index files, the listing decision, precompressed variants, preconditions and
// ranges, and a site's rules and pages: which site answers (vhost.hpp), its [[redirects]]
// (before the method check: any method is redirected, as NGINX's `return`), its fallback page
// for a GET or HEAD of a path that names nothing, and its error pages. It sends nothing; the
// ResponseWriter turns the Reply into a head and a body. The only I/O it does is the fd cache's
// lookups and, for a listing, reading the directory.
//
// Precompressed variants (server.precompressed, like NGINX's gzip_static): for a regular
// file f (an index file too), "on" looks up f.br and f.gz through the same fd cache (same
// symlink rules, misses cached) for the codings the client's Accept-Encoding takes, the
// higher weight first and br on a tie, and serves the first that is a regular file, with
// Content-Encoding, f's Content-Type and the variant's own validators; "always" also serves
// f.gz to a client that does not ask for gzip (after an accepted br), though not to one
// that refuses it with q=0 (RFC 9110 §12.5.3). f itself must exist,
// as H2O requires: a lone f.gz never appears under a name that is not there. A variant's
// ETag is its file's with "-br" or "-gz" inside the quotes, so it can never equal an
// identity tag (those are hex) even when both files share an mtime and a size; preconditions
// and a single Range apply to the variant's bytes. Several ranges of a variant get the whole
// variant (200): a multipart body cannot carry a Content-Encoding for its parts. Every
// answer for a file then says "Vary: Accept-Encoding" (304, 412 and 416 too), identity or
// not, so that caches key on it. "off" looks for nothing: f.gz is only ever a file.
#pragma once

#include <cstdint>
#include <string_view>

#include "server/files/file_entry.hpp"
#include "server/http/range.hpp"
#include "server/http/request.hpp"
#include "server/site/site_rules.hpp"

namespace weft::http {

struct ConnectionWork;
struct SiteContext;

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
  std::string_view encoding;      // of a precompressed variant: its Content-Encoding
  std::string_view validators;    // of a variant: its fields with its own ETag (work.fields)
  bool vary = false;              // "Vary: Accept-Encoding" (server.precompressed is on)
  uint16_t site = 0;              // the SiteContext::number that answered (the access log names it)
  const HeaderRules* headers = nullptr;  // the site's [[headers]], when it has any: matched
                                         // on the request's normalised path (work.path)

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

/// Returns the answer to a request whose method is neither GET nor HEAD: OPTIONS gets 200
/// with Allow, any other 405 with Allow.
Reply method_reply(const Request& req);

/// Decides the answer of `site` (the one that answers `req`: ServerContext::site_for) to
/// `req` (the request's client is `peer`, for log lines); uses `work.path`, `work.scratch`
/// and `work.body` for its strings, so the Reply's views live until the connection's next
/// request.
Reply handle_static(const SiteContext& site, const Request& req, ConnectionWork& work,
                    std::string_view peer);

}  // namespace weft::http
