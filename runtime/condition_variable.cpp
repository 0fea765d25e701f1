#include "runtime/condition_variable.hpp"

#include "runtime/scheduler.hpp"

namespace weft::rt {

void ConditionVariable::enqueue(Waiter* w) {
  std::lock_guard g(lock_);
  waiters_.push_back(w);
}

bool ConditionVariable::park_until(Waiter* w, TimerEntry* timer, TimePoint deadline) {
  timer->deadline_ns = to_ns(deadline);
  timer->on_fire = [](void* arg) { static_cast<Waiter*>(arg)->wake(false); };
  timer->arg = w;
  Processor::current()->timers().add(timer);
  w->wait();
  TimerHeap::cancel(timer);
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
