// Waiter: one fiber waiting for one event that one of several wakers may deliver.
//
// The waker's claim is a CAS (pending -> done), so exactly one waker wins. The winner reads
// the fiber before its claim and unparks it after: once the state is done the waiting fiber
// may return and its stack (where the Waiter lives) be reused, so the winner touches only the
// Fiber afterwards. Fiber control blocks are pooled for the runtime's life, so an unpark that
// lands after the fiber moved on is memory-safe; it leaves at most a stale permit, which the
// permit model allows (parks loop on their condition). The waiting fiber never spins.
// Wakers that hold a wait list's lock claim under that lock, so a fiber that woke for
// another reason can take the lock and unlink itself safely, but unpark only after they
// release it: the woken fiber may destroy the object that holds the lock (a WaitGroup on its
// stack, a one-shot Semaphore) as soon as it runs, so a waker must touch nothing of that
// object after its first wake-up (see claim() and WaitList::take_all()).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/clock.hpp"
#include "runtime/fiber.hpp"
#include "runtime/spinlock.hpp"

namespace weft::rt {

class Waiter {
 public:
  enum : uint32_t { kPending = 0, kDone = 1 };

  /// Makes a waiter for the calling fiber.
  Waiter() : fiber_(current_fiber()) {}
  /// Makes a waiter for `f` (used when a fiber waits on behalf of a known fiber).
  explicit Waiter(Fiber* f) : fiber_(f) {}

  /// Points the waiter at the calling fiber (for waiters made outside a fiber).
  void bind_current() { fiber_ = current_fiber(); }

  /// Claims the waiter and wakes its fiber (next on this processor when `lifo`); returns
  /// false when another waker already did.
  bool wake(bool lifo = true) {
    Fiber* f = claim();
    if (!f) return false;
    detail::unpark(f, lifo);
    return true;
  }

  /// Claims the waiter without waking its fiber and returns that fiber, for the caller to
  /// pass to detail::unpark() once its locks are released; nullptr when another waker (or
  /// the waiter's own timeout) claimed it first. After a claim *this may be gone.
  Fiber* claim() {
    Fiber* f = fiber_;  // read before the claim: after it, *this may be gone
    uint32_t expected = kPending;
    if (!state_.compare_exchange_strong(expected, kDone, std::memory_order_acq_rel)) {
      return nullptr;
    }
    return f;
  }

  /// Parks until some waker has claimed this waiter.
  void wait() {
    while (state_.load(std::memory_order_acquire) != kDone) park();
  }

  /// Parks until some waker has claimed this waiter, or until `deadline`, when a timer on
  /// this processor claims it; returns false when the timer did. When it returns, the timer
  /// is cancelled and no longer running, so the waiter may go out of scope.
  bool wait_until(TimePoint deadline);

  /// Makes a finished waiter pending again, for another wait; only when no waker can reach
  /// it (it is on no list).
  void reset() { state_.store(kPending, std::memory_order_relaxed); }

  /// Returns whether some waker has claimed the waiter.
  bool claimed() const { return state_.load(std::memory_order_acquire) != kPending; }

  /// Claims the waiter for its own fiber (e.g. on timeout) so later wakers back off;
  /// returns false when a waker claimed it first.
  bool cancel() { return claim() != nullptr; }

  Fiber* fiber() const { return fiber_; }

  Waiter* next = nullptr;  // intrusive links for wait lists, guarded by the list's lock
  Waiter* prev = nullptr;
  bool linked = false;

 private:
  Fiber* fiber_;
  std::atomic<uint32_t> state_{kPending};
  bool timed_out_ = false;  // written by the timer's callback, read after cancelling it
};

/// An intrusive FIFO of waiters; the owner's lock guards it.
class WaitList {
 public:
  /// Appends w.
  void push_back(Waiter* w) {
    w->linked = true;
    w->next = nullptr;
    w->prev = tail_;
    if (tail_) {
      tail_->next = w;
    } else {
      head_ = w;
    }
    tail_ = w;
  }
  /// Prepends w (for a waiter that lost a race and keeps its place).
  void push_front(Waiter* w) {
    w->linked = true;
    w->prev = nullptr;
    w->next = head_;
    if (head_) {
      head_->prev = w;
    } else {
      tail_ = w;
    }
    head_ = w;
  }
  /// Removes and returns the first waiter, or nullptr.
  Waiter* pop_front() {
    Waiter* w = head_;
    if (w) remove(w);
    return w;
  }
  /// Returns the first waiter without removing it, or nullptr.
  Waiter* front() const { return head_; }
  /// Unlinks w, which must be in this list.
  void remove(Waiter* w) {
    if (w->prev) {
      w->prev->next = w->next;
    } else {
      head_ = w->next;
    }
    if (w->next) {
      w->next->prev = w->prev;
    } else {
      tail_ = w->prev;
    }
    w->next = w->prev = nullptr;
    w->linked = false;
  }
  bool empty() const { return head_ == nullptr; }
  /// Returns the number of waiters (walks the list: for snapshots, not hot paths).
  std::size_t size() const {
    std::size_t n = 0;
    for (Waiter* w = head_; w; w = w->next) ++n;
    return n;
  }
  /// Moves every waiter to the returned list and leaves this one empty; for waking a list
  /// whose waiters cannot leave it by themselves (no timeouts) after the lock is released.
  WaitList take_all() {
    WaitList all = *this;
    head_ = tail_ = nullptr;
    return all;
  }
  /// Wakes and unlinks every waiter of a list that take_all() returned.
  void wake_all(bool lifo = false) {
    // pop_front() writes to w before its wake-up, never after.
    while (Waiter* w = pop_front()) w->wake(lifo);
  }

 private:
  Waiter* head_ = nullptr;
  Waiter* tail_ = nullptr;
};

}  // namespace weft::rt
