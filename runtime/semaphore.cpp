#include "runtime/semaphore.hpp"

#include <mutex>

namespace weft::rt {

void Semaphore::acquire() {
  SemWaiter w;
  {
    std::lock_guard g(lock_);
    if (count_ > 0) {
      --count_;
      return;
    }
    waiters_.push_back(&w);
  }
  w.wait();
}

bool Semaphore::try_acquire() {
  std::lock_guard g(lock_);
  if (count_ > 0) {
    --count_;
    return true;
  }
  return false;
}

bool Semaphore::try_acquire_until(TimePoint deadline) {
  SemWaiter w;
  {
    std::lock_guard g(lock_);
    if (count_ > 0) {
      --count_;
      return true;
    }
    if (now() >= deadline) return false;
    waiters_.push_back(&w);
  }
  w.wait_until(deadline);
  std::lock_guard g(lock_);
  if (w.linked) waiters_.remove(&w);  // the timer won: leave the queue
  return w.granted;
}

void Semaphore::release(int64_t n) {
  // Waiters are claimed under the lock (a timed-out waiter takes it before it returns) and
  // woken after it is released, since a woken waiter may destroy the semaphore at once. More
  // than kBatch wake-ups take the lock again, so only release(n) with n <= kBatch may race
  // with the semaphore's destruction.
  constexpr int kBatch = 8;
  while (n > 0) {
    Fiber* woken[kBatch];
    int k = 0;
    {
      std::lock_guard g(lock_);
      while (n > 0 && k < kBatch) {
        auto* w = static_cast<SemWaiter*>(waiters_.pop_front());
        if (!w) {
          count_ += n;
          n = 0;
          break;
        }
        w->granted = true;
        if (Fiber* f = w->claim()) {
          woken[k++] = f;
          --n;
        } else {
          w->granted = false;  // its timer won; the permit goes to the next waiter
        }
      }
    }
    for (int i = 0; i < k; ++i) detail::unpark(woken[i], true);
  }
}

std::size_t Semaphore::waiting() const {
  std::lock_guard g(lock_);
  return waiters_.size();
}

int64_t Semaphore::available() const {
  std::lock_guard g(lock_);
  return count_;
}

}  // namespace weft::rt
