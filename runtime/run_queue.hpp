// Run queues: a bounded per-processor queue that other processors can steal from, and the
// runtime's shared (global) queue for work from outside and for overflow.
//
// LocalQueue follows Go's runq: a 256-slot ring; only the owner pushes (at the tail); the
// owner and thieves take from the head with a CAS, so each fiber is taken exactly once. A
// thief copies up to half the entries, then claims them all with one CAS on head; if the CAS
// fails the copy is discarded. Slots are atomics so that a thief's read racing the owner's
// overwrite of a slot it will never claim is not a data race.
//
// GlobalQueue is an intrusive FIFO under a mutex with a lock-free length for cheap checks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "runtime/fiber.hpp"

namespace weft::rt {

class GlobalQueue {
 public:
  /// Appends one fiber; any thread.
  void push(Fiber* f) { push_list(f, f, 1); }

  /// Appends a linked list first..last (linked through `next`) of n fibers; any thread.
  void push_list(Fiber* first, Fiber* last, std::size_t n) {
    last->next = nullptr;
    std::lock_guard lock(mu_);
    if (tail_) {
      tail_->next = first;
    } else {
      head_ = first;
    }
    tail_ = last;
    len_.store(len_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }

  /// Removes and returns the oldest fiber, or nullptr; any thread.
  Fiber* pop() {
    if (empty()) return nullptr;
    std::lock_guard lock(mu_);
    Fiber* f = head_;
    if (!f) return nullptr;
    head_ = f->next;
    if (!head_) tail_ = nullptr;
    f->next = nullptr;
    len_.store(len_.load(std::memory_order_relaxed) - 1, std::memory_order_release);
    return f;
  }

  /// Returns whether the queue looked empty (a hint: it may change at once).
  bool empty() const { return len_.load(std::memory_order_acquire) == 0; }

  /// Returns the approximate length.
  std::size_t size() const { return len_.load(std::memory_order_relaxed); }

 private:
  std::mutex mu_;
  Fiber* head_ = nullptr;
  Fiber* tail_ = nullptr;
  std::atomic<std::size_t> len_{0};
};

class LocalQueue {
 public:
  static constexpr uint32_t kCapacity = 256;  // Go's and Tokio's choice

  LocalQueue() {
    for (auto& s : slots_) s.store(nullptr, std::memory_order_relaxed);
  }

  /// Owner only: appends f, or when full moves half the queue plus f to `overflow`.
  void push(Fiber* f, GlobalQueue& overflow) {
    while (true) {
      uint32_t h = head_.load(std::memory_order_acquire);
      uint32_t t = tail_.load(std::memory_order_relaxed);
      if (t - h < kCapacity) {
        slots_[t % kCapacity].store(f, std::memory_order_relaxed);
        tail_.store(t + 1, std::memory_order_release);
        return;
      }
      if (push_overflow(f, h, t, overflow)) return;
      // A thief took some entries meanwhile; there is room now.
    }
  }

  /// Owner (or anyone): removes and returns the oldest fiber, or nullptr.
  Fiber* pop() {
    uint32_t h = head_.load(std::memory_order_acquire);
    while (true) {
      uint32_t t = tail_.load(std::memory_order_acquire);
      if (h == t) return nullptr;
      Fiber* f = slots_[h % kCapacity].load(std::memory_order_relaxed);
      if (head_.compare_exchange_weak(h, h + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        return f;
      }
    }
  }

  /// Thief: moves about half of this queue's fibers into `dst` (the thief's own, empty
  /// queue) and returns one more to run now, or nullptr when there was nothing to take.
  Fiber* steal_into(LocalQueue& dst) {
    Fiber* batch[kCapacity / 2];
    uint32_t n;
    while (true) {
      uint32_t h = head_.load(std::memory_order_acquire);
      uint32_t t = tail_.load(std::memory_order_acquire);
      n = t - h;
      n = n - n / 2;
      if (n == 0) return nullptr;
      if (n > kCapacity / 2) continue;  // read head and tail at different moments; retry
      for (uint32_t i = 0; i < n; ++i) {
        batch[i] = slots_[(h + i) % kCapacity].load(std::memory_order_relaxed);
      }
      if (head_.compare_exchange_weak(h, h + n, std::memory_order_acq_rel,
                                      std::memory_order_relaxed)) {
        break;
      }
    }
    uint32_t dt = dst.tail_.load(std::memory_order_relaxed);
    for (uint32_t i = 0; i + 1 < n; ++i) {
      dst.slots_[(dt + i) % kCapacity].store(batch[i], std::memory_order_relaxed);
    }
    dst.tail_.store(dt + n - 1, std::memory_order_release);
    return batch[n - 1];
  }

  /// Returns the oldest queued fiber without taking it, or nullptr; any thread. Racy: the
  /// fiber may be taken (and even requeued elsewhere) at once; use it as a hint only.
  Fiber* peek() const {
    uint32_t h = head_.load(std::memory_order_acquire);
    uint32_t t = tail_.load(std::memory_order_acquire);
    if (h == t || t - h > kCapacity) return nullptr;
    return slots_[h % kCapacity].load(std::memory_order_relaxed);
  }

  /// Returns the approximate number of queued fibers; any thread.
  uint32_t size() const {
    uint32_t t = tail_.load(std::memory_order_acquire);
    uint32_t h = head_.load(std::memory_order_acquire);
    return t - h;
  }

  /// Returns whether the queue looked empty; any thread.
  bool empty() const { return size() == 0; }

 private:
  // Moves half of a full queue, then f, to the global queue in one locked append.
  bool push_overflow(Fiber* f, uint32_t h, uint32_t t, GlobalQueue& overflow) {
    uint32_t n = (t - h) / 2;
    Fiber* batch[kCapacity / 2];
    for (uint32_t i = 0; i < n; ++i) {
      batch[i] = slots_[(h + i) % kCapacity].load(std::memory_order_relaxed);
    }
    if (!head_.compare_exchange_strong(h, h + n, std::memory_order_acq_rel,
                                       std::memory_order_relaxed)) {
      return false;
    }
    for (uint32_t i = 0; i + 1 < n; ++i) batch[i]->next = batch[i + 1];
    batch[n - 1]->next = f;
    overflow.push_list(batch[0], f, n + 1);
    return true;
  }

  alignas(64) std::atomic<uint32_t> head_{0};
  alignas(64) std::atomic<uint32_t> tail_{0};
  std::atomic<Fiber*> slots_[kCapacity];
};

}  // namespace weft::rt
