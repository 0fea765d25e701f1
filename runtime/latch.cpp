#include "runtime/latch.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace weft::rt {
namespace {

void wake_all(WaitList& list) {
  while (Waiter* w = list.pop_front()) w->wake(false);
}

}  // namespace

void Latch::count_down(int64_t n) {
  std::lock_guard g(lock_);
  count_ -= n;
  if (count_ <= 0) wake_all(waiters_);
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
  std::lock_guard g(lock_);
  count_ += n;
  if (count_ < 0) {
    std::fputs("weft: WaitGroup count went below zero\n", stderr);
    std::abort();
  }
  if (count_ == 0) wake_all(waiters_);
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

int64_t WaitGroup::count() const {
  std::lock_guard g(lock_);
  return count_;
}

}  // namespace weft::rt
