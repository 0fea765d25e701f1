#include "server/h2/request_fields.hpp"

#include "server/core/ascii.hpp"

namespace weft::http {

namespace {

// RFC 9113 §6.5.2: a field's size is its name's and value's octets plus 32.
constexpr std::size_t kFieldOverhead = 32;

}  // namespace

RequestFields::Span RequestFields::keep(std::string_view s) {
  Span span{static_cast<uint32_t>(text_.size()), static_cast<uint32_t>(s.size())};
  text_.append(s);
  return span;
}

void RequestFields::add(std::string_view name, std::string_view value) {
  list_size_ += name.size() + value.size() + kFieldOverhead;
  if (list_size_ > max_list_size_) return;  // counted, not kept: refusal() says 431
  if (!name.empty() && name[0] == ':') {
    if (name == ":method") method_ = keep(value);
    if (name == ":path") path_ = keep(value);
    if (name == ":authority") {
      authority_ = keep(value);
      has_authority_ = true;
    }
    return;  // :scheme (any: weft serves what it has) and :protocol are not used
  }
  if (++fields_ > max_fields_) return;
  if (name == "host") {
    // RFC 9113 §8.3.1: a Host naming another host than :authority makes it malformed; one
    // that agrees adds nothing (the request's host is :authority's).
    if (has_authority_) {
      host_mismatch_ = host_mismatch_ || !ascii::iequals(value, view(authority_));
      return;
    }
  }
  lines_.push_back({keep(name), keep(value)});
}

void RequestFields::clear() {
  list_size_ = 0;
  fields_ = 0;
  host_mismatch_ = false;
  text_.clear();
  lines_.clear();
  headers_.clear();
  method_ = path_ = authority_ = {};
  has_authority_ = false;
}

int RequestFields::refusal() const {
  if (list_size_ > max_list_size_ || fields_ > max_fields_) return 431;
  if (host_mismatch_) return 400;
  return 0;
}

Request RequestFields::build() {
  headers_.clear();
  headers_.reserve(lines_.size() + 1);
  // :authority comes first as Host (the vhost choice reads it); nghttp2 guarantees pseudo
  // fields precede regular ones, so a Host line seen before :authority cannot happen.
  if (has_authority_) headers_.push_back({"Host", view(authority_), Field::other});
  for (const Line& l : lines_) headers_.push_back({view(l.name), view(l.value), Field::other});
  return Request::assemble(view(method_), view(path_), Version::http_2, headers_);
}

}  // namespace weft::http
