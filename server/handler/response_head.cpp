#include "server/handler/response_head.hpp"

#include "server/handler/connection_work.hpp"
#include "server/http/multipart.hpp"
#include "server/http/status.hpp"
#include "server/site/site_rules.hpp"

namespace weft::http {

namespace {

// An error page's fields: its body is the built-in page of its status.
void error_fields(HeadBuffer& h, int status) {
  h.append("Content-Type: text/html\r\n");
  h.field("Content-Length", error_body(status).size());
}

// A file reply's representation fields (Content-Type, Content-Encoding, validators,
// Accept-Ranges, Vary).
void append_file_fields(HeadBuffer& h, const Reply& reply) {
  const FileEntry& file = *reply.file;
  if (reply.boundary.empty() && reply.encoding.empty()) {
    h.append(file.fields.text);  // the common case: the fields prebuilt by the fd cache
    if (reply.vary) h.append(kVaryLine);
    return;
  }
  // A multipart body has its own Content-Type (each part carries the file's); a variant has
  // the original's, its coding, and its own validators. The rest of the file's fields
  // (Accept-Ranges) follow its validators.
  if (!reply.boundary.empty()) {
    h.append("Content-Type: ");
    h.append(kMultipartType);
    h.append(reply.boundary);
    h.append("\r\n");
  } else {
    h.field("Content-Type", reply.content_type);
    h.field("Content-Encoding", reply.encoding);
  }
  h.append(reply.validators.empty() ? file.fields.validators() : reply.validators);
  h.append(file.fields.after_validators());
  if (reply.vary) h.append(kVaryLine);
}

}  // namespace

void begin_head(HeadBuffer& h, const HeadOrigin& origin, int status, bool close,
                const Request* req) {
  h.append(status_line(status));
  h.field("Server", origin.server_name);
  HttpDateBuffer date;
  h.field("Date", origin.dates.get(date));
  if (close) {
    h.append("Connection: close\r\n");
  } else if (req && req->version() == Version::http_1_0) {
    h.append("Connection: keep-alive\r\n");  // 1.0 keeps alive only when told so
  }
}

void build_refusal(HeadBuffer& h, const HeadOrigin& origin, int status) {
  begin_head(h, origin, status, /*close=*/true, nullptr);
  error_fields(h, status);
  h.append("\r\n");
  h.append(error_body(status));
}

void build_head(HeadBuffer& h, const HeadOrigin& origin, const Reply& reply, const Request* req,
                bool close, const ConnectionWork& work) {
  begin_head(h, origin, reply.status, close, req);
  switch (reply.kind) {
    case Reply::Kind::error:
      error_fields(h, reply.status);
      h.append(reply.extra);
      break;
    case Reply::Kind::options:
      h.field("Allow", kAllowedMethods);
      h.append("Content-Length: 0\r\n");
      break;
    case Reply::Kind::not_modified:
      h.append(reply.validators.empty() ? reply.file->fields.validators() : reply.validators);
      if (reply.vary) h.append(kVaryLine);
      break;
    case Reply::Kind::file:
      append_file_fields(h, reply);
      h.field("Content-Length", reply.length);
      if (reply.range.kind == RangeResult::Kind::single) {
        ContentRangeBuffer cr;
        h.field("Content-Range", format_content_range(reply.range, cr));
      }
      break;
    case Reply::Kind::page:
      h.field("Content-Type", reply.content_type);
      h.field("Content-Length", work.body.size());
      h.append(reply.extra);
      break;
    case Reply::Kind::error_file:
      h.field("Content-Type", reply.file->content_type);
      h.field("Content-Length", reply.length);
      h.append(reply.extra);
      break;
  }
  // The site's [[headers]]: one branch when it has none (handle_static leaves this null).
  if (reply.headers) {
    reply.headers->append_matching(
        reply.page_path.empty() ? std::string_view(work.path) : reply.page_path, reply.status, h);
  }
  h.append("\r\n");
}

}  // namespace weft::http
