// weft::http::LogThrottle: at most a few error-log lines a second from one call site whose
// line a client can trigger on every request (a refused symlink, an unreadable file), so that
// a flood of such requests cannot flood the log or spend the server's CPU on writing it.
//
// The lines past the budget are counted, and the next line that passes says how many were
// dropped. spdlog has no rate limit of its own (1.10), so this is hand-written: a window
// second and two counters, all atomics, shared by every processor. Two threads crossing into
// a new second at once can let a line or two more through; nothing is ever lost but text.
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <utility>

#include <spdlog/spdlog.h>

namespace weft::http {

class LogThrottle {
 public:
  /// Lets `per_second` lines through in each second.
  explicit constexpr LogThrottle(std::uint32_t per_second) : per_second_(per_second) {}

  /// Returns 0 when the line must be dropped, else 1 plus the number of lines dropped since
  /// the last one let through (the caller says "N similar lines dropped" when it is over 1).
  std::uint64_t admit() { return admit_at(coarse_second()); }

  /// Writes the line at `level` when admit() lets it through, followed by a line with the
  /// count of those dropped before it when there were any.
  template <typename... Args>
  void log(spdlog::level::level_enum level, spdlog::format_string_t<Args...> fmt, Args&&... args) {
    if (!spdlog::should_log(level)) return;  // no clock read for a level that is off
    const std::uint64_t n = admit();
    if (n == 0) return;
    spdlog::log(level, fmt, std::forward<Args>(args)...);
    if (n > 1) spdlog::log(level, "({} similar lines dropped before this one)", n - 1);
  }

  /// admit() at `second` (any monotonic count of seconds), for tests.
  std::uint64_t admit_at(std::int64_t second) {
    std::int64_t window = window_.load(std::memory_order_relaxed);
    if (window != second && window_.compare_exchange_strong(window, second)) {
      used_.store(0, std::memory_order_relaxed);
    }
    if (used_.fetch_add(1, std::memory_order_relaxed) < per_second_) {
      return 1 + dropped_.exchange(0, std::memory_order_relaxed);
    }
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }

 private:
  static std::int64_t coarse_second() {
    // The coarse clock is a vDSO read without a hardware timer access: cheap enough for
    // every refused request.
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return ts.tv_sec;
  }

  const std::uint32_t per_second_;
  std::atomic<std::int64_t> window_{-1};
  std::atomic<std::uint32_t> used_{0};
  std::atomic<std::uint64_t> dropped_{0};
};

}  // namespace weft::http
