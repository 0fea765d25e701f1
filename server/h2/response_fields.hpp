// ResponseFields: an HTTP/1.1 response head (what response_head.hpp builds for every Reply:
// the status line, Server, Date, a file's prebuilt fields, a site's [[headers]]) as the field
// list an HTTP/2 HEADERS frame carries, so the two protocols answer with the same fields
// from one place. The status line becomes :status; names go to lower case (RFC 9113 §8.2.2);
// the connection-specific fields an HTTP/2 message must not carry (Connection, Keep-Alive,
// Proxy-Connection, Transfer-Encoding, Upgrade) are left out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nghttp2/nghttp2.h>

namespace weft::http {

class ResponseFields {
 public:
  /// Reads `head` ("HTTP/1.1 200 OK\r\nName: value\r\n...\r\n"); returns false (keeping
  /// nothing) when it is not a head.
  bool assign(std::string_view head);

  /// Returns the fields, :status first, for nghttp2_submit_response; valid while this
  /// object lives unchanged.
  const std::vector<nghttp2_nv>& list() const { return nv_; }

  /// Returns the status code read from the status line.
  int status() const { return status_; }

 private:
  struct FieldSpan {
    std::size_t name_at, name_len, value_at, value_len;
  };
  std::vector<FieldSpan> spans_;
  std::string text_;  // the lower-cased names and the values, one after another
  std::vector<nghttp2_nv> nv_;
  int status_ = 0;
};

}  // namespace weft::http
