// weft::http::Request: a parsed HTTP/1.x request head, as views into the connection's buffer.
//
// A Request is produced by RequestParser (server/http/request_parser.hpp) and owns nothing: its
// string_views point into the bytes the caller passed to parse(), and stay valid while those
// bytes stay where they are (until the caller drops the request or moves its buffer). The
// header array belongs to the parser and is reused for the next request.
//
// Fields the server acts on are classified once, at parse time (Field), so the accessors do
// not compare names. Fields that must have one value follow RFC 9110's rules for duplicates:
// a repeated Host is rejected by the parser; a repeated Range, If-Range, If-Modified-Since or
// If-Unmodified-Since is treated as invalid, which for each of them means "ignore it", and a
// Range whose If-Range is invalid is ignored too (RFC 9110 §13.1.5). List fields (Connection,
// If-Match, If-None-Match, Accept-Encoding) may arrive on several lines and are read with
// FieldLines.
#pragma once

#include <array>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string_view>

namespace weft::http {

/// The request method, as far as a static server cares; other() methods get 405.
enum class Method : std::uint8_t { get, head, options, other };

/// The HTTP version; the parser answers 505 to any other (HTTP/2 streams come from h2/).
enum class Version : std::uint8_t { http_1_0, http_1_1, http_2 };

/// The header fields the server acts on; everything else is `other`.
enum class Field : std::uint8_t {
  other,
  host,
  connection,
  content_length,
  transfer_encoding,
  expect,
  if_match,
  if_none_match,
  if_modified_since,
  if_unmodified_since,
  range,
  accept_encoding,
  if_range,  // the last: kFieldCount
};

/// Number of Field values.
inline constexpr std::size_t kFieldCount = static_cast<std::size_t>(Field::if_range) + 1;

/// Returns the Field that `name` denotes (compared without case), or Field::other.
Field classify_field(std::string_view name);

/// One header field line: its name as sent, its value without surrounding whitespace.
struct Header {
  std::string_view name;
  std::string_view value;
  Field field = Field::other;
};

/// The values of every line of one field, in order ("If-None-Match: a" + "If-None-Match: b").
class FieldLines {
 public:
  class iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = std::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = const std::string_view*;
    using reference = std::string_view;

    iterator() = default;
    iterator(const Header* at, const Header* end, Field field) : at_(at), end_(end), f_(field) {
      skip();
    }
    std::string_view operator*() const { return at_->value; }
    iterator& operator++() {
      ++at_;
      skip();
      return *this;
    }
    iterator operator++(int) {
      iterator old = *this;
      ++*this;
      return old;
    }
    bool operator==(const iterator& o) const { return at_ == o.at_; }

   private:
    void skip() {
      while (at_ != end_ && at_->field != f_) ++at_;
    }
    const Header* at_ = nullptr;
    const Header* end_ = nullptr;
    Field f_ = Field::other;
  };

  /// Makes an empty list: the field is absent.
  FieldLines() = default;

  /// Makes the list of the lines of `field` among `headers`.
  FieldLines(std::span<const Header> headers, Field field)
      : begin_(headers.data()), end_(headers.data() + headers.size()), field_(field) {}

  /// Returns an iterator to the first line's value.
  iterator begin() const { return {begin_, end_, field_}; }

  /// Returns the past-the-end iterator.
  iterator end() const { return {end_, end_, field_}; }

  /// Returns whether the field has no line at all.
  bool empty() const { return begin() == end(); }

 private:
  const Header* begin_ = nullptr;
  const Header* end_ = nullptr;
  Field field_ = Field::other;
};

/// A parsed request head: method, target, version, headers, and the keep-alive decision.
class Request {
 public:
  /// Returns a request made of parts decoded elsewhere (an HTTP/2 stream's fields, h2/): the
  /// method as sent, the target, `headers` (at most 65535, classified here) in the order
  /// received; every view must outlive the request. It keeps the connection alive.
  static Request assemble(std::string_view method, std::string_view target, Version version,
                          std::span<Header> headers);

  /// Returns the method, classified.
  Method method() const { return method_; }

  /// Returns the method as sent ("GET", "PROPFIND").
  std::string_view method_text() const { return method_text_; }

  /// Returns the request-target exactly as sent (origin-, absolute-, authority- or
  /// asterisk-form; see server/http/path.hpp to normalize it).
  std::string_view target() const { return target_; }

  /// Returns the HTTP version.
  Version version() const { return version_; }

  /// Returns whether the connection may carry another request after this one's response
  /// (HTTP/1.1 unless "Connection: close"; HTTP/1.0 only with "Connection: keep-alive").
  bool keep_alive() const { return keep_alive_; }

  /// Returns every header line, in the order received.
  std::span<const Header> headers() const { return headers_; }

  /// Returns the value of the first line named `name` (compared without case), if any.
  std::optional<std::string_view> find(std::string_view name) const;

  /// Returns every line of `field`.
  FieldLines lines(Field field) const { return {headers_, field}; }

  /// Returns the Host value (at most one: the parser rejects more), if sent.
  std::optional<std::string_view> host() const { return single(Field::host); }

  /// Returns the lines of Connection.
  FieldLines connection() const { return lines(Field::connection); }

  /// Returns the lines of If-Match.
  FieldLines if_match() const { return lines(Field::if_match); }

  /// Returns the lines of If-None-Match.
  FieldLines if_none_match() const { return lines(Field::if_none_match); }

  /// Returns the lines of Accept-Encoding.
  FieldLines accept_encoding() const { return lines(Field::accept_encoding); }

  /// Returns If-Modified-Since when sent exactly once.
  std::optional<std::string_view> if_modified_since() const {
    return single(Field::if_modified_since);
  }

  /// Returns If-Unmodified-Since when sent exactly once.
  std::optional<std::string_view> if_unmodified_since() const {
    return single(Field::if_unmodified_since);
  }

  /// Returns Range when sent exactly once and If-Range is not repeated.
  std::optional<std::string_view> range() const {
    if (count_[index(Field::if_range)] > 1) return std::nullopt;
    return single(Field::range);
  }

  /// Returns If-Range when sent exactly once. A repeated If-Range suppresses range().
  std::optional<std::string_view> if_range() const { return single(Field::if_range); }

  /// Returns how many lines of `field` were sent.
  std::size_t count(Field field) const { return count_[index(field)]; }

 private:
  friend class RequestParser;

  static constexpr std::size_t index(Field f) { return static_cast<std::size_t>(f); }

  std::optional<std::string_view> single(Field f) const {
    if (count_[index(f)] != 1) return std::nullopt;
    return headers_[first_[index(f)]].value;
  }

  Method method_ = Method::other;
  Version version_ = Version::http_1_1;
  bool keep_alive_ = false;
  std::string_view method_text_;
  std::string_view target_;
  std::span<const Header> headers_;
  std::array<std::uint16_t, kFieldCount> first_{};  // index of the first line of each field
  std::array<std::uint16_t, kFieldCount> count_{};  // lines of each field
};

}  // namespace weft::http
