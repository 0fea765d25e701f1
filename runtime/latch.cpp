#include "runtime/latch.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace weft::rt {
void Latch::count_down(int64_t n) {
  WaitList woken;
  {
    std::lock_guard g(lock_);
    count_ -= n;
    if (count_ <= 0) woken = waiters_.take_all();
  }
  // After the lock: a woken waiter may destroy the latch right away.
  woken.wake_all();
}

bool Latch::try_wait() const {
  std::lock_guard g(lock_);
  return count_ <= 0;
}

void Latch::wait() {
  Waiter w;
  {
    std::lock_guard g(lock_);
    if (count_ <= 0) return;
    waiters_.push_back(&w);
  }
  w.wait();
}

void WaitGroup::add(int64_t n) {
  WaitList woken;
  {
    std::lock_guard g(lock_);
    count_ += n;
    if (count_ < 0) {
      std::fputs("weft: WaitGroup count went below zero\n", stderr);
      std::abort();
    }
    if (count_ == 0) woken = waiters_.take_all();
  }
  // After the lock: the usual waiter returns from wait() and its WaitGroup goes out of
  // scope while the last done() is still here (seen: a crash in the 10k-connection test).
  woken.wake_all();
}

void WaitGroup::wait() {
  Waiter w;
  {
    std::lock_guard g(lock_);
    if (count_ == 0) return;
    waiters_.push_back(&w);
  }
  w.wait();
}

std::size_t Latch::waiting() const {
  std::lock_guard g(lock_);
  return waiters_.size();
}

std::size_t WaitGroup::waiting() const {
  std::lock_guard g(lock_);
  return waiters_.size();
}

int64_t WaitGroup::count() const {
  std::lock_guard g(lock_);
  return count_;
}

}  // namespace weft::rt
