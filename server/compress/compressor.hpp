// Compressor: compression on the fly, done once per file and coding ([compression]).
//
// The static handler asks find() for a file's representation in a coding the client accepts.
// A cached one is returned at once; on a miss the first asker claims the key in the
// CompressedCache and queues a job for the compression workers, and gets nothing (it sends
// identity, or another representation), as does every request until the job has stored its
// result: no request waits for a compression (but one whose client refuses identity, which
// parks its fiber: wait_pending()), and no processor ever runs one.
//
// Workers: `compression.workers` threads (nice 10: below the processors), started on the
// first job, take jobs in order from
// a queue of at most `compression.max_queued` (a find() beyond that starts nothing). A job
// reads the whole file (from the fd cache's bytes, else with pread on the worker), checks with
// fstat that the file did not change while read (a changed file's job stores nothing), and
// compresses it. The result becomes a FileEntry of its own: the compressed bytes in memory,
// the file's validators with the coding in its ETag ("+zs", "+br", "+gz" inside the quotes:
// no identity or precompressed tag ends so), and the file's type, so the response writer
// sends it as any small cached file, a Range over the compressed bytes included.
//
// Eligible files (their answers vary): a regular file whose type is in compression.types and
// whose size is within [min_size, max_file_size]. The handler starts a compression only for
// one whose mtime is strong (FileEntry::mtime_strong: a file modified within the current
// second may still be being written).
//
// Lifetime: the queue, the cache and the counters are shared with the workers; the
// destructor drops the queued jobs and lets running ones finish on their own (detached), so
// that a retired generation's end never waits for a long compression.
//
// Threads: any fiber or thread calls find(), eligible() and the counters.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "server/core/config.hpp"
#include "server/files/file_entry.hpp"
#include "server/http/accept_encoding.hpp"

namespace weft::http {

class CompressedCache;

class Compressor {
 public:
  /// Makes the compressor of `config`'s [compression]; starts no thread.
  explicit Compressor(const Config& config);
  ~Compressor();
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;

  /// Returns whether `file` may be compressed on the fly (enabled, a codec, its type, size).
  bool eligible(const FileEntry& file) const;

  /// Returns the codecs compressed on the fly, in the server's order.
  std::span<const ContentCoding> codecs() const { return codecs_; }

  /// Returns whether, of the codings a client weighs equally, the smallest representation
  /// made is sent (compression.prefer_smallest), rather than the first in codecs() made.
  bool prefer_smallest() const { return prefer_smallest_; }

  /// What find() found: the representation, or why there is none now.
  enum class Outcome : std::uint8_t { ready, started, pending, useless, not_started };

  /// Returns the cached representation of eligible `file` (found in `scope`: its site's fd
  /// cache) in `coding` in `out` (ready); on a miss, when `start`, queues its compression
  /// (started; not_started when the queue is full or no worker can start); pending while one
  /// runs; useless when the coding does not shrink the file. Never waits.
  Outcome find(const void* scope, const FileRef& file, ContentCoding coding, bool start,
               FileRef& out);

  /// Parks the calling fiber until the compression of `file` (from `scope`) in `coding`,
  /// pending or queued, has ended; at once when none is. Only for a client that refuses
  /// identity: nothing else ever waits for a compression.
  void wait_pending(const void* scope, const FileRef& file, ContentCoding coding);

  /// Counts one response sent from a representation: `saved` bytes fewer than identity.
  void on_sent(uint64_t saved);
  /// Counts one response sent as identity although the client accepted a coding of ours.
  void on_miss();

  /// Returns whether the precompressed `variant` (an f.zst) may be sent: its first frame asks
  /// for a window within RFC 9659's 8 MiB. Call from a fiber: it reads the frame header (once
  /// per version of the file, remembered) and logs a refusal once per version.
  bool zstd_variant_ok(const FileEntry& variant);

  /// Counters and gauges, for the metrics.
  struct Stats {
    uint64_t hits, misses, saved_bytes, evictions, stale, compressions, running, queued;
    uint64_t cache_bytes, cache_entries;
  };
  Stats stats() const;

 private:
  struct Shared;  // the queue, the cache and the counters (compressor.cpp)
  std::shared_ptr<Shared> shared_;
  bool enabled_;
  std::vector<std::string> types_;
  std::size_t min_size_, max_file_size_;
  bool prefer_smallest_;
  std::vector<ContentCoding> codecs_;
};

/// Returns the suffix the ETag of a representation compressed on the fly gets for `coding`.
std::string_view on_the_fly_tag_suffix(ContentCoding coding);

}  // namespace weft::http
