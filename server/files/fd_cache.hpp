// FdCache: what a response needs for each path (FileEntry), kept open and ready, like NGINX's
// open_file_cache, but by default never serving a file that changed before the request came.
//
// Layout: 64 shards, each a hash map from normalized path to slot plus an LRU list, under
// its own spinlock; a lookup takes one shard's lock for a few instructions, so processors
// never share a global lock. Entries are reference counted: eviction only drops the cache's
// reference, and the descriptor closes when the last response using it ends.
//
// States of a slot: loading (one fiber opens the file; others that miss on the same path
// wait for it: a miss many fibers hit at once opens once) -> ready (entry published).
//
// Freshness (fd_cache.revalidate, fd_cache.valid): with "inotify" (the default) the
// directories of every loaded path are watched (ChangeWatch), and each lookup first reads the
// change events queued before its request arrived, which invalidate the entries they name;
// that costs no system call for most lookups (see change_watch.hpp). So a request that starts
// after a file was replaced, rewritten, truncated, removed or moved away (its directory, a
// symlink on its path) gets the new file or the new 404, like a server without a cache.
// What inotify cannot vouch for (a directory that cannot be watched or past
// fd_cache.max_watches, a path that is or passes through a symlink, a file with several hard
// links, an inotify-less root: change_watch.hpp) is
// checked with statx (inode, device, size, mtime, ctime) on every lookup, and a failed
// lookup whose directory is not watched is tried again. With "statx", every hit is checked
// so. `valid` > 0 opts into a window instead, as NGINX's open_file_cache_valid: events are
// read at most that often, and an entry is checked with statx at most that often (by the
// one fiber that claims it, the others serving it meanwhile); failures live `errors_valid`.
// Entries unused for `inactive` are dropped by sweep().
//
// Bounds: max_entries entries (split over shards), max_bytes of small-file contents in all
// (each at most max_file_bytes). The fd budget (entries + connections within RLIMIT_NOFILE)
// is decided by the server at start and passed in as the entry limit.
//
// Threads: lookup() from any fiber; sweep() and watch_loop() from one fiber each.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "runtime/cancel.hpp"
#include "server/core/config.hpp"
#include "server/files/file_entry.hpp"

namespace weft::http {

class Metrics;
class MimeMap;

class FdCache {
 public:
  /// Makes a cache over the directory `root_fd` (kept open by the caller) with the
  /// [fd_cache] settings of `config`, holding at most `max_entries` entries; the bytes of
  /// small files it keeps count in `bytes` (shared with the caches of other sites, so that
  /// fd_cache.max_bytes bounds them all), or in a count of its own when null.
  FdCache(const Config& config, int root_fd, const MimeMap& mime, Metrics* metrics,
          std::size_t max_entries, std::shared_ptr<std::atomic<uint64_t>> bytes = nullptr);
  FdCache(const FdCache&) = delete;
  FdCache& operator=(const FdCache&) = delete;
  ~FdCache();

  /// Returns the entry for `path` (normalized, starting with '/'); never empty. Call from a
  /// fiber: it may open and stat the file. `processor` is the caller's (processor_index(): the
  /// metrics it counts on).
  FileRef lookup(std::string_view path, unsigned processor);

  /// Opens the directory at normalized `path` with the same resolve rules as every lookup
  /// (the symlink policy, confinement to the root), as a plain system call; returns the
  /// descriptor (the caller closes it) or -errno.
  int open_directory(std::string_view path) const;

  /// Drops entries unused for `inactive`; returns how many. Call from one fiber, periodically.
  std::size_t sweep();

  /// Reads change events in the background until `stop` is cancelled (inotify mode only;
  /// returns at once otherwise).
  void watch_loop(rt::CancelToken& stop);

  /// Drops every entry (in-flight responses keep theirs).
  void clear();

  /// A reload retired this cache's generation: drops every entry (in-flight responses keep
  /// theirs) and caches nothing more, so that retiring generations hold no descriptors
  /// beyond their responses' (the live generation's cache has the whole fd budget).
  void retire();

  /// Returns whether inotify watches the root (revalidate = "inotify" and usable).
  bool watching() const;
  /// Returns how many times the change queue was read (tests: reads are amortized).
  uint64_t event_reads() const;

  /// Returns the number of cached entries.
  std::size_t size() const;

  /// Returns how many directories inotify watches (inotify mode; for tests and metrics).
  std::size_t watched_dirs() const;
  /// Returns the bytes of file contents held.
  uint64_t bytes() const;
  /// Returns how many times a file was opened (tests: concurrent misses open once).
  uint64_t opens() const;
  /// Returns the entry limit in force.
  std::size_t max_entries() const;

 private:
  // The shards, their maps and LRU lists, the loads in flight and the change watch
  // (fd_cache.cpp).
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weft::http
