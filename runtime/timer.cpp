#include "runtime/timer.hpp"

#include <mutex>
#include <thread>

namespace weft::rt {

bool TimerHeap::add(TimerEntry* e) {
  std::lock_guard g(lock_);
  e->seq = next_seq_++;
  e->heap.store(this, std::memory_order_relaxed);
  e->index = heap_.size();
  heap_.push_back(e);
  sift_up(e->index);
  publish_earliest();
  return e->index == 0;
}

bool TimerHeap::cancel(TimerEntry* e) {
  // The entry's heap changes only under that heap's lock, so read it, lock that heap and
  // re-check under its lock. fire_due sets `firing` before it clears `heap` (both under the
  // lock), so a null heap read after the lock (or with acquire) shows a firing in progress.
  if (TimerHeap* h = e->heap.load(std::memory_order_acquire)) {
    std::lock_guard g(h->lock_);
    if (e->heap.load(std::memory_order_relaxed) == h) {
      h->remove_at(e->index);
      e->heap.store(nullptr, std::memory_order_relaxed);
      h->publish_earliest();
      return true;
    }
  }
  if (e->firing.load(std::memory_order_acquire)) {
    if (on_cancel_wait) on_cancel_wait(e);
    // on_fire is short (it claims a waiter or queues a cancel), so spin; yield the thread
    // now and then in case the firing thread was preempted.
    for (unsigned spins = 0; e->firing.load(std::memory_order_acquire); ++spins) {
      if (spins % 64 == 63) {
        std::this_thread::yield();
      } else {
        cpu_relax();
      }
    }
  }
  return false;
}

std::size_t TimerHeap::fire_due(int64_t now_ns) {
  if (earliest() > now_ns) return 0;
  std::size_t n = 0;
  while (true) {
    TimerEntry* e = nullptr;
    {
      std::lock_guard g(lock_);
      if (!heap_.empty() && heap_[0]->deadline_ns <= now_ns) {
        e = heap_[0];
        remove_at(0);
        e->firing.store(true, std::memory_order_relaxed);
        e->heap.store(nullptr, std::memory_order_release);
      }
      publish_earliest();
    }
    if (!e) return n;
    // Outside the lock (a callback may arm or cancel other timers of this heap); a
    // concurrent cancel() of `e` waits for the store below, so `e` stays alive meanwhile.
    if (e->on_fire) e->on_fire(e->arg);
    e->firing.store(false, std::memory_order_release);
    ++n;
  }
}

std::size_t TimerHeap::size() const {
  std::lock_guard g(lock_);
  return heap_.size();
}

void TimerHeap::sift_up(std::size_t i) {
  TimerEntry* e = heap_[i];
  while (i > 0) {
    std::size_t parent = (i - 1) / 2;
    if (!less(e, heap_[parent])) break;
    heap_[i] = heap_[parent];
    heap_[i]->index = i;
    i = parent;
  }
  heap_[i] = e;
  e->index = i;
}

void TimerHeap::sift_down(std::size_t i) {
  TimerEntry* e = heap_[i];
  std::size_t n = heap_.size();
  while (true) {
    std::size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && less(heap_[c + 1], heap_[c])) ++c;
    if (!less(heap_[c], e)) break;
    heap_[i] = heap_[c];
    heap_[i]->index = i;
    i = c;
  }
  heap_[i] = e;
  e->index = i;
}

void TimerHeap::remove_at(std::size_t i) {
  TimerEntry* last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;
  heap_[i] = last;
  last->index = i;
  sift_up(i);
  sift_down(last->index);
}

void TimerHeap::publish_earliest() {
  earliest_ns_.store(heap_.empty() ? kNone : heap_[0]->deadline_ns, std::memory_order_release);
}

}  // namespace weft::rt
