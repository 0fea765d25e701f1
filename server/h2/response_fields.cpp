#include "server/h2/response_fields.hpp"

#include <array>

#include "server/core/ascii.hpp"

namespace weft::http {

namespace {

// RFC 9113 §8.2.2: fields that are about one HTTP/1.1 connection.
constexpr std::array<std::string_view, 5> kConnectionFields = {
    "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"};

bool connection_specific(std::string_view lower) {
  for (std::string_view f : kConnectionFields) {
    if (lower == f) return true;
  }
  return false;
}

}  // namespace

bool ResponseFields::assign(std::string_view head) {
  text_.clear();
  text_.reserve(head.size());  // a no-op once it has grown: one string for every response
  nv_.clear();
  spans_.clear();
  status_ = 0;
  // "HTTP/1.1 200 OK\r\n": the three digits after the first space.
  const std::size_t eol = head.find("\r\n");
  const std::size_t sp = head.find(' ');
  if (eol == std::string_view::npos || sp == std::string_view::npos || sp + 4 > eol) return false;
  const std::string_view code = head.substr(sp + 1, 3);
  for (char c : code) {
    if (c < '0' || c > '9') return false;
    status_ = status_ * 10 + (c - '0');
  }
  text_.append(":status");
  text_.append(code);
  spans_.push_back({0, 7, 7, 3});
  std::size_t at = eol + 2;
  while (at < head.size()) {
    const std::size_t end = head.find("\r\n", at);
    if (end == std::string_view::npos || end == at) break;  // the empty line ends the head
    const std::string_view line = head.substr(at, end - at);
    at = end + 2;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    const std::size_t name_at = text_.size();
    text_.append(line.substr(0, colon));
    for (std::size_t i = name_at; i < text_.size(); ++i) text_[i] = ascii::to_lower(text_[i]);
    if (connection_specific(std::string_view(text_).substr(name_at))) {
      text_.resize(name_at);
      continue;
    }
    const std::size_t value_at = text_.size();
    text_.append(value);
    spans_.push_back({name_at, colon, value_at, value.size()});
  }
  // Pointers only now: the text no longer grows.
  auto* base = reinterpret_cast<uint8_t*>(text_.data());
  for (const FieldSpan& f : spans_) {
    nv_.push_back(
        {base + f.name_at, base + f.value_at, f.name_len, f.value_len, NGHTTP2_NV_FLAG_NONE});
  }
  return true;
}

}  // namespace weft::http
