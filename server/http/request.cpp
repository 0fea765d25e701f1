// Field-name classification and lookup for weft::http::Request.
#include "server/http/request.hpp"

#include "server/core/ascii.hpp"

namespace weft::http {

Field classify_field(std::string_view name) {
  // Dispatch on length first: most names are rejected by one comparison of sizes.
  switch (name.size()) {
    case 4:
      if (ascii::iequals(name, "host")) return Field::host;
      break;
    case 5:
      if (ascii::iequals(name, "range")) return Field::range;
      break;
    case 6:
      if (ascii::iequals(name, "expect")) return Field::expect;
      break;
    case 8:
      if (ascii::iequals(name, "if-match")) return Field::if_match;
      if (ascii::iequals(name, "if-range")) return Field::if_range;
      break;
    case 10:
      if (ascii::iequals(name, "connection")) return Field::connection;
      break;
    case 13:
      if (ascii::iequals(name, "if-none-match")) return Field::if_none_match;
      break;
    case 14:
      if (ascii::iequals(name, "content-length")) return Field::content_length;
      break;
    case 15:
      if (ascii::iequals(name, "accept-encoding")) return Field::accept_encoding;
      break;
    case 17:
      if (ascii::iequals(name, "if-modified-since")) return Field::if_modified_since;
      if (ascii::iequals(name, "transfer-encoding")) return Field::transfer_encoding;
      break;
    case 19:
      if (ascii::iequals(name, "if-unmodified-since")) return Field::if_unmodified_since;
      break;
    default:
      break;
  }
  return Field::other;
}

std::optional<std::string_view> Request::find(std::string_view name) const {
  for (const Header& h : headers_) {
    if (ascii::iequals(h.name, name)) return h.value;
  }
  return std::nullopt;
}

Request Request::assemble(std::string_view method, std::string_view target, Version version,
                          std::span<Header> headers) {
  Request r;
  r.method_ = method == "GET"       ? Method::get
              : method == "HEAD"    ? Method::head
              : method == "OPTIONS" ? Method::options
                                    : Method::other;
  r.method_text_ = method;
  r.target_ = target;
  r.version_ = version;
  r.keep_alive_ = true;
  for (std::size_t i = 0; i < headers.size(); ++i) {
    headers[i].field = classify_field(headers[i].name);
    const auto f = index(headers[i].field);
    if (r.count_[f]++ == 0) r.first_[f] = static_cast<std::uint16_t>(i);
  }
  r.headers_ = headers;
  return r;
}

}  // namespace weft::http
