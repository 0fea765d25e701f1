// Mutex: a fiber mutex that parks the fiber, never the processor.
//
// Fast path: one CAS. Contended: newcomers may barge in (take the lock ahead of parked
// waiters), which keeps throughput high; but when unlock() finds that the first waiter has
// waited longer than `handoff_after`, it hands the lock straight to that waiter, so no
// waiter starves (Go's sync.Mutex starvation mode works the same way; its bound, 1 ms, is
// our default). handoff_after = 0 makes the mutex strictly FIFO; Duration::max() makes it
// pure barging. A waiter woken to compete and losing keeps its place at the front.
//
// state_: bit 0 locked, bit 1 waiters present (unlock must take the slow path).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "runtime/clock.hpp"
#include "runtime/spinlock.hpp"
#include "runtime/waiter.hpp"

namespace weft::rt {

class Mutex {
 public:
  /// Makes an unlocked mutex that hands off to a waiter older than `handoff_after`.
  explicit Mutex(Duration handoff_after = std::chrono::milliseconds(1))
      : handoff_after_ns_(
            handoff_after == Duration::max()
                ? INT64_MAX
                : std::chrono::duration_cast<std::chrono::nanoseconds>(handoff_after).count()) {}
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  /// Acquires the mutex, parking the calling fiber while another holds it.
  void lock() {
    uint32_t expected = 0;
    if (state_.compare_exchange_weak(expected, kLocked, std::memory_order_acquire,
                                     std::memory_order_relaxed)) {
      return;
    }
    lock_slow();
  }

  /// Acquires the mutex if it is free (even with waiters: barging); returns whether it did.
  bool try_lock() {
    uint32_t s = state_.load(std::memory_order_relaxed);
    while (!(s & kLocked)) {
      if (state_.compare_exchange_weak(s, s | kLocked, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return true;
      }
    }
    return false;
  }

  /// Releases the mutex; the caller must hold it.
  void unlock() {
    uint32_t expected = kLocked;
    if (state_.compare_exchange_strong(expected, 0, std::memory_order_release,
                                       std::memory_order_relaxed)) {
      return;
    }
    unlock_slow();
  }

 private:
  static constexpr uint32_t kLocked = 1, kWaiters = 2;

  struct MutexWaiter : Waiter {
    int64_t since_ns = 0;
    bool handed_off = false;
  };

  void lock_slow();
  void unlock_slow();

  std::atomic<uint32_t> state_{0};
  int64_t handoff_after_ns_;
  Spinlock list_lock_;
  WaitList waiters_;
};

}  // namespace weft::rt
