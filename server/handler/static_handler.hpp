// weft::http static handler: decides the answer to one request from the document root.
//
// handle_static() turns a parsed request into a Reply (what to send, not how): the method
// check, path normalization, the fd cache lookup, the trailing-slash rule, the directory
// redirect, index files, the listing decision, precompressed variants, preconditions and
// ranges, and a site's rules and pages: which site answers (vhost.hpp), its [[redirects]]
// (before the method check: any method is redirected, as NGINX's `return`), its fallback page
// for a GET or HEAD of a path that names nothing, and its error pages. It sends nothing: the
// Reply (reply.hpp) becomes a head (response_head.hpp) and the ResponseWriter sends it and the
// body. The only I/O it does is the fd cache's
// lookups and, for a listing, reading the directory.
//
// Precompressed variants (server.precompressed, like NGINX's gzip_static): for a regular
// file f (an index file too), "on" looks up f.zst, f.br and f.gz through the same fd cache
// (same symlink rules, misses cached) for the codings the client's Accept-Encoding takes, the
// higher weight first and zstd, br, gzip on a tie, and serves the first that is a regular
// file (an f.zst only when its frame's window is within RFC 9659's 8 MiB), with
// Content-Encoding, f's Content-Type and the variant's own validators; "always" also serves
// f.gz to a client that does not ask for gzip (after an accepted br), though not to one
// that refuses it with q=0 (RFC 9110 §12.5.3). f itself must exist,
// as H2O requires: a lone f.gz never appears under a name that is not there. A variant's
// ETag is its file's with "-zst", "-br" or "-gz" inside the quotes, so it can never equal an
// identity tag (those are hex) even when both files share an mtime and a size; preconditions
// and a single Range apply to the variant's bytes. Several ranges of a variant get the whole
// variant (200): a multipart body cannot carry a Content-Encoding for its parts. Every
// answer for a file then says "Vary: Accept-Encoding" (304, 412 and 416 too), identity or
// not, so that caches key on it. "off" looks for nothing: f.gz is only ever a file.
//
// Compression on the fly ([compression], compress/compressor.hpp): a file of a compressible
// type and size that has no precompressed variant for the client is sent from the compressed
// cache in the accepted coding of higher weight (the server's order, compression.codecs, on a
// tie) when one is there; else as it is, while a worker makes the best one. Its ETag is the
// file's with "+zs", "+br" or "+gz" inside the quotes; preconditions and a single Range
// apply to the compressed bytes, and every answer for such a file says "Vary:
// Accept-Encoding". A client that refuses identity ("identity;q=0", "*;q=0") and accepts no
// coding that can be made gets 406; one whose coding is being made waits for it (the only
// request that waits for a compression; its fiber parks, its processor serves others).
#pragma once

#include <cstdint>
#include <string_view>

#include "server/handler/reply.hpp"
#include "server/http/request.hpp"

namespace weft::http {

struct ConnectionWork;
struct SiteContext;

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
