#include "server/compress/compressor.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/io.hpp"
#include "runtime/spinlock.hpp"
#include "server/compress/codec.hpp"
#include "server/compress/compressed_cache.hpp"

namespace weft::http {

namespace {

// The workers' nice value: picked, so that processors win the CPU from a compression.
constexpr int kWorkerNice = 10;

struct Job {
  const void* scope;  // the fd cache the file was found in (CompressedCache's key)
  FileRef file;
  ContentCoding coding;
  std::string content_type;  // copied: the MIME map may go before a detached worker ends
};

// Reads the whole of `f` into `out` on a worker thread (blocking there is the point); returns
// false on an error or a short read (the file shrank).
bool read_whole(const FileEntry& f, std::string& out) {
  out.resize(f.size);
  std::size_t done = 0;
  while (done < f.size) {
    const ssize_t n = ::pread(f.fd, out.data() + done, f.size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// Whether the file behind `f`'s descriptor is still the version `f` describes: a file
// rewritten while it was read may have given bytes of two versions.
bool unchanged(const FileEntry& f) {
  if (f.fd < 0) return true;  // the bytes were the fd cache's own copy
  struct ::stat st {};
  if (::fstat(f.fd, &st) != 0) return false;
  return static_cast<uint64_t>(st.st_size) == f.size && st.st_mtim.tv_sec == f.mtime &&
         st.st_mtim.tv_nsec == f.mtime_ns && st.st_ctim.tv_sec == f.ctime &&
         st.st_ctim.tv_nsec == f.ctime_ns;
}

// The representation of `f` in `coding` whose body is `body`: see compressor.hpp.
FileRef make_representation(const FileEntry& f, ContentCoding coding, std::string_view type,
                            std::string_view body, bool ranges) {
  auto* e = new FileEntry;
  e->path = f.path;
  e->size = body.size();
  e->mtime = f.mtime;
  e->mtime_ns = f.mtime_ns;
  e->ctime = f.ctime;
  e->ctime_ns = f.ctime_ns;
  e->ino = f.ino;
  e->dev = f.dev;
  e->mtime_strong = f.mtime_strong;
  const std::string_view tag = f.etag.view();
  const std::string_view suffix = on_the_fly_tag_suffix(coding);
  char* p = std::copy(tag.begin(), tag.end() - 1, e->etag.bytes.begin());  // without its '"'
  p = std::copy(suffix.begin(), suffix.end(), p);
  *p++ = '"';
  e->etag.size = static_cast<std::uint8_t>(p - e->etag.bytes.data());
  e->fields.build(type, e->etag.view(), f.mtime, f.mtime_strong, ranges);
  // The type's one copy is in the fields ("Content-Type: " TYPE "\r\n"), which live as long.
  e->content_type = std::string_view(e->fields.text).substr(14, type.size());
  e->bytes = std::make_unique_for_overwrite<char[]>(body.size());
  std::memcpy(e->bytes.get(), body.data(), body.size());
  return FileRef(e);
}

}  // namespace

struct Compressor::Shared {
  Shared(const Config& c)
      : cache(c.compression_cache_size),
        levels{static_cast<int>(c.compression_zstd_level), static_cast<int>(c.compression_br_level),
               static_cast<int>(c.compression_gzip_level)},
        ranges(c.max_ranges > 0),
        max_workers(c.compression_workers),
        max_queued(c.compression_max_queued) {}

  CompressedCache cache;
  const int levels[kContentCodings];  // by ContentCoding
  const bool ranges;
  const unsigned max_workers;
  const unsigned max_queued;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> queue;
  unsigned threads = 0;
  unsigned idle = 0;
  bool stop = false;
  bool warned = false;

  std::atomic<uint64_t> hits{0}, misses{0}, saved{0}, compressions{0}, running{0};

  // zstd_variant_ok's verdicts, by (dev, ino, size, mtime ns): bounded by clearing it.
  static constexpr std::size_t kMaxVerdicts = 1024;
  rt::Spinlock verdicts_lock;
  std::map<std::array<std::int64_t, 4>, bool> verdicts;

  // Queues `job`; false when the queue is full or no worker runs and none can start.
  static bool enqueue(const std::shared_ptr<Shared>& s, Job job);
  static void work(std::shared_ptr<Shared> s);
  void run(const Job& job);
};

bool Compressor::Shared::enqueue(const std::shared_ptr<Shared>& s, Job job) {
  {
    std::lock_guard g(s->mu);
    if (s->stop || s->queue.size() >= s->max_queued) return false;
    if (s->idle == 0 && s->threads < s->max_workers) {
      try {
        std::thread(work, s).detach();
        ++s->threads;
      } catch (const std::exception& e) {  // pthread_create failed: a pids limit, memory
        if (!s->warned) {
          s->warned = true;
          spdlog::warn("compression: cannot start a worker ({}); {} running", e.what(), s->threads);
        }
        if (s->threads == 0) return false;
      }
    }
    s->queue.push_back(std::move(job));
  }
  s->cv.notify_one();
  return true;
}

void Compressor::Shared::work(std::shared_ptr<Shared> s) {
  pthread_setname_np(pthread_self(), "weft-compress");  // for ps and top
  // Below the processors: a long compression must not take their core away (on Linux a
  // thread's nice value is its own). Best effort: a refusal leaves the default.
  ::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kWorkerNice);
  std::unique_lock lock(s->mu);
  while (true) {
    ++s->idle;
    s->cv.wait(lock, [&] { return !s->queue.empty() || s->stop; });
    --s->idle;
    if (s->stop) break;
    Job job = std::move(s->queue.front());
    s->queue.pop_front();
    // Counted as running before the lock goes: a job is always queued or running, so a
    // reader that sees the queue empty and then nothing running knows every job ended.
    s->running.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    s->run(job);
    s->running.fetch_sub(1, std::memory_order_relaxed);
    job.file.reset();  // closes a dropped entry's descriptor here, not under the lock
    lock.lock();
  }
  --s->threads;
}

void Compressor::Shared::run(const Job& job) {
  const FileEntry& f = *job.file;
  std::string copy;
  std::string_view in;
  if (f.has_bytes()) {
    in = {f.bytes.get(), f.size};
  } else if (read_whole(f, copy)) {
    in = copy;
  }
  if (in.size() != f.size || !unchanged(f)) {
    cache.drop(job.scope, f, job.coding);  // the next request (of the new file) tries again
    return;
  }
  const auto out = compress_body(job.coding, levels[static_cast<int>(job.coding)], in);
  compressions.fetch_add(1, std::memory_order_relaxed);
  if (!out) {
    cache.drop(job.scope, f, job.coding);
    return;
  }
  if (out->size() >= f.size) {
    cache.store(job.scope, f, job.coding, {});  // useless: not tried again for this version
    return;
  }
  cache.store(job.scope, f, job.coding,
              make_representation(f, job.coding, job.content_type, *out, ranges));
}

Compressor::Compressor(const Config& config)
    : shared_(std::make_shared<Shared>(config)),
      enabled_(config.compression),
      types_(config.compression_types),
      min_size_(config.compression_min_size),
      max_file_size_(config.compression_max_file_size),
      prefer_smallest_(config.compression_prefer_smallest) {
  for (const std::string& name : config.compression_codecs) {
    if (auto c = coding_named(name)) codecs_.push_back(*c);
  }
}

Compressor::~Compressor() {
  std::deque<Job> dropped;
  {
    std::lock_guard g(shared_->mu);
    shared_->stop = true;
    dropped.swap(shared_->queue);
  }
  shared_->cv.notify_all();
  // Claims never run end here, waking any fiber in wait_pending().
  for (const Job& job : dropped) shared_->cache.drop(job.scope, *job.file, job.coding);
  // Running jobs end on their own, on the Shared they hold.
}

void Compressor::wait_pending(const void* scope, const FileRef& file, ContentCoding coding) {
  shared_->cache.wait_pending(scope, *file, coding);
}

bool Compressor::eligible(const FileEntry& file) const {
  if (!enabled_ || codecs_.empty() || file.error || file.directory || file.size < min_size_ ||
      file.size > max_file_size_) {
    return false;
  }
  std::string_view type = file.content_type.substr(0, file.content_type.find(';'));
  while (!type.empty() && type.back() == ' ') type.remove_suffix(1);
  const std::size_t slash = type.find('/');
  for (const std::string& t : types_) {
    if (t == type) return true;
    // "text/*": the same top-level type.
    if (t.ends_with("/*") && slash != std::string_view::npos &&
        type.substr(0, slash + 1) == std::string_view(t).substr(0, t.size() - 1)) {
      return true;
    }
  }
  return false;
}

Compressor::Outcome Compressor::find(const void* scope, const FileRef& file, ContentCoding coding,
                                     bool start, FileRef& out) {
  switch (shared_->cache.find(scope, *file, coding, start, out)) {
    case CompressedCache::Found::ready:
      return Outcome::ready;
    case CompressedCache::Found::pending:
      return Outcome::pending;
    case CompressedCache::Found::useless:
      return Outcome::useless;
    case CompressedCache::Found::absent:
      return Outcome::not_started;
    case CompressedCache::Found::claimed:
      break;
  }
  if (Shared::enqueue(shared_, Job{scope, file, coding, std::string(file->content_type)})) {
    return Outcome::started;
  }
  shared_->cache.drop(scope, *file, coding);
  return Outcome::not_started;
}

void Compressor::on_sent(uint64_t saved) {
  shared_->hits.fetch_add(1, std::memory_order_relaxed);
  shared_->saved.fetch_add(saved, std::memory_order_relaxed);
}

void Compressor::on_miss() {
  shared_->misses.fetch_add(1, std::memory_order_relaxed);
}

Compressor::Stats Compressor::stats() const {
  const Shared& s = *shared_;
  std::size_t queued;
  {
    std::lock_guard g(shared_->mu);
    queued = shared_->queue.size();
  }
  return {s.hits.load(),   s.misses.load(),       s.saved.load(),   s.cache.evictions(),
          s.cache.stale(), s.compressions.load(), s.running.load(), queued,
          s.cache.bytes(), s.cache.entries()};
}

bool Compressor::zstd_variant_ok(const FileEntry& v) {
  const std::array<std::int64_t, 4> key{
      static_cast<std::int64_t>(v.dev), static_cast<std::int64_t>(v.ino),
      static_cast<std::int64_t>(v.size), v.mtime * 1'000'000'000 + v.mtime_ns};
  Shared& s = *shared_;
  {
    std::lock_guard g(s.verdicts_lock);
    if (auto it = s.verdicts.find(key); it != s.verdicts.end()) return it->second;
  }
  // A frame header is at most 18 bytes (RFC 8878 §3.1.1.1).
  char head[18];
  std::int64_t n = 0;
  if (v.has_bytes()) {
    n = static_cast<std::int64_t>(std::min<std::uint64_t>(v.size, sizeof head));
    std::memcpy(head, v.bytes.get(), static_cast<std::size_t>(n));
  } else {
    n = rt::io::read(v.fd, head, sizeof head, 0);
  }
  if (n < 0) return false;  // unreadable now: not sent, and not remembered
  const auto window = n > 0 ? zstd_frame_window({head, static_cast<std::size_t>(n)}) : std::nullopt;
  const bool ok = window && *window <= kZstdMaxWindow;
  if (!ok) {
    if (window) {
      spdlog::warn(
          "not sending {:?}: its zstd frame asks for a {} byte window, above the 8 MiB "
          "of RFC 9659",
          v.path, *window);
    } else {
      spdlog::warn("not sending {:?}: it does not start with a zstd frame", v.path);
    }
  }
  std::lock_guard g(s.verdicts_lock);
  if (s.verdicts.size() >= Shared::kMaxVerdicts) s.verdicts.clear();
  s.verdicts[key] = ok;
  return ok;
}

std::string_view on_the_fly_tag_suffix(ContentCoding coding) {
  switch (coding) {
    case ContentCoding::zstd:
      return "+zs";
    case ContentCoding::br:
      return "+br";
    case ContentCoding::gzip:
      return "+gz";
  }
  return "+";
}

}  // namespace weft::http
