// Spinlock: a test-and-test-and-set lock for critical sections of a few instructions (wait
// lists, timer heaps). Never park or switch fibers while holding one.
#pragma once

#include <atomic>

namespace weft::rt {

/// Hints the CPU that this is a spin-wait loop.
inline void cpu_relax() {
  __builtin_ia32_pause();
}

class Spinlock {
 public:
  /// Acquires the lock, spinning (with pause) while another thread holds it.
  void lock() {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) cpu_relax();
    }
  }
  /// Acquires the lock if it is free; returns whether it did.
  bool try_lock() {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  /// Releases the lock.
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace weft::rt
