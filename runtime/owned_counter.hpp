// bump_owned: adds to a counter that one thread writes and any thread reads.
//
// A plain load and store, not a locked read-modify-write: the owner is the only writer, so no
// increment can be lost, and readers see some recent value (relaxed). On x86 a locked add
// costs about 20 cycles on every hot-path event; this costs a load and a store.
#pragma once

#include <atomic>
#include <cstdint>

namespace weft::rt {

/// Adds `n` to `counter`, which only the calling thread ever writes.
inline void bump_owned(std::atomic<std::uint64_t>& counter, std::uint64_t n = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace weft::rt
