// The head of a response: the status line, Server, Date and the Connection field every head
// starts with, then the fields of each Reply kind (an error page's, a file's, a 304's, a
// page's), the site's [[headers]] and the empty line. One place to read what a response's
// head says; a file's own fields are prebuilt by the fd cache (file_fields.hpp), the body is
// sent by the ResponseWriter.
#pragma once

#include <string_view>

#include "server/handler/reply.hpp"
#include "server/http/http_date.hpp"
#include "server/http/request.hpp"
#include "server/http/response.hpp"

namespace weft::http {

struct ConnectionWork;

/// What every head of one server starts with besides its status: the server's name
/// (server.server_name) and the date, from the server's DateCache.
struct HeadOrigin {
  std::string_view server_name;
  DateCache& dates;
};

/// Writes the status line, Server, Date and the Connection field a head starts with: "close"
/// when `close`, "keep-alive" for an HTTP/1.0 `req` that stays open.
void begin_head(HeadBuffer& h, const HeadOrigin& origin, int status, bool close,
                const Request* req);

/// Writes a whole error response (head, then the page) that closes the connection into
/// `h`, for a client turned away without a writer (over limits.max_connections).
void build_refusal(HeadBuffer& h, const HeadOrigin& origin, int status);

/// Writes the whole head for `reply` to `req` (null: none was parsed) into `h` (check
/// h.overflowed()); a page's length and the path the site's [[headers]] match are `work`'s.
void build_head(HeadBuffer& h, const HeadOrigin& origin, const Reply& reply, const Request* req,
                bool close, const ConnectionWork& work);

}  // namespace weft::http
