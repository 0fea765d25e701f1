// HeadBuffer: a small append-only text buffer that a response head is written into, field by
// field, without allocating (what goes in it: handler/response_head.hpp).
//
// The head buffer lives on the connection fiber's stack or in the connection; when a head
// would not fit, append() reports overflow and the caller answers 500 (it cannot happen with
// the server's own fields; the limit is generous).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace weft::http {

class HeadBuffer {
 public:
  // Room for the server's own fields, a Location, and up to kMaxRuleFieldBytes of the
  // fields of a site's [[headers]] rules (site_rules.hpp).
  static constexpr std::size_t kCapacity = 4096;

  /// Appends s; returns false (and appends nothing) when it does not fit.
  bool append(std::string_view s) {
    if (s.size() > kCapacity - size_) {
      overflow_ = true;
      return false;
    }
    // An empty view may have a null data(), which memcpy must not get even for 0 bytes (UB;
    // UBSan aborts the server on it: every error page appends an empty `extra`).
    if (!s.empty()) std::memcpy(data_ + size_, s.data(), s.size());
    size_ += s.size();
    return true;
  }

  /// Appends a decimal number.
  bool append_number(uint64_t v) {
    char tmp[24];
    char* end = tmp + sizeof tmp;
    char* p = end;
    do {
      *--p = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v);
    return append({p, static_cast<std::size_t>(end - p)});
  }

  /// Appends "Name: value\r\n".
  bool field(std::string_view name, std::string_view value) {
    return append(name) && append(": ") && append(value) && append("\r\n");
  }

  /// Appends "Name: number\r\n".
  bool field(std::string_view name, uint64_t value) {
    return append(name) && append(": ") && append_number(value) && append("\r\n");
  }

  std::string_view view() const { return {data_, size_}; }
  const char* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool overflowed() const { return overflow_; }
  void clear() {
    size_ = 0;
    overflow_ = false;
  }

 private:
  char data_[kCapacity];
  std::size_t size_ = 0;
  bool overflow_ = false;
};

}  // namespace weft::http
