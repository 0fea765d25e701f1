#include "runtime/mutex.hpp"

#include <mutex>

#include "runtime/scheduler.hpp"

namespace weft::rt {

namespace {
// Spins before parking: a critical section is often shorter than a park/unpark round trip.
// Picked, to be measured with the lock benchmark.
constexpr int kSpins = 40;
}  // namespace

void Mutex::lock_slow() {
  // Spinning only pays when the holder can be running on another processor and release the
  // lock meanwhile; with one processor the holder is parked or queued behind us.
  Processor* p = Processor::current();
  if (p && p->runtime().processors() > 1) {
    for (int i = 0; i < kSpins; ++i) {
      if (try_lock()) return;
      cpu_relax();
    }
  }
  MutexWaiter w;
  bool first = true;
  while (true) {
    {
      std::lock_guard g(list_lock_);
      // Either take the lock or mark waiters while it is still held, atomically: marking
      // after an unlock slipped in would leave us parked with nobody to wake us.
      uint32_t s = state_.load(std::memory_order_relaxed);
      while (true) {
        if (!(s & kLocked)) {
          if (state_.compare_exchange_weak(s, s | kLocked, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
            return;
          }
        } else if (state_.compare_exchange_weak(s, s | kWaiters, std::memory_order_relaxed,
                                                std::memory_order_relaxed)) {
          break;
        }
      }
      if (first) {
        w.since_ns = to_ns(now());
        waiters_.push_back(&w);
        first = false;
      } else {
        waiters_.push_front(&w);  // lost the race after a wake: keep our place
      }
    }
    w.wait();
    if (w.handed_off) return;  // unlock() passed ownership to us
    // Woken to compete; we are off the list, so nobody can touch w until we requeue it.
    w.reset();
    if (try_lock()) return;
  }
}

void Mutex::unlock_slow() {
  MutexWaiter* w = nullptr;
  {
    std::lock_guard g(list_lock_);
    w = static_cast<MutexWaiter*>(waiters_.pop_front());
    uint32_t rest = waiters_.empty() ? 0 : kWaiters;
    if (!w) {
      state_.store(0, std::memory_order_release);
      return;
    }
    if (to_ns(now()) - w->since_ns >= handoff_after_ns_) {
      w->handed_off = true;  // the lock stays held, now by w
      state_.store(kLocked | rest, std::memory_order_release);
    } else {
      state_.store(rest, std::memory_order_release);  // free: w competes with newcomers
    }
  }
  // Only unlock() wakes mutex waiters, and w is off the list: nobody else can touch it.
  w->wake();
}

}  // namespace weft::rt
