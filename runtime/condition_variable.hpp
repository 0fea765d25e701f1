// ConditionVariable: waits for a condition guarded by a weft Mutex (or any lockable whose
// lock parks fibers), parking the fiber.
//
// Waiters queue FIFO; notify_one wakes the oldest. Wakers claim under the list lock, and a
// waiter whose timer fired unlinks itself under that lock, so a notification is never spent
// on a waiter that already timed out; they unpark only after releasing the lock, since a
// woken fiber may destroy the condition variable at once (waiter.hpp). Spurious wake-ups do not
// happen, but use the predicate forms anyway: another fiber may change the condition before the
// woken one relocks.
#pragma once

#include <mutex>

#include "runtime/clock.hpp"
#include "runtime/spinlock.hpp"
#include "runtime/waiter.hpp"

namespace weft::rt {

enum class WaitStatus { notified, timeout };

class ConditionVariable {
 public:
  ConditionVariable() = default;
  ConditionVariable(const ConditionVariable&) = delete;
  ConditionVariable& operator=(const ConditionVariable&) = delete;

  /// Releases `lock`, parks until notified, and reacquires `lock` before returning.
  template <typename Lock>
  void wait(Lock& lock) {
    Waiter w;
    enqueue(&w);
    lock.unlock();
    w.wait();
    lock.lock();
  }

  /// Waits until pred() holds, releasing `lock` while parked.
  template <typename Lock, typename Pred>
  void wait(Lock& lock, Pred pred) {
    while (!pred()) wait(lock);
  }

  /// Like wait(lock), but gives up at `deadline`; returns whether it was notified.
  template <typename Lock>
  WaitStatus wait_until(Lock& lock, TimePoint deadline) {
    Waiter w;
    enqueue(&w);
    lock.unlock();
    bool notified = park_until(&w, deadline);
    lock.lock();
    return notified ? WaitStatus::notified : WaitStatus::timeout;
  }

  /// Waits until pred() holds or `deadline` passes; returns pred()'s final value.
  template <typename Lock, typename Pred>
  bool wait_until(Lock& lock, TimePoint deadline, Pred pred) {
    while (!pred()) {
      if (wait_until(lock, deadline) == WaitStatus::timeout) return pred();
    }
    return true;
  }

  /// Like wait_until with a relative timeout (Duration::max(): none).
  template <typename Lock, typename Pred>
  bool wait_for(Lock& lock, Duration d, Pred pred) {
    return wait_until(lock, deadline_after(d), std::move(pred));
  }

  /// Wakes the oldest waiter, if any.
  void notify_one();

  /// Wakes every waiter.
  void notify_all();

  /// Returns the number of waiting fibers (a snapshot, for tests and metrics).
  std::size_t waiting() const;

 private:
  void enqueue(Waiter* w);
  bool park_until(Waiter* w, TimePoint deadline);

  mutable Spinlock lock_;
  WaitList waiters_;
};

}  // namespace weft::rt
