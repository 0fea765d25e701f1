// SecondText: a short text that stays the same for a whole second (the Date header value,
// the access log's time), formatted by whichever thread first needs a new second and copied
// out by every other.
//
// A sequence lock whose words are all atomics: the writer makes the count odd, stores the
// second and the words with release stores, and makes the count even again; a reader loads
// the count, the second and the words with acquire loads and checks that the count did not
// move. Seeing any word of a newer value makes that re-read see the writer's odd count, so a
// torn copy is always caught, without fences (TSan cannot model std::atomic_thread_fence, and
// GCC warns about it under -fsanitize=thread), and there is no data race for TSan to find.
// One writer at a time (a flag); a thread that loses the race keeps the text it formatted
// itself, or the previous second's. No reader ever blocks a writer.
#pragma once

#include <array>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace weft::http {

template <std::size_t kBytes>
class SecondText {
 public:
  static constexpr std::size_t kWords = (kBytes + 7) / 8;
  /// A buffer a copy goes into (the text, then padding).
  using Buffer = std::array<char, kWords * 8>;

  /// Copies the published text into `out` and sets `second` to its second; returns false
  /// (copying nothing usable) when a writer is mid-update or nothing is published yet.
  bool read(Buffer& out, std::int64_t& second) const {
    const std::uint64_t s1 = seq_.load(std::memory_order_acquire);
    if (s1 == 0 || (s1 & 1) != 0) return false;
    second = second_.load(std::memory_order_acquire);
    std::array<std::uint64_t, kWords> w;
    for (std::size_t i = 0; i < kWords; ++i) w[i] = words_[i].load(std::memory_order_acquire);
    if (seq_.load(std::memory_order_relaxed) != s1) return false;
    std::memcpy(out.data(), w.data(), out.size());
    return true;
  }

  /// Publishes `text` (kBytes long) for `second` when no other writer is at it and
  /// `wanted(published_second)` still holds; returns whether it did.
  template <typename Wanted>
  bool publish(std::int64_t second, const char* text, Wanted wanted) {
    if (writing_.test_and_set(std::memory_order_acquire)) return false;
    bool done = wanted(second_.load(std::memory_order_relaxed));
    if (done) {
      std::array<std::uint64_t, kWords> w{};
      std::memcpy(w.data(), text, kBytes);
      const std::uint64_t s = seq_.load(std::memory_order_relaxed);
      seq_.store(s + 1, std::memory_order_relaxed);
      second_.store(second, std::memory_order_release);
      for (std::size_t i = 0; i < kWords; ++i) words_[i].store(w[i], std::memory_order_release);
      seq_.store(s + 2, std::memory_order_release);
    }
    writing_.clear(std::memory_order_release);
    return done;
  }

  /// Returns the second of the published text (INT64_MIN before the first); any thread.
  std::int64_t second() const { return second_.load(std::memory_order_acquire); }

  /// Returns how many texts were published.
  std::uint64_t publications() const { return seq_.load(std::memory_order_acquire) / 2; }

 private:
  std::atomic<std::uint64_t> seq_{0};  // odd while a writer is storing
  std::atomic<std::int64_t> second_{INT64_MIN};
  std::array<std::atomic<std::uint64_t>, kWords> words_{};
  std::atomic_flag writing_;
};

}  // namespace weft::http
