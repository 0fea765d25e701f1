#include "server/files/fd_cache.hpp"

#include <cerrno>
#include <cstring>
#include <list>
#include <unordered_map>

#include <fcntl.h>
#include <linux/openat2.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/io.hpp"
#include "runtime/scheduler.hpp"
#include "runtime/spinlock.hpp"
#include "runtime/waiter.hpp"
#include "server/files/change_watch.hpp"
#include "server/http/mime_map.hpp"
#include "server/http/path.hpp"
#include "server/ops/metrics.hpp"

namespace weft::http {

namespace io = weft::rt::io;

namespace {

int64_t now_ns() {
  return rt::to_ns(rt::now());
}

// The wall clock's second, to compare with a file's mtime (the coarse clock: a vDSO read).
int64_t wall_second() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return ts.tv_sec;
}

int64_t ms_to_ns(Millis m) {
  return static_cast<int64_t>(m.count()) * 1'000'000;
}

// Errors that say nothing about the file (out of descriptors or memory): never cached.
bool transient_error(int err) {
  return err == EMFILE || err == ENFILE || err == ENOMEM || err == EAGAIN || err == EINTR ||
         err == ECANCELED;
}

constexpr unsigned kStatMask =
    STATX_TYPE | STATX_SIZE | STATX_MTIME | STATX_CTIME | STATX_INO | STATX_NLINK;

}  // namespace

FileEntry::~FileEntry() {
  if (fd >= 0) ::close(fd);
  if (bytes && bytes_account) bytes_account->fetch_sub(size, std::memory_order_relaxed);
}

// The cache itself, behind FdCache (see fd_cache.hpp for its layout, states and threads).
class FdCache::Impl : private ChangeWatch::Sink {
 public:
  Impl(const Config& config, int root_fd, const MimeMap& mime, Metrics* metrics,
       std::size_t max_entries, std::shared_ptr<std::atomic<uint64_t>> bytes);
  ~Impl();

  FileRef lookup(std::string_view path, unsigned processor);
  int open_directory(std::string_view path) const;
  std::size_t sweep();
  void watch_loop(rt::CancelToken& stop);
  void clear();
  void retire();
  std::size_t watched_dirs() const;

  static constexpr std::size_t kShards = 64;

  struct Loading {
    rt::WaitList waiters;
  };
  struct CacheRecord {
    FileRef entry;               // empty while loading
    Loading* loading = nullptr;  // set while one fiber opens the file
    bool changed = false;        // inotify saw a change while loading: do not keep the result
    std::list<std::string>::iterator lru;
  };
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    rt::Spinlock lock;
    std::unordered_map<std::string, CacheRecord, Hash, std::equal_to<>> map;
    std::list<std::string> lru;  // front: most recently used
  };

  Shard& shard_for(std::string_view path);
  // What open_file() found at a path: a regular file's descriptor, a directory, or an errno.
  struct Opened {
    int fd = -1;
    int error = 0;
    bool directory = false;
  };
  Opened open_file(const std::string& rel, struct ::statx& st, bool& symlink) const;
  FileRef load(std::string_view path);
  // Reads a small regular file's bytes into `e` when the byte budget allows.
  void keep_bytes(FileEntry& e);
  bool still_current(const FileEntry& e);
  /// Stats root-relative `rel` like statx(2) without following it out of the root's resolve
  /// rules and without blocking the processor; returns 0 or -errno.
  int stat_path(const char* rel, struct ::statx* st) const;
  bool fresh(const FileEntry& e, int64_t now_ns) const;
  // Applies the change events that may concern the calling fiber's request (see the top).
  void catch_up();
  // Whether a cached entry may be served at `now`: fresh, being revalidated by another
  // fiber, or revalidated here and unchanged.
  bool still_usable(FileEntry& hit, int64_t now);
  // Returns the usable entry for `path`, or null once the slot is claimed for `loading`
  // (waiting for another fiber's load, and dropping a stale entry, on the way).
  FileRef hit_or_claim(Shard& s, std::string_view path, Loading& loading, unsigned processor);
  // Loads `path` into the slot this fiber claimed, publishes and returns it.
  FileRef load_claimed(Shard& s, std::string_view path);
  void publish(Shard& s, std::string_view path, FileRef entry);
  void evict_over_limit(Shard& s);
  void erase_locked(
      Shard& s, std::unordered_map<std::string, CacheRecord, Hash, std::equal_to<>>::iterator it);
  // ChangeWatch::Sink.
  void invalidate(std::string_view path) override;
  void invalidate_all() override { clear(); }

  const Config& config_;
  int root_fd_;
  const MimeMap& mime_;
  Metrics* metrics_;
  uint64_t resolve_;
  bool enabled_;
  std::atomic<bool> retired_{false};
  std::size_t max_entries_;
  std::size_t shard_capacity_;
  int64_t valid_ns_, errors_valid_ns_, inactive_ns_;
  Shard shards_[kShards];
  std::atomic<std::size_t> entries_{0};
  std::shared_ptr<std::atomic<uint64_t>> bytes_;  // shared with entries, which release on death
  std::atomic<uint64_t> opens_{0};
  std::unique_ptr<ChangeWatch> watch_;  // inotify mode, when usable; made last, gone first
};

FdCache::Impl::Impl(const Config& config, int root_fd, const MimeMap& mime, Metrics* metrics,
                    std::size_t max_entries, std::shared_ptr<std::atomic<uint64_t>> bytes)
    : config_(config),
      root_fd_(root_fd),
      mime_(mime),
      metrics_(metrics),
      enabled_(config.fd_cache),
      max_entries_(max_entries),
      shard_capacity_((max_entries + kShards - 1) / kShards),
      valid_ns_(ms_to_ns(config.fd_cache_valid)),
      errors_valid_ns_(ms_to_ns(config.fd_cache_errors_valid)),
      inactive_ns_(ms_to_ns(config.fd_cache_inactive)),
      bytes_(bytes ? std::move(bytes) : std::make_shared<std::atomic<uint64_t>>(0)) {
  switch (config.symlinks) {
    case SymlinkPolicy::follow:
      resolve_ = RESOLVE_NO_MAGICLINKS;
      break;
    case SymlinkPolicy::inside_root:
      // The kernel refuses any step (a "..", an absolute or relative symlink) that would
      // leave the root: confinement does not rest on our path normalization alone.
      resolve_ = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
      break;
    case SymlinkPolicy::deny:
      resolve_ = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
      break;
  }
  if (enabled_ && config.fd_cache_revalidate == Revalidation::inotify) {
    watch_ = ChangeWatch::create(root_fd, *this, config.fd_cache_max_watches);
  }
}

FdCache::Impl::~Impl() {
  watch_.reset();
  clear();
}

FdCache::Impl::Shard& FdCache::Impl::shard_for(std::string_view path) {
  return shards_[Hash{}(path) % kShards];
}

bool FdCache::Impl::fresh(const FileEntry& e, int64_t now) const {
  if (e.watched) return true;  // its change events are read before every lookup (catch_up)
  int64_t age = now - e.loaded_ns.load(std::memory_order_relaxed);
  return age < (e.error ? errors_valid_ns_ : valid_ns_);
}

void FdCache::Impl::catch_up() {
  // `valid` > 0: the operator accepts a window; read the events at most that often (the
  // background reader, watch_loop, keeps the queue short meanwhile).
  if (valid_ns_ > 0) {
    const int64_t at = watch_->drained_at_ns();
    if (at != 0 && now_ns() - at < valid_ns_) return;
  }
  watch_->catch_up();
}

FileRef FdCache::Impl::lookup(std::string_view path, unsigned processor) {
  if (!enabled_ || retired_.load(std::memory_order_relaxed)) {
    ProcessorMetrics(metrics_, processor).on_fd_cache(false);
    return load(path);
  }
  // Before the map is read: an entry taken from it first could be invalidated meanwhile.
  if (watch_) catch_up();
  Shard& s = shard_for(path);
  Loading loading;  // ours, should this lookup become the one that loads
  if (FileRef hit = hit_or_claim(s, path, loading, processor)) return hit;
  ProcessorMetrics(metrics_, processor).on_fd_cache(false);
  return load_claimed(s, path);
}

FileRef FdCache::Impl::hit_or_claim(Shard& s, std::string_view path, Loading& loading,
                                    unsigned processor) {
  while (true) {
    int64_t now = now_ns();
    FileRef hit;
    rt::Waiter w;
    bool wait = false;
    {
      std::lock_guard g(s.lock);
      auto it = s.map.find(path);
      if (it == s.map.end()) {
        // Miss: claim the load; others who miss meanwhile wait on it.
        auto [ins, ok] = s.map.try_emplace(std::string(path));
        s.lru.push_front(ins->first);
        ins->second.lru = s.lru.begin();
        // Marked loading in the same critical section: another fiber finding the slot
        // must wait for us, never see it empty.
        ins->second.loading = &loading;
        entries_.fetch_add(1, std::memory_order_relaxed);
        return FileRef{};  // we load: load_claimed
      }
      CacheRecord& slot = it->second;
      if (slot.loading) {
        slot.loading->waiters.push_back(&w);
        wait = true;
      } else {
        hit = slot.entry;
        s.lru.splice(s.lru.begin(), s.lru, slot.lru);
      }
    }
    if (wait) {
      w.wait();
      continue;  // look again: the entry is published (or the load failed transiently)
    }
    hit->used_ns.store(now, std::memory_order_relaxed);
    if (still_usable(*hit, now)) {
      ProcessorMetrics(metrics_, processor).on_fd_cache(true);
      return hit;
    }
    // Changed or expired: replace it by a fresh load (single flight as for a miss).
    {
      std::lock_guard g(s.lock);
      auto it = s.map.find(path);
      if (it != s.map.end() && !it->second.loading && it->second.entry.get() == hit.get()) {
        erase_locked(s, it);
      }
    }
    // Loop: the next pass misses and loads (or waits for whoever got there first).
  }
}

FileRef FdCache::Impl::load_claimed(Shard& s, std::string_view path) {
  // We own the load of `path`. The slot points at `loading`, on this stack: should anything
  // below throw (out of memory), the slot is dropped and its waiters are woken before the
  // stack unwinds; else they would wait for ever on a list that is gone.
  struct Abandon {
    Impl& cache;
    Shard& shard;
    std::string_view path;
    bool armed = true;
    ~Abandon() {
      if (armed) cache.publish(shard, path, FileRef{});
    }
  } abandon{*this, s, path};
  // Watch before opening: a change between the open and the watch would go unnoticed. The
  // slot is ours before the watch: an event read meanwhile marks it changed (invalidate).
  bool watched = watch_ && watch_->watch_dirs_of(path);
  FileRef entry = load(path);
  // A failure is watched too: creating the name is an event in its (watched) directory.
  entry->watched = watched && !entry->linked;
  abandon.armed = false;
  publish(s, path, entry);
  return entry;
}

bool FdCache::Impl::still_usable(FileEntry& hit, int64_t now) {
  // An entry loaded within its file's mtime second sends no Last-Modified (see FileEntry);
  // loading it again once that second is over gives it one.
  if (!hit.error && !hit.directory && !hit.mtime_strong && wall_second() > hit.mtime) {
    return false;
  }
  if (fresh(hit, now)) return true;
  // Errors simply expire (and load again).
  if (hit.error) return false;
  // No window: every lookup checks for itself.
  if (valid_ns_ == 0) return still_current(hit);
  // A window: a found file is checked by one fiber while the others keep serving it.
  bool expected = false;
  if (!hit.checking.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
    return true;
  }
  bool same = still_current(hit);
  hit.checking.store(false, std::memory_order_release);
  if (same) hit.loaded_ns.store(now_ns(), std::memory_order_relaxed);
  return same;
}

void FdCache::Impl::publish(Shard& s, std::string_view path, FileRef entry) {
  std::lock_guard g(s.lock);
  auto it = s.map.find(path);
  Loading* loading = it->second.loading;
  it->second.loading = nullptr;
  if (!entry || transient_error(entry->error) || it->second.changed ||
      retired_.load(std::memory_order_relaxed)) {
    // The load failed (see lookup), nothing was learned about the file, the file changed
    // while it was opened, or the cache retired meanwhile: do not cache.
    erase_locked(s, it);
  } else {
    it->second.entry = std::move(entry);
  }
  // Wake the fibers that waited for this load, under the lock (the waiter protocol).
  while (rt::Waiter* w = loading->waiters.pop_front()) w->wake(false);
  evict_over_limit(s);
}

void FdCache::Impl::evict_over_limit(Shard& s) {
  while (s.map.size() > shard_capacity_ && !s.lru.empty()) {
    // The least recently used ready entry; loading slots are not evicted.
    auto victim = s.lru.end();
    for (auto r = s.lru.rbegin(); r != s.lru.rend(); ++r) {
      auto it = s.map.find(*r);
      if (it != s.map.end() && !it->second.loading) {
        erase_locked(s, it);
        victim = s.lru.begin();  // erased; mark progress
        break;
      }
    }
    if (victim == s.lru.end()) break;  // only loading slots left
  }
}

void FdCache::Impl::erase_locked(
    Shard& s, std::unordered_map<std::string, CacheRecord, Hash, std::equal_to<>>::iterator it) {
  s.lru.erase(it->second.lru);
  s.map.erase(it);  // drops the cache's reference; in-flight responses keep theirs
  entries_.fetch_sub(1, std::memory_order_relaxed);
}

int FdCache::Impl::stat_path(const char* rel, struct ::statx* st) const {
  // io_uring runs every statx on a kernel worker (IORING_OP_STATX is always punted), which
  // costs two context switches per revalidation, a large share of weft's CPU when every hit
  // is revalidated. A path
  // whose every component is in the dentry cache is resolved here without waiting for the disk
  // (RESOLVE_CACHED fails with EAGAIN instead), and an open file's inode is in memory, so
  // statx on the O_PATH descriptor cannot block either. Only the rest goes to io::statx.
  int fd = io::openat2_now(root_fd_, rel, O_PATH, 0, resolve_ | RESOLVE_CACHED);
  if (fd == -EAGAIN) return io::statx(root_fd_, rel, 0, kStatMask, st);
  if (fd < 0) return fd;
  int rc = ::statx(fd, "", AT_EMPTY_PATH, kStatMask, st) == 0 ? 0 : -errno;
  ::close(fd);
  return rc;
}

int FdCache::Impl::open_directory(std::string_view path) const {
  std::string rel = root_relative(path);
  return io::openat2_now(root_fd_, rel.c_str(), O_RDONLY | O_DIRECTORY, 0, resolve_);
}

bool FdCache::Impl::still_current(const FileEntry& e) {
  std::string rel = root_relative(e.path);
  struct ::statx st {};
  if (stat_path(rel.c_str(), &st) < 0) return false;
  uint64_t dev = (uint64_t{st.stx_dev_major} << 32) | st.stx_dev_minor;
  return st.stx_ino == e.ino && dev == e.dev && st.stx_mtime.tv_sec == e.mtime &&
         st.stx_mtime.tv_nsec == e.mtime_ns && st.stx_ctime.tv_sec == e.ctime &&
         st.stx_ctime.tv_nsec == e.ctime_ns && (e.directory || st.stx_size == e.size) &&
         S_ISDIR(st.stx_mode) == e.directory;
}

void FdCache::Impl::keep_bytes(FileEntry& e) {
  // Small files are kept in memory, within the total bound, so a response goes out in one
  // send with its head. A file that does not fit the budget is sent from the descriptor.
  uint64_t limit = config_.fd_cache_max_file_bytes;
  if (limit == 0 || e.size > limit) return;
  uint64_t before = bytes_->fetch_add(e.size, std::memory_order_relaxed);
  if (before + e.size > config_.fd_cache_max_bytes) {
    bytes_->fetch_sub(e.size, std::memory_order_relaxed);
    return;
  }
  try {
    e.bytes = std::make_unique<char[]>(e.size ? e.size : 1);
  } catch (...) {  // out of memory: the budget back, and the load fails (see lookup)
    bytes_->fetch_sub(e.size, std::memory_order_relaxed);
    throw;
  }
  e.bytes_account = bytes_;
  uint64_t got = 0;
  while (got < e.size) {
    int64_t n = io::read(e.fd, e.bytes.get() + got, e.size - got, static_cast<int64_t>(got));
    if (n <= 0) break;
    got += static_cast<uint64_t>(n);
  }
  if (got != e.size) {
    // Truncated (or unreadable) while we read: serve from the descriptor instead, so the
    // Content-Length and the bytes can never disagree.
    bytes_->fetch_sub(e.size, std::memory_order_relaxed);
    e.bytes.reset();
    e.bytes_account.reset();
  }
}

FdCache::Impl::Opened FdCache::Impl::open_file(const std::string& rel, struct ::statx& st,
                                               bool& symlink) const {
  // Look at the type before opening for reading: opening a FIFO or a device can have side
  // effects (a tape rewinds, a writer wakes), and a UNIX socket cannot be opened at all. An
  // O_PATH descriptor resolves the name under the same rules without opening the file.
  // Watched, the last step is not followed first, to learn whether it is a symlink (see
  // FileEntry::linked); only then is it followed.
  int probe = io::openat2(root_fd_, rel.c_str(), O_PATH | (watch_ ? O_NOFOLLOW : 0), 0, resolve_);
  if (probe < 0) return {-1, -probe, false};
  int rc = ::statx(probe, "", AT_EMPTY_PATH, kStatMask, &st) == 0 ? 0 : errno;
  if (rc == 0 && S_ISLNK(st.stx_mode)) {
    symlink = true;
    ::close(probe);
    probe = io::openat2(root_fd_, rel.c_str(), O_PATH, 0, resolve_);
    if (probe < 0) return {-1, -probe, false};
    rc = ::statx(probe, "", AT_EMPTY_PATH, kStatMask, &st) == 0 ? 0 : errno;
  }
  ::close(probe);
  if (rc != 0) return {-1, rc, false};
  if (S_ISDIR(st.stx_mode)) return {-1, 0, true};
  if (!S_ISREG(st.stx_mode)) return {-1, EACCES, false};  // devices, FIFOs, sockets: 403
  const int fd = io::openat2(root_fd_, rel.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, resolve_);
  if (fd < 0) return {-1, -fd, false};
  // Inline: the open file's inode is in memory (see stat_path). Checked again on the file
  // itself: the name may have been replaced between the two opens.
  if (::statx(fd, "", AT_EMPTY_PATH, kStatMask, &st) != 0 || !S_ISREG(st.stx_mode)) {
    const int err = S_ISREG(st.stx_mode) ? errno : EACCES;
    ::close(fd);
    return {-1, err, false};
  }
  return {fd, 0, false};
}

FileRef FdCache::Impl::load(std::string_view path) {
  auto* e = new FileEntry();
  FileRef ref(e);
  e->path.assign(path);
  e->loaded_ns.store(now_ns(), std::memory_order_relaxed);
  e->used_ns.store(e->loaded_ns.load(std::memory_order_relaxed), std::memory_order_relaxed);
  std::string rel = root_relative(path);
  opens_.fetch_add(1, std::memory_order_relaxed);
  struct ::statx st {};
  bool symlink = false;
  const Opened o = open_file(rel, st, symlink);
  e->linked = symlink;
  if (o.error != 0) {
    e->error = o.error;
    return ref;
  }
  e->ino = st.stx_ino;
  e->dev = (uint64_t{st.stx_dev_major} << 32) | st.stx_dev_minor;
  e->mtime = st.stx_mtime.tv_sec;
  e->mtime_ns = st.stx_mtime.tv_nsec;
  e->ctime = st.stx_ctime.tv_sec;
  e->ctime_ns = st.stx_ctime.tv_nsec;
  if (o.directory) {
    e->directory = true;
    return ref;
  }
  e->fd = o.fd;
  e->size = st.stx_size;
  e->linked = e->linked || st.stx_nlink > 1;
  keep_bytes(*e);
  e->etag = make_etag(e->mtime, e->mtime_ns, e->size);
  e->mtime_strong = wall_second() > e->mtime;
  e->content_type = mime_.lookup(path);
  e->fields.build(e->content_type, e->etag.view(), e->mtime, e->mtime_strong,
                  config_.max_ranges != 0);
  return ref;
}

std::size_t FdCache::Impl::sweep() {
  if (!enabled_) return 0;
  int64_t cutoff = now_ns() - inactive_ns_;
  std::size_t dropped = 0;
  for (Shard& s : shards_) {
    std::lock_guard g(s.lock);
    for (auto it = s.map.begin(); it != s.map.end();) {
      auto next = std::next(it);
      const CacheRecord& slot = it->second;
      if (!slot.loading && slot.entry->used_ns.load(std::memory_order_relaxed) < cutoff) {
        erase_locked(s, it);
        ++dropped;
      }
      it = next;
    }
  }
  return dropped;
}

void FdCache::Impl::clear() {
  for (Shard& s : shards_) {
    std::lock_guard g(s.lock);
    for (auto it = s.map.begin(); it != s.map.end();) {
      auto next = std::next(it);
      if (it->second.loading) {
        it->second.changed = true;  // see invalidate()
      } else {
        erase_locked(s, it);
      }
      it = next;
    }
  }
}

void FdCache::Impl::retire() {
  // Before the clear: a load that publishes after the clear reached its shard sees it.
  retired_.store(true, std::memory_order_relaxed);
  clear();
}

void FdCache::Impl::invalidate(std::string_view path) {
  std::string with_slash;
  for (std::string_view p : {path, std::string_view(with_slash.assign(path).append("/"))}) {
    Shard& s = shard_for(p);
    std::lock_guard g(s.lock);
    auto it = s.map.find(p);
    if (it == s.map.end()) continue;
    if (it->second.loading) {
      // The file may have been opened before the change: publish() returns it to its
      // loader (whose request came first) but does not keep it, so the fibers waiting for
      // the load look again (else, watched, it would be served for ever).
      it->second.changed = true;
      continue;
    }
    erase_locked(s, it);
  }
}

std::size_t FdCache::Impl::watched_dirs() const {
  return watch_ ? watch_->watched_dirs() : 0;
}

void FdCache::Impl::watch_loop(rt::CancelToken& stop) {
  if (watch_) watch_->run(stop);
}

FdCache::FdCache(const Config& config, int root_fd, const MimeMap& mime, Metrics* metrics,
                 std::size_t max_entries, std::shared_ptr<std::atomic<uint64_t>> bytes)
    : impl_(std::make_unique<Impl>(config, root_fd, mime, metrics, max_entries, std::move(bytes))) {
}

FdCache::~FdCache() = default;

FileRef FdCache::lookup(std::string_view path, unsigned processor) {
  return impl_->lookup(path, processor);
}

int FdCache::open_directory(std::string_view path) const {
  return impl_->open_directory(path);
}

std::size_t FdCache::sweep() {
  return impl_->sweep();
}

void FdCache::watch_loop(rt::CancelToken& stop) {
  impl_->watch_loop(stop);
}

void FdCache::clear() {
  impl_->clear();
}

void FdCache::retire() {
  impl_->retire();
}

bool FdCache::watching() const {
  return impl_->watch_ != nullptr;
}

uint64_t FdCache::event_reads() const {
  return impl_->watch_ ? impl_->watch_->reads() : 0;
}

std::size_t FdCache::size() const {
  return impl_->entries_.load(std::memory_order_relaxed);
}

std::size_t FdCache::watched_dirs() const {
  return impl_->watched_dirs();
}

uint64_t FdCache::bytes() const {
  return impl_->bytes_->load(std::memory_order_relaxed);
}

uint64_t FdCache::opens() const {
  return impl_->opens_.load(std::memory_order_relaxed);
}

std::size_t FdCache::max_entries() const {
  return impl_->max_entries_;
}

}  // namespace weft::http
