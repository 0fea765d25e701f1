// Connection generations (fd_generation.hpp): one counter per descriptor number, in chunks
// allocated on first use and kept for the life of the process (descriptor numbers are dense
// and reused, so the table stays as large as the most descriptors ever open at once).
#include "runtime/fd_generation.hpp"

#include <atomic>
#include <cstddef>

namespace weft::rt::fd_generation {
namespace {

// 4,096 numbers per chunk, 4,096 chunks: numbers up to 16M, far above any RLIMIT_NOFILE
// a server runs with. Picked so that a chunk is one 16 KiB allocation.
constexpr unsigned kChunkBits = 12;
constexpr std::size_t kChunkSize = std::size_t{1} << kChunkBits;
constexpr std::size_t kChunks = 4096;

using Chunk = std::atomic<uint32_t>[kChunkSize];
std::atomic<std::atomic<uint32_t>*> chunks[kChunks];

// Returns fd's counter, allocating its chunk when `make`; nullptr when there is none.
std::atomic<uint32_t>* counter(int fd, bool make) {
  if (fd < 0) return nullptr;
  const auto n = static_cast<std::size_t>(fd);
  const std::size_t c = n >> kChunkBits;
  if (c >= kChunks) return nullptr;
  std::atomic<uint32_t>* chunk = chunks[c].load(std::memory_order_acquire);
  if (!chunk && make) {
    auto* fresh = new Chunk{};
    if (chunks[c].compare_exchange_strong(chunk, fresh, std::memory_order_acq_rel)) {
      chunk = fresh;
    } else {
      delete[] fresh;  // another thread's chunk won: `chunk` holds it now
    }
  }
  return chunk ? &chunk[n & (kChunkSize - 1)] : nullptr;
}

}  // namespace

uint32_t current(int fd) {
  std::atomic<uint32_t>* g = counter(fd, false);
  return g ? g->load(std::memory_order_acquire) : 0;
}

uint32_t begin_connection(int fd) {
  std::atomic<uint32_t>* g = counter(fd, true);
  if (!g) return 0;
  uint32_t v = g->load(std::memory_order_relaxed);
  v += is_connection(v) ? 2 : 1;  // odd already: a connection closed without io::close
  g->store(v, std::memory_order_release);
  return v;
}

void end_connection(int fd) {
  std::atomic<uint32_t>* g = counter(fd, false);
  if (!g) return;
  const uint32_t v = g->load(std::memory_order_relaxed);
  if (is_connection(v)) g->store(v + 1, std::memory_order_release);
}

}  // namespace weft::rt::fd_generation
