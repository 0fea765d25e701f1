// StackPool: fiber stacks, mmap'd with a guard page below each, reused instead of unmapped.
//
// On these machines a first touch of a fresh page costs about 15 us, so a stack, once its
// pages are touched, is kept for the next fiber rather than returned to the kernel: the pool
// never unmaps or MADV_DONTNEEDs on the hot path. After a burst, trim() (called periodically
// off the hot path) unmaps the stacks the shared list did not need since the last trim: its
// low-water mark. That is the hysteresis: a stack comes back to the kernel only after a
// whole period unused, so steady load never pays the fault again, and a burst's peak is not
// kept for ever. Each processor keeps a small private cache
// (no locks); overflow and refills go through a shared list under a mutex.
//
// Each stack also gets a "colour": its usable top is lowered by a multiple of 64 bytes (up
// to 4 KiB), so that the hot top frames of many fibers do not all land in the same L1 sets.
//
// Thread safety: allocate/release with a cache pointer are for that cache's owner thread;
// the shared list is locked. All stacks are unmapped when the pool is destroyed.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <unordered_set>
#include <vector>

namespace weft::rt {

struct Stack {
  void* bottom = nullptr;  // lowest usable byte (the guard page lies just below)
  void* top = nullptr;     // one past the highest usable byte, 64-byte aligned, coloured
  std::size_t size = 0;    // usable bytes from bottom to the uncoloured top
};

class StackPool {
 public:
  /// A processor-private cache of free stacks.
  struct Cache {
    std::vector<Stack> free;
  };

  /// Creates a pool of stacks of `stack_size` usable bytes (rounded up to whole pages).
  explicit StackPool(std::size_t stack_size);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  /// Returns a stack from `cache` (may be null), the shared list, or a fresh mapping; throws
  /// std::bad_alloc when the kernel refuses memory.
  Stack allocate(Cache* cache);

  /// Gives a stack back to `cache` (may be null), spilling half to the shared list when full.
  void release(Cache* cache, Stack stack);

  /// Returns the usable size of every stack.
  std::size_t stack_size() const { return stack_size_; }

  /// Returns how many stacks are mapped now (for tests and benchmarks).
  std::size_t mapped() const;

  /// Unmaps the free stacks of the shared list that stayed unused since the previous call
  /// (its low-water mark), keeping at least `keep`; returns how many were unmapped.
  std::size_t trim(std::size_t keep);

 private:
  static constexpr std::size_t kCacheMax = 64;  // picked: covers bursts of spawn/exit

  Stack map_one();

  std::size_t stack_size_;
  std::size_t page_;
  mutable std::mutex mu_;
  std::vector<Stack> shared_;           // oldest first: allocate() takes from the back
  std::size_t shared_low_ = 0;          // fewest stacks shared_ held since the last trim()
  std::unordered_set<void*> mappings_;  // every mapping, for trim() and the destructor
  unsigned next_colour_ = 0;
  std::atomic<bool> guards_{true};
};

}  // namespace weft::rt
