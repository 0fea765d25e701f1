// Semaphore: a counting semaphore whose waiters park their fibers.
//
// release() hands a permit straight to the oldest waiter (FIFO), so a released permit
// cannot be stolen by a newcomer while a waiter is queued. Timed waits put a timer on the
// waiter's processor; the first of "permit granted" and "timer fired" wins the waiter's
// claim, and a permit that finds its waiter already timed out goes to the next one.
#pragma once

#include <cstdint>

#include "runtime/clock.hpp"
#include "runtime/spinlock.hpp"
#include "runtime/waiter.hpp"

namespace weft::rt {

class Semaphore {
 public:
  /// Makes a semaphore holding `initial` permits.
  explicit Semaphore(int64_t initial = 0) : count_(initial) {}
  Semaphore(const Semaphore&) = delete;
  Semaphore& operator=(const Semaphore&) = delete;

  /// Takes a permit, parking until one is available.
  void acquire();

  /// Takes a permit if one is available now; returns whether it did.
  bool try_acquire();

  /// Takes a permit, parking until one is available or `deadline` passes; returns whether
  /// it got one.
  bool try_acquire_until(TimePoint deadline);

  /// Takes a permit, waiting at most `d` (Duration::max(): no limit); returns whether it
  /// got one.
  bool try_acquire_for(Duration d) { return try_acquire_until(deadline_after(d)); }

  /// Adds `n` permits, waking up to `n` waiters.
  void release(int64_t n = 1);

  /// Returns the number of free permits (a snapshot).
  int64_t available() const;

  /// Returns the number of fibers parked for a permit (a snapshot, for tests and
  /// diagnostics).
  std::size_t waiting() const;

 private:
  struct SemWaiter : Waiter {
    bool granted = false;
  };

  mutable Spinlock lock_;
  int64_t count_;
  WaitList waiters_;
};

}  // namespace weft::rt
