// ChangeWatch: the fd cache's view of changes under the document root, through inotify.
//
// The cache asks it to watch every directory from the root down to the one holding a path
// it loads (watch_dirs_of). From then on the kernel queues an event for each change to an
// entry of those directories (written, truncated, attributes changed, created, deleted,
// renamed from or to), synchronously: the event is queued before the system call that made
// the change returns. So reading the queue after a request arrived, and before serving it
// from the cache, tells of every change that returned before the client sent it: catch_up()
// does that, and each event invalidates the entries it names (the whole cache when a watched
// directory itself moved, was replaced or removed). A request that starts after a change
// returned never gets the old file, nor a 304 for it.
//
// Cost: catch_up() reads the queue only when no read began after the calling fiber's bytes
// arrived (its I/O stamp, runtime/io_epoch.hpp): one non-blocking read per batch of requests
// the I/O driver reaped, and none for the others of the batch. run() also reads in the
// background whenever events wait, so the queue does not fill while no request comes.
//
// Fallbacks (the cache revalidates with statx what this does not cover): a directory that
// cannot be watched (fs.inotify.max_user_watches or fd_cache.max_watches reached, or it does
// not exist) leaves its paths unwatched, and so does a symlink on the path (watches never
// follow one: a link switched in a directory nobody watches would go unseen, and links to
// an ancestor would make endless paths); a lost event (IN_Q_OVERFLOW) empties the cache and forgets
// every watch, which the next loads set up again; no inotify at all (init failed, or the root is on
// a network or FUSE file system, whose remote changes inotify never reports) means no ChangeWatch
// (create() returns null).
//
// Threads: any fiber. Reads of the queue, with the application of their events, are
// serialized (drain_mu_), and a read's ticket is published only after its events were
// applied, so a lookup that sees the ticket also sees the invalidations. Lock order:
// drain_mu_, then watch_mu_, then the sink's locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/cancel.hpp"

struct inotify_event;

namespace weft::http {

class ChangeWatch {
 public:
  /// What the events change: the cache's entries.
  class Sink {
   public:
    /// Drops the entries of normalized `path` and of `path` + "/".
    virtual void invalidate(std::string_view path) = 0;
    /// Drops every entry (anything under the root may have changed).
    virtual void invalidate_all() = 0;
    virtual ~Sink() = default;
  };

  /// Returns a watch of the directory `root_fd` (kept open by the caller) reporting to
  /// `sink`, watching at most `max_watches` directories, or null when inotify cannot serve
  /// (logged with the reason).
  static std::unique_ptr<ChangeWatch> create(int root_fd, Sink& sink, std::size_t max_watches);
  ~ChangeWatch();
  ChangeWatch(const ChangeWatch&) = delete;
  ChangeWatch& operator=(const ChangeWatch&) = delete;

  /// Watches every directory from the root down to the one holding normalized `path`;
  /// returns whether all of them are watched, none being a symlink (else changes there may
  /// go unseen).
  bool watch_dirs_of(std::string_view path);

  /// Reads and applies the events queued before the calling fiber's latest I/O result was
  /// there, unless a read that began since then did (no system call then).
  void catch_up();

  /// Reads and applies every event queued now.
  void drain();

  /// Fiber: drains whenever events wait, until `stop` is cancelled.
  void run(rt::CancelToken& stop);

  /// Returns the monotonic time (ns) when the latest drain began; 0 before the first.
  int64_t drained_at_ns() const { return drained_at_ns_.load(std::memory_order_relaxed); }

  /// Returns how many directory paths are watched.
  std::size_t watched_dirs() const;

  /// Returns how many reads of the queue were made (tests: catch_up() is amortized).
  uint64_t reads() const { return reads_.load(std::memory_order_relaxed); }

 private:
  ChangeWatch(int root_fd, int inotify_fd, Sink& sink, std::size_t max_watches);

  void drain_after(uint64_t stamp);
  void read_events();
  void apply(const ::inotify_event& ev);
  bool watch_one_dir(const std::string& dir);
  void forget_all_locked();

  const int root_fd_;
  const int fd_;  // the inotify instance, non-blocking
  Sink& sink_;
  const std::size_t max_watches_;  // fd_cache.max_watches: dir_wds_ never holds more

  // The latest read's ticket (io_epoch.hpp), published after its events were applied.
  alignas(64) std::atomic<uint64_t> read_ticket_{0};
  std::atomic<int64_t> drained_at_ns_{0};
  std::atomic<uint64_t> reads_{0};
  std::mutex drain_mu_;

  // Watched directories by path relative to the root ("" for the root itself) and by watch
  // descriptor. No path passes through a symlink, so a directory has one path (a bind
  // mount inside the root could give it two: hence a list per descriptor).
  mutable std::mutex watch_mu_;
  std::unordered_map<int, std::vector<std::string>> wd_dirs_;
  std::unordered_map<std::string, int> dir_wds_;
  std::atomic<bool> warned_limit_{false};
  std::atomic<bool> warned_max_{false};
};

}  // namespace weft::http
