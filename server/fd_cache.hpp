// FdCache: finds what a response needs for a normalized path (see FileEntry), opening and
// stat-ing through the runtime's I/O (openat2 relative to the document root, confined by the
// symlink policy; statx), so a processor never blocks on the file system.
//
// Thread safety: lookup() may be called from any fiber on any processor.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "server/config.hpp"
#include "server/file_entry.hpp"
#include "server/mime_map.hpp"

namespace weft::http {

class Metrics;

class FdCache {
 public:
  /// Makes a cache over the directory `root_fd` (kept open by the caller) with the
  /// [fd_cache] settings of `config`.
  FdCache(const Config& config, int root_fd, const MimeMap& mime, Metrics* metrics);
  FdCache(const FdCache&) = delete;
  FdCache& operator=(const FdCache&) = delete;
  ~FdCache();

  /// Returns the entry for `path` (normalized, starting with '/'); never empty. Call from a
  /// fiber: it may open and stat the file.
  FileRef lookup(std::string_view path, unsigned shard);

  /// Returns the RESOLVE_* flags that enforce the symlink policy.
  uint64_t resolve_flags() const { return resolve_; }

 private:
  FileRef load(std::string_view path);

  const Config& config_;
  int root_fd_;
  const MimeMap& mime_;
  Metrics* metrics_;
  uint64_t resolve_;
};

}  // namespace weft::http
