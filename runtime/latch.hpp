// Latch and WaitGroup: wait for a count of events to reach zero, parking the fiber.
//
// Latch is single-use (like std::latch): a fixed count, count_down(), wait(). WaitGroup is
// Go's: add() before starting work, done() when each piece ends, wait() until all ended;
// it can be reused once it reached zero.
#pragma once

#include <cstdint>

#include "runtime/spinlock.hpp"
#include "runtime/waiter.hpp"

namespace weft::rt {

class Latch {
 public:
  /// Makes a latch that opens after `count` count_down()s.
  explicit Latch(int64_t count) : count_(count) {}
  Latch(const Latch&) = delete;
  Latch& operator=(const Latch&) = delete;

  /// Decrements the count by n; opening the latch wakes every waiter.
  void count_down(int64_t n = 1);

  /// Returns whether the latch is open.
  bool try_wait() const;

  /// Parks until the latch is open.
  void wait();

  /// Returns the number of fibers parked in wait() (a snapshot, for tests and diagnostics).
  std::size_t waiting() const;

  /// count_down(n), then wait().
  void arrive_and_wait(int64_t n = 1) {
    count_down(n);
    wait();
  }

 private:
  mutable Spinlock lock_;
  int64_t count_;
  WaitList waiters_;
};

class WaitGroup {
 public:
  WaitGroup() = default;
  WaitGroup(const WaitGroup&) = delete;
  WaitGroup& operator=(const WaitGroup&) = delete;

  /// Adds n (may be negative) to the count; reaching zero wakes every waiter. The count
  /// must never go below zero.
  void add(int64_t n = 1);

  /// Marks one piece of work done (add(-1)).
  void done() { add(-1); }

  /// Parks until the count is zero.
  void wait();

  /// Returns the current count (a snapshot).
  int64_t count() const;

  /// Returns the number of fibers parked in wait() (a snapshot, for tests and diagnostics).
  std::size_t waiting() const;

 private:
  mutable Spinlock lock_;
  int64_t count_ = 0;
  WaitList waiters_;
};

}  // namespace weft::rt
