#include "runtime/condition_variable.hpp"

#include <vector>

#include "runtime/scheduler.hpp"

namespace weft::rt {

void ConditionVariable::enqueue(Waiter* w) {
  std::lock_guard g(lock_);
  waiters_.push_back(w);
}

bool ConditionVariable::park_until(Waiter* w, TimePoint deadline) {
  w->wait_until(deadline);
  std::lock_guard g(lock_);
  if (w->linked) {
    waiters_.remove(w);  // still queued: the timer woke us
    return false;
  }
  return true;
}

// Both notifies claim under the lock (a waiter whose timer fired takes the lock to leave
// the list, so none is claimed once it left) and unpark after releasing it: a woken waiter
// may destroy the condition variable at once, so nothing of it is touched after the first
// wake-up (waiter.hpp).

void ConditionVariable::notify_one() {
  Fiber* f = nullptr;
  {
    std::lock_guard g(lock_);
    while (Waiter* w = waiters_.pop_front()) {
      if ((f = w->claim())) break;  // else its timer won: try the next waiter
    }
  }
  if (f) detail::unpark(f, true);
}

void ConditionVariable::notify_all() {
  // The claimed fibers, gathered under the lock: on the stack up to kInline, then on the heap.
  constexpr std::size_t kInline = 16;
  Fiber* claimed[kInline];
  std::size_t n = 0;
  std::vector<Fiber*> more;
  {
    std::lock_guard g(lock_);
    while (Waiter* w = waiters_.pop_front()) {
      Fiber* f = w->claim();
      if (!f) continue;  // its timer won
      if (n < kInline) {
        claimed[n++] = f;
      } else {
        more.push_back(f);
      }
    }
  }
  for (std::size_t i = 0; i < n; ++i) detail::unpark(claimed[i], true);
  for (Fiber* f : more) detail::unpark(f, true);
}

std::size_t ConditionVariable::waiting() const {
  std::lock_guard g(lock_);
  return waiters_.size();
}

}  // namespace weft::rt
