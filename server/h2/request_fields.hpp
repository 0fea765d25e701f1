// RequestFields: the fields of one HTTP/2 request as HPACK decodes them (nghttp2 hands them
// over one by one), kept in the stream and turned into the Request the static handler takes,
// the same one an HTTP/1.1 request head parses into (server/http/request.hpp).
//
// nghttp2 has already checked what RFC 9113 §8.2-8.3 makes a request malformed (pseudo-fields
// missing, repeated or after a regular field, upper-case names, connection-specific fields,
// CR, LF or NUL in values) and reset such a stream itself, so what arrives here is well
// formed. What is left for weft: :authority becomes the Host that picks the virtual host (a
// Host field naming another host makes the request malformed, RFC 9113 §8.3.1: 400), and the
// limits of [limits] and [http2] apply as over HTTP/1.1 (more than limits.max_headers
// fields, or a list larger than http2.max_header_list_size: 431). Cookie crumbs stay separate
// lines: a static server reads no cookie.
//
// Memory: the text of every field is copied once into one string, bounded by the list size
// limit (fields past it are counted, not kept), and the views are made when the request is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "server/http/request.hpp"

namespace weft::http {

class RequestFields {
 public:
  /// Keeps at most `max_fields` regular fields and `max_list_size` bytes of fields as RFC
  /// 9113 counts them (name + value + 32 each).
  RequestFields(std::size_t max_fields, std::size_t max_list_size)
      : max_fields_(max_fields), max_list_size_(max_list_size) {}

  /// Adds one decoded field (a pseudo-field when its name starts with ':').
  void add(std::string_view name, std::string_view value);

  /// Returns the status to answer instead of serving (400, 431), or 0 when build() may run.
  int refusal() const;

  /// Returns the request, valid while this object lives unchanged (call refusal() first).
  Request build();

  /// Forgets every field, keeping the memory for the next request's.
  void clear();

  /// Returns the bytes of memory the fields' text holds (its capacity).
  std::size_t capacity() const { return text_.capacity(); }

  /// Returns the method as sent (empty before its field came).
  std::string_view method() const { return view(method_); }

  /// Returns the :path as sent.
  std::string_view path() const { return view(path_); }

 private:
  struct Span {
    uint32_t at = 0;
    uint32_t len = 0;
  };
  struct Line {
    Span name;
    Span value;
  };
  Span keep(std::string_view s);
  std::string_view view(Span s) const { return {text_.data() + s.at, s.len}; }

  std::size_t max_fields_;
  std::size_t max_list_size_;
  std::size_t list_size_ = 0;  // as RFC 9113 §6.5.2 counts it, kept or not
  std::size_t fields_ = 0;     // regular fields, kept or not
  bool host_mismatch_ = false;
  std::string text_;
  std::vector<Line> lines_;
  std::vector<Header> headers_;  // made by build()
  Span method_, path_, authority_;
  bool has_authority_ = false;
};

}  // namespace weft::http
