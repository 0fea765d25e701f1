// SendBatch: the bytes an HTTP/2 session has gathered for one write (frames from nghttp2,
// DATA frames read straight into it). A growable byte buffer whose growth leaves the new
// bytes uninitialized: std::string's resize zero-fills them first, which was 2% of the CPU of
// a 64 KiB response over TLS (every body byte written twice).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>

namespace weft::http {

class SendBatch {
 public:
  /// Adds `n` bytes at the end, uninitialized, and returns where they start; the caller
  /// fills them (or takes them back with truncate()).
  char* extend(std::size_t n) {
    if (n > cap_ - size_) grow(size_ + n);
    char* at = data_.get() + size_;
    size_ += n;
    return at;
  }

  /// Appends the `n` bytes at `p`.
  void append(const void* p, std::size_t n) {
    if (n > 0) std::memcpy(extend(n), p, n);
  }

  /// Keeps only the first `n` bytes (n <= size()).
  void truncate(std::size_t n) { size_ = std::min(n, size_); }

  /// Empties it, keeping its memory for the next batch.
  void clear() { size_ = 0; }

  const char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  void grow(std::size_t need) {
    const std::size_t cap = std::max({need, cap_ * 2, kFirst});
    auto bigger = std::make_unique_for_overwrite<char[]>(cap);
    if (size_ > 0) std::memcpy(bigger.get(), data_.get(), size_);
    data_ = std::move(bigger);
    cap_ = cap;
  }

  // The first allocation: a few frames. Picked: a small response's HEADERS and DATA fit.
  static constexpr std::size_t kFirst = 4096;

  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
  std::size_t cap_ = 0;
};

}  // namespace weft::http
