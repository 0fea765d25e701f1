// Waiter's timed wait (see waiter.hpp): a timer entry on the waiting fiber's stack.
#include "runtime/waiter.hpp"

#include "runtime/scheduler.hpp"
#include "runtime/timer.hpp"

namespace weft::rt {

bool Waiter::wait_until(TimePoint deadline) {
  if (deadline == TimePoint::max()) {  // no time limit (deadline_after saturates to it)
    wait();
    return true;
  }
  timed_out_ = false;
  TimerEntry timer;
  timer.deadline_ns = to_ns(deadline);
  timer.arg = this;
  timer.on_fire = [](void* arg) {
    auto* w = static_cast<Waiter*>(arg);
    // The waiting fiber cancels the timer before it returns, and cancel() waits for this
    // callback: the waiter is alive here even after the claim.
    if (Fiber* f = w->claim()) {
      w->timed_out_ = true;
      detail::unpark(f, false);
    }
  };
  Processor::current()->arm_timer(&timer);
  wait();
  TimerHeap::cancel(&timer);
  return !timed_out_;
}

}  // namespace weft::rt
