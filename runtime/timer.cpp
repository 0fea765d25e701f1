#include "runtime/timer.hpp"

#include <mutex>

namespace weft::rt {

void TimerHeap::add(TimerEntry* e) {
  std::lock_guard g(lock_);
  e->seq = next_seq_++;
  e->heap = this;
  e->index = heap_.size();
  heap_.push_back(e);
  sift_up(e->index);
  publish_earliest();
}

bool TimerHeap::cancel(TimerEntry* e) {
  // The entry's heap can only change from non-null to null (when it fires or is
  // cancelled), so read it, lock that heap, and re-check under its lock.
  TimerHeap* h = __atomic_load_n(&e->heap, __ATOMIC_ACQUIRE);
  if (!h) return false;
  std::lock_guard g(h->lock_);
  if (e->heap != h) return false;
  h->remove_at(e->index);
  __atomic_store_n(&e->heap, nullptr, __ATOMIC_RELEASE);
  h->publish_earliest();
  return true;
}

std::size_t TimerHeap::fire_due(int64_t now_ns) {
  if (earliest() > now_ns) return 0;
  std::size_t n = 0;
  std::lock_guard g(lock_);
  while (!heap_.empty() && heap_[0]->deadline_ns <= now_ns) {
    TimerEntry* e = heap_[0];
    remove_at(0);
    __atomic_store_n(&e->heap, nullptr, __ATOMIC_RELEASE);
    // Under the lock: a concurrent cancel() waits for this, so `e` stays alive meanwhile.
    if (e->on_fire) e->on_fire(e->arg);
    ++n;
  }
  publish_earliest();
  return n;
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
