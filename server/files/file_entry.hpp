// FileEntry: everything a response needs about one path: the open descriptor, its stat, the
// validators, the content type, the prebuilt representation headers, and (for small files)
// the bytes; or the errno of a failed lookup, so misses can be cached too.
//
// Once published, an entry's file fields never change; only its atomics do: `checking`,
// `loaded_ns` and `used_ns` (the fd cache's revalidation and sweeping), `resident_ns` (a
// hint of the senders) and `refs`. Entries are reference counted (FileRef), so the fd cache
// can drop an entry while a response still sends from its descriptor: the fd closes when the
// last reference goes. Any thread may hold and read a FileRef.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "server/http/conditional.hpp"
#include "server/http/file_fields.hpp"

namespace weft::http {

struct FileEntry {
  std::string path;        // the normalized request path (the cache key)
  int fd = -1;             // O_RDONLY | O_CLOEXEC; -1 for misses and directories
  int error = 0;           // errno of the failed open/stat; 0 when found
  bool directory = false;  // a directory (fd closed; the caller tries index files)
  uint64_t size = 0;
  int64_t mtime = 0;     // seconds
  int64_t mtime_ns = 0;  // nanoseconds part, to notice sub-second changes
  int64_t ctime = 0;     // seconds and nanoseconds: a chmod changes only these
  int64_t ctime_ns = 0;
  uint64_t ino = 0;
  uint64_t dev = 0;
  ETag etag;
  // Loaded after the mtime's second had ended: no later change can share that second, so
  // Last-Modified is a strong validator (RFC 9110 §8.8.2.2) and goes out. An entry loaded
  // within that second sends none (a client holding it might resume an older version of
  // the same second with If-Range), and is loaded again as soon as the second is over.
  bool mtime_strong = false;
  std::string_view content_type;  // owned by the MimeMap, which outlives every entry
  FileFields fields;              // Content-Type, validators, Accept-Ranges (file_fields.hpp)
  std::unique_ptr<char[]> bytes;  // the whole file when small (see fd_cache max_file_bytes)
  std::shared_ptr<std::atomic<uint64_t>> bytes_account;  // the cache's total, given back on death
  // Reached through a symlink as its last step, or one of several hard links: a change made
  // through the other name is reported in the other name's directory, so inotify on this
  // path's directories cannot vouch for it (statx revalidation instead).
  bool linked = false;
  bool watched = false;               // inotify covers it: no statx revalidation needed
  std::atomic<bool> checking{false};  // one fiber revalidates at a time
  std::atomic<int64_t> loaded_ns{0};  // monotonic time of the last open/revalidation
  std::atomic<int64_t> used_ns{0};    // monotonic time of the last lookup (for `inactive`)
  // Monotonic time when the whole file was last found in the page cache (io.body = "auto";
  // 0: never). Written by any sender, hence mutable: it is a hint, not part of the entry.
  mutable std::atomic<int64_t> resident_ns{0};
  std::atomic<uint32_t> refs{1};

  ~FileEntry();

  /// Returns whether the file's bytes are held in memory.
  bool has_bytes() const { return bytes != nullptr; }
};

/// A counted reference to a FileEntry.
class FileRef {
 public:
  FileRef() = default;
  /// Adopts one reference to `e`.
  explicit FileRef(FileEntry* e) : e_(e) {}
  FileRef(const FileRef& o) : e_(o.e_) {
    if (e_) e_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  FileRef(FileRef&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  FileRef& operator=(FileRef o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  ~FileRef() { reset(); }

  /// Drops the reference; the entry (and its fd) dies with the last one.
  void reset() {
    if (e_ && e_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete e_;
    e_ = nullptr;
  }

  FileEntry* get() const { return e_; }
  FileEntry* operator->() const { return e_; }
  FileEntry& operator*() const { return *e_; }
  explicit operator bool() const { return e_ != nullptr; }

 private:
  FileEntry* e_ = nullptr;
};

}  // namespace weft::http
