#include "runtime/condition_variable.hpp"

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

void ConditionVariable::notify_one() {
  std::lock_guard g(lock_);
  while (Waiter* w = waiters_.pop_front()) {
    if (w->wake()) return;  // else its timer won: try the next waiter
  }
}

void ConditionVariable::notify_all() {
  std::lock_guard g(lock_);
  while (Waiter* w = waiters_.pop_front()) w->wake();
}

}  // namespace weft::rt
