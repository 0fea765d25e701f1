#include "server/http/file_fields.hpp"

#include "server/http/http_date.hpp"

namespace weft::http {

void FileFields::build(std::string_view content_type, std::string_view etag, int64_t mtime,
                       bool mtime_strong, bool ranges) {
  HttpDateBuffer lm;
  text.reserve(160);
  text.append("Content-Type: ").append(content_type).append("\r\n");
  validators_at = text.size();
  if (mtime_strong)
    text.append("Last-Modified: ").append(format_http_date(mtime, lm)).append("\r\n");
  text.append("ETag: ").append(etag).append("\r\n");
  validators_end = text.size();
  // limits.max_ranges = 0 ignores every Range: say so (RFC 9110 §14.3) rather than invite one.
  text.append(ranges ? "Accept-Ranges: bytes\r\n" : "Accept-Ranges: none\r\n");
}

std::string_view variant_validators(std::string& out, std::string_view validators,
                                    std::string_view etag, std::string_view tag_suffix) {
  out.assign(validators.substr(0, validators.rfind("ETag: "))).append("ETag: ");  // [Last-Modified]
  const std::size_t at = out.size();
  out.append(etag.substr(0, etag.size() - 1)).append(tag_suffix).append("\"\r\n");
  return std::string_view(out).substr(at, etag.size() + tag_suffix.size());
}

}  // namespace weft::http
