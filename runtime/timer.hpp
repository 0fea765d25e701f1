// TimerHeap: one processor's timers, as a binary min-heap of entries owned by their waiters.
//
// An entry lives on the stack of the fiber that waits for it, which always calls cancel()
// before returning, whether the timer fired or not, so the heap never points at a dead
// stack. The heap is guarded by a spinlock because a fiber woken by something else may run
// on another processor and cancel its entry from there.
//
// An entry's states: idle (heap null) -> queued (heap set) -> firing (heap null, `firing`
// set, on_fire running on the firing thread, outside the lock) -> idle. cancel() of a queued
// entry unlinks it; of a firing one it waits until on_fire has returned. So once cancel()
// has returned, no callback of that entry runs or is still running, and the entry may die:
// on_fire may touch the waiter's stack frame freely. The firing thread's last access to an
// entry is the release store that clears `firing`, after on_fire has returned: so on_fire
// must neither cancel its own entry nor let its owner free it without cancelling first (it
// may wake a fiber that cancels, or queue work for later, as the I/O drivers do).
// `earliest_ns` lets a firing thread skip the lock when nothing is due. Several threads may
// fire one heap at once (a processor's fiber wake-ups are fired by any processor that finds
// them due, see scheduler.hpp): each takes entries in deadline order, and each entry fires
// once, never before its deadline.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "runtime/clock.hpp"
#include "runtime/spinlock.hpp"

namespace weft::rt {

class TimerHeap;

struct TimerEntry {
  int64_t deadline_ns = 0;
  uint64_t seq = 0;  // ties broken by insertion order
  std::size_t index = 0;
  std::atomic<TimerHeap*> heap{nullptr};  // set while queued; changed under that heap's lock
  std::atomic<bool> firing{false};        // set while on_fire runs
  void (*on_fire)(void* arg) = nullptr;   // runs on the firing thread: keep it short
  void* arg = nullptr;
};

class TimerHeap {
 public:
  static constexpr int64_t kNone = std::numeric_limits<int64_t>::max();

  /// Queues `e` to fire at e->deadline_ns; the caller keeps `e` alive until it fired or
  /// cancel() returned. Returns whether `e` is now the earliest entry.
  bool add(TimerEntry* e);

  /// Removes `e` if it has not fired, or waits until its firing has finished; returns true
  /// if it was removed before firing. Callable from any thread but the firing one; after it
  /// returns, `e` is no longer referenced and no callback of it runs.
  static bool cancel(TimerEntry* e);

  /// Test seam: called (when set) each time cancel() finds its entry firing, before it
  /// waits, so a test can prove that cancel() waits for a callback held open.
  static inline void (*on_cancel_wait)(TimerEntry* e) = nullptr;

  /// Fires every entry due at `now_ns`, in deadline order; returns the number fired. Any
  /// thread, also several at once.
  std::size_t fire_due(int64_t now_ns);

  /// Returns the earliest deadline in ns, or kNone.
  int64_t earliest() const { return earliest_ns_.load(std::memory_order_acquire); }

  /// Returns the number of queued entries.
  std::size_t size() const;

 private:
  bool less(const TimerEntry* a, const TimerEntry* b) const {
    return a->deadline_ns < b->deadline_ns || (a->deadline_ns == b->deadline_ns && a->seq < b->seq);
  }
  void sift_up(std::size_t i);
  void sift_down(std::size_t i);
  void remove_at(std::size_t i);
  void publish_earliest();

  mutable Spinlock lock_;
  std::vector<TimerEntry*> heap_;
  uint64_t next_seq_ = 0;
  std::atomic<int64_t> earliest_ns_{kNone};
};

}  // namespace weft::rt
