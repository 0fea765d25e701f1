#include "server/compress/compressed_cache.hpp"

#include <mutex>

namespace weft::http {

CompressedCache::Found CompressedCache::find(const void* scope, const FileEntry& file,
                                             ContentCoding coding, bool claim, FileRef& out) {
  const KeyView key = key_of(scope, file, coding);
  const Version version = version_of(file);
  rt::WaitList none;  // a record that is not pending has no waiters
  std::lock_guard g(lock_);
  auto it = map_.find(key);
  if (it != map_.end() && it->second.version != version && !it->second.pending) {
    // The fd cache has a newer (or older) file under this identity: never send this one.
    erase_locked(it, none);
    stale_.fetch_add(1, std::memory_order_relaxed);
    it = map_.end();
  }
  if (it == map_.end()) {
    if (!claim) return Found::absent;
    Record r;
    r.version = version;
    auto [ins, ok] = map_.emplace(Key{key.scope, std::string(key.path), key.coding}, std::move(r));
    lru_.push_front(&ins->first);
    ins->second.lru = lru_.begin();
    entries_.fetch_add(1, std::memory_order_relaxed);
    return Found::claimed;
  }
  Record& r = it->second;
  // A pending compression of another version: its result will be found stale; meanwhile,
  // one compression per key.
  if (r.pending) return Found::pending;
  lru_.splice(lru_.begin(), lru_, r.lru);
  if (!r.rep) return Found::useless;
  out = r.rep;
  return Found::ready;
}

void CompressedCache::store(const void* scope, const FileEntry& file, ContentCoding coding,
                            FileRef rep) {
  rt::WaitList wake;
  {
    std::lock_guard g(lock_);
    auto it = map_.find(key_of(scope, file, coding));
    if (it == map_.end() || !it->second.pending) return;  // not claimed: nothing to end
    Record& r = it->second;
    const std::size_t cost = rep ? rep->size : kUselessCost;
    if (cost > max_bytes_) {
      erase_locked(it, wake);
    } else {
      r.pending = false;
      r.rep = std::move(rep);
      r.cost = cost;
      wake = r.waiters.take_all();
      bytes_.fetch_add(cost, std::memory_order_relaxed);
      evict_locked();
    }
  }
  wake.wake_all();
}

void CompressedCache::drop(const void* scope, const FileEntry& file, ContentCoding coding) {
  rt::WaitList wake;
  {
    std::lock_guard g(lock_);
    auto it = map_.find(key_of(scope, file, coding));
    if (it != map_.end() && it->second.pending) erase_locked(it, wake);
  }
  wake.wake_all();
}

void CompressedCache::wait_pending(const void* scope, const FileEntry& file, ContentCoding coding) {
  rt::Waiter w;
  {
    std::lock_guard g(lock_);
    auto it = map_.find(key_of(scope, file, coding));
    if (it == map_.end() || !it->second.pending) return;
    it->second.waiters.push_back(&w);
  }
  // No timeout: every claim ends in store() or drop(), which wake the list (the workers
  // end each job so, and the Compressor drops what it never ran).
  w.wait();
}

void CompressedCache::erase_locked(Map::iterator it, rt::WaitList& wake) {
  wake = it->second.waiters.take_all();
  bytes_.fetch_sub(it->second.cost, std::memory_order_relaxed);
  entries_.fetch_sub(1, std::memory_order_relaxed);
  lru_.erase(it->second.lru);
  map_.erase(it);  // the representation lives on in the responses that still send it
}

void CompressedCache::evict_locked() {
  // From the least recently used end; pending records (no cost yet) are passed over.
  auto at = lru_.end();
  while (bytes_.load(std::memory_order_relaxed) > max_bytes_ && at != lru_.begin()) {
    --at;
    auto it = map_.find(**at);
    if (it->second.pending) continue;
    auto next = std::next(at);
    rt::WaitList none;  // not pending: no waiters
    erase_locked(it, none);
    evictions_.fetch_add(1, std::memory_order_relaxed);
    at = next;
  }
}

}  // namespace weft::http
