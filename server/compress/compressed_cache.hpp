// CompressedCache: the compressed representations of files, each made once, kept in memory
// within a byte bound, least recently used dropped first.
//
// A record is keyed by where the file was found (its fd cache, a `scope`, and its path) and a
// coding, and remembers the file's identity and version it was made from (device, inode,
// size, mtime and ctime, to the nanosecond). A lookup with a file of another identity or
// version drops the record: the fd cache hands out a new FileEntry as soon as it learns that
// a file changed, was replaced or renamed over (fd_cache.hpp), so the first request after a
// change finds the old representation stale, drops it and never sends it. (Keyed by identity
// alone, a file renamed over would leave its old representation behind until evicted.)
//
// States of a record: pending (claimed by one lookup, whose compression runs on a worker; every
// other lookup of the same key gets nothing and starts nothing) -> ready (the representation,
// a FileEntry whose bytes are the compressed body) or useless (the coding did not make the
// body smaller: remembered, so that it is not tried again) -> dropped (stale, evicted, or
// abandoned by a compression that failed). Ready and useless records count in the bound (a
// useless one for kUselessCost); pending ones are never evicted.
//
// Threads: any thread, at once; one spinlock guards the map and the LRU list for a few
// instructions per call (the processors look up, the workers store).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <unordered_map>

#include "runtime/spinlock.hpp"
#include "runtime/waiter.hpp"
#include "server/files/file_entry.hpp"
#include "server/http/accept_encoding.hpp"

namespace weft::http {

class CompressedCache {
 public:
  /// What a lookup found.
  enum class Found : std::uint8_t {
    ready,    // the representation (returned)
    claimed,  // nothing; the caller now owns the key's compression and must store() or drop()
    pending,  // nothing; another caller's compression of it runs
    useless,  // nothing; the coding does not shrink this version of the file
    absent,   // nothing, and the caller did not ask to claim it
  };

  /// What a record of a useless coding counts in the bound: a record's own memory, roughly.
  static constexpr std::size_t kUselessCost = 128;

  /// Makes an empty cache that keeps at most `max_bytes` of representations.
  explicit CompressedCache(std::size_t max_bytes) : max_bytes_(max_bytes) {}
  CompressedCache(const CompressedCache&) = delete;
  CompressedCache& operator=(const CompressedCache&) = delete;

  /// Returns what the cache holds for `file` (found in `scope`: its fd cache) in `coding`
  /// (the representation in `out` when ready); with `claim`, an absent key (or a stale one,
  /// dropped) becomes pending, claimed.
  Found find(const void* scope, const FileEntry& file, ContentCoding coding, bool claim,
             FileRef& out);

  /// Ends the claim on (`scope`, `file`, `coding`): keeps `rep` (its bytes, its size) as
  /// ready, or the coding as useless when `rep` is empty; drops the record instead when `rep`
  /// alone is larger than the bound. Evicts least recently used records down to the bound.
  void store(const void* scope, const FileEntry& file, ContentCoding coding, FileRef rep);

  /// Ends the claim on (`scope`, `file`, `coding`) without a result (the compression failed
  /// or was not run): the next lookup may claim it again.
  void drop(const void* scope, const FileEntry& file, ContentCoding coding);

  /// Parks the calling fiber until the pending record of (`scope`, `file`, `coding`) ends
  /// (stored, useless or dropped); returns at once when there is none pending. For a client
  /// that refuses identity: every other request is answered without waiting.
  void wait_pending(const void* scope, const FileEntry& file, ContentCoding coding);

  /// Returns the bytes held (ready representations and useless records).
  std::size_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  /// Returns the records held, pending ones included.
  std::size_t entries() const { return entries_.load(std::memory_order_relaxed); }
  /// Returns how many records were evicted for the bound.
  std::uint64_t evictions() const { return evictions_.load(std::memory_order_relaxed); }
  /// Returns how many records were dropped because their file had changed.
  std::uint64_t stale() const { return stale_.load(std::memory_order_relaxed); }

 private:
  // A key, or a view of one for lookups without allocating.
  template <typename Text>
  struct BasicKey {
    const void* scope = nullptr;
    Text path;
    ContentCoding coding{};
  };
  using Key = BasicKey<std::string>;
  using KeyView = BasicKey<std::string_view>;
  struct KeyHash {
    using is_transparent = void;
    template <typename Text>
    std::size_t operator()(const BasicKey<Text>& k) const {
      return std::hash<std::string_view>{}(k.path) * 31 + std::hash<const void*>{}(k.scope) * 7 +
             static_cast<unsigned>(k.coding);
    }
  };
  struct KeyEqual {
    using is_transparent = void;
    template <typename A, typename B>
    bool operator()(const BasicKey<A>& a, const BasicKey<B>& b) const {
      return a.scope == b.scope && a.coding == b.coding &&
             std::string_view(a.path) == std::string_view(b.path);
    }
  };
  struct Version {
    std::uint64_t dev = 0, ino = 0, size = 0;
    std::int64_t mtime = 0, mtime_ns = 0, ctime = 0, ctime_ns = 0;
    bool operator==(const Version&) const = default;
  };
  struct Record {
    Version version;
    FileRef rep;  // ready: the representation; else empty
    bool pending = true;
    rt::WaitList waiters;  // fibers in wait_pending(), woken when the record stops pending
    std::size_t cost = 0;  // what it counts in bytes_
    std::list<const Key*>::iterator lru;  // front: most recently used
  };
  using Map = std::unordered_map<Key, Record, KeyHash, KeyEqual>;

  static KeyView key_of(const void* scope, const FileEntry& f, ContentCoding c) {
    return {scope, f.path, c};
  }
  static Version version_of(const FileEntry& f) {
    return {f.dev, f.ino, f.size, f.mtime, f.mtime_ns, f.ctime, f.ctime_ns};
  }
  // Erases `it`, moving its waiters to `wake` (woken by the caller once the lock is released).
  void erase_locked(Map::iterator it, rt::WaitList& wake);
  void evict_locked();

  const std::size_t max_bytes_;
  mutable rt::Spinlock lock_;
  Map map_;
  std::list<const Key*> lru_;  // the map's keys (node-based: their addresses stay)
  std::atomic<std::size_t> bytes_{0};
  std::atomic<std::size_t> entries_{0};
  std::atomic<std::uint64_t> evictions_{0};
  std::atomic<std::uint64_t> stale_{0};
};

}  // namespace weft::http
