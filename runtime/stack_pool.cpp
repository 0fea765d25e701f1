#include "runtime/stack_pool.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <new>

#include <sys/mman.h>
#include <unistd.h>

#if defined(WEFT_ASAN)
#include <sanitizer/asan_interface.h>
#endif

namespace weft::rt {

namespace {
constexpr unsigned kColours = 64;  // 64 colours x 64 bytes spans one 4 KiB L1 way
}

StackPool::StackPool(std::size_t stack_size)
    : page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {
  stack_size_ = (stack_size + page_ - 1) / page_ * page_;
}

StackPool::~StackPool() {
  for (void* m : mappings_) munmap(m, stack_size_ + page_);
}

Stack StackPool::map_one() {
  std::size_t total = stack_size_ + page_;
  // MAP_NORESERVE: untouched stack pages cost nothing, so do not charge them to overcommit.
  void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  // Each guard page splits the mapping in two VMAs; past vm.max_map_count (65530 here, so
  // about 32k guarded stacks) mprotect fails with ENOMEM. Then run without guards (the
  // unguarded mappings merge) rather than fail, and say so once.
  if (guards_.load(std::memory_order_relaxed) && mprotect(m, page_, PROT_NONE) != 0 &&
      guards_.exchange(false)) {
    std::fputs(
        "weft: vm.max_map_count reached; new fiber stacks get no guard page (raise the "
        "sysctl, or lower the number of concurrent fibers)\n",
        stderr);
  }
  Stack s;
  s.bottom = static_cast<char*>(m) + page_;
  s.size = stack_size_;
  std::lock_guard lock(mu_);
  unsigned colour = (next_colour_++ * 37) % kColours;  // 37: coprime, spreads neighbours
  auto top = reinterpret_cast<std::uintptr_t>(s.bottom) + stack_size_ - colour * 64;
  s.top = reinterpret_cast<void*>(top);
  mappings_.insert(m);
  return s;
}

Stack StackPool::allocate(Cache* cache) {
  if (cache && !cache->free.empty()) {
    Stack s = cache->free.back();
    cache->free.pop_back();
    return s;
  }
  {
    std::lock_guard lock(mu_);
    if (!shared_.empty()) {
      // Refill the cache with a batch so the next allocations are lock-free.
      std::size_t n = cache ? std::min(shared_.size(), kCacheMax / 2) : 1;
      Stack s = shared_.back();
      shared_.pop_back();
      for (std::size_t i = 1; i < n; ++i) {
        cache->free.push_back(shared_.back());
        shared_.pop_back();
      }
      shared_low_ = std::min(shared_low_, shared_.size());
      return s;
    }
  }
  return map_one();
}

void StackPool::release(Cache* cache, Stack stack) {
#if defined(WEFT_ASAN)
  // A fiber ends by switching away from deep inside its frames, which never return, so
  // their redzones stay poisoned in ASan's shadow; the next fiber on this stack would trip
  // over them (seen: a "stack-buffer-overflow" on a local array in LocalQueue's overflow
  // path, and an ASan CHECK failure describing it).
  __asan_unpoison_memory_region(stack.bottom, stack.size);
#endif
  if (cache) {
    if (cache->free.size() < kCacheMax) {
      cache->free.push_back(stack);
      return;
    }
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < kCacheMax / 2; ++i) {
      shared_.push_back(cache->free.back());
      cache->free.pop_back();
    }
    shared_.push_back(stack);
    return;
  }
  std::lock_guard lock(mu_);
  shared_.push_back(stack);
}

std::size_t StackPool::trim(std::size_t keep) {
  std::vector<void*> unmap;
  {
    std::lock_guard lock(mu_);
    // The oldest free stacks (the front) are the coldest; those above the low-water mark
    // were taken and given back since, so they stay.
    const std::size_t idle = std::min(shared_low_, shared_.size());
    const std::size_t n = idle > keep ? idle - keep : 0;
    for (std::size_t i = 0; i < n; ++i) {
      void* m = static_cast<char*>(shared_[i].bottom) - page_;
      mappings_.erase(m);
      unmap.push_back(m);
    }
    shared_.erase(shared_.begin(), shared_.begin() + static_cast<std::ptrdiff_t>(n));
    shared_low_ = shared_.size();
  }
  // Outside the lock: munmap takes the process's mmap lock, and allocate() must not wait.
  for (void* m : unmap) munmap(m, stack_size_ + page_);
  return unmap.size();
}

std::size_t StackPool::mapped() const {
  std::lock_guard lock(mu_);
  return mappings_.size();
}

}  // namespace weft::rt
