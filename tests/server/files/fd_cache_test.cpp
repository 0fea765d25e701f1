// Tests server/fd_cache: revalidation after `valid`, deletion and replacement, truncation,
// bounds (no descriptor leaks through a small cache), single-flight misses, negative entries,
// the byte budget, the inotify mode, and the default's freshness (never a changed file: the
// change events read before a hit, amortized over a batch; statx where inotify cannot
// vouch; overflow). Runs the cache inside a real runtime with io_uring.
#include "server/files/fd_cache.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/io_driver.hpp"
#include "runtime/io_epoch.hpp"
#include "runtime/latch.hpp"
#include "runtime/scheduler.hpp"
#include "server/http/mime_map.hpp"

#include "tests/server/temp_dir.hpp"

namespace weft::http {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

int count_fds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (readdir(d)) ++n;
  closedir(d);
  return n - 3;
}

void write_file(const fs::path& p, std::string_view content) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << content;
}

class FdCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = make_test_dir("fdcache");
    config_.root = root_;
    config_.fd_cache_valid = Millis{50};
    config_.fd_cache_errors_valid = Millis{50};
    config_.fd_cache_max_file_bytes = 16;  // small: bigger files are served from the descriptor
    // The window tests below are about statx revalidation; the inotify tests say so.
    config_.fd_cache_revalidate = Revalidation::statx;
  }
  void TearDown() override { fs::remove_all(root_); }

  // Runs fn(cache) on a fiber of an io_uring runtime (2 processors unless told).
  template <typename F>
  void with_cache(F fn, std::size_t max_entries = 1000, unsigned processors = 2) {
    rt::IoOptions io;
    rt::RuntimeOptions o;
    o.processors = processors;
    o.make_driver = rt::make_io_driver_factory(io);
    rt::Runtime runtime(o);
    int root_fd = ::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    MimeMap mime("application/octet-stream");
    {
      FdCache cache(config_, root_fd, mime, nullptr, max_entries);
      runtime.run([&] { fn(cache); });
    }
    ::close(root_fd);
  }

  fs::path root_;
  Config config_;
};

std::string body_of(const FileRef& e) {
  if (e->has_bytes()) return std::string(e->bytes.get(), e->size);
  std::string s(e->size, '\0');
  EXPECT_EQ(::pread(e->fd, s.data(), s.size(), 0), static_cast<ssize_t>(s.size()));
  return s;
}

TEST_F(FdCacheTest, ModificationVisibleAfterValid) {
  write_file(root_ / "a.txt", "first version");
  with_cache([&](FdCache& c) {
    EXPECT_EQ(body_of(c.lookup("/a.txt", 0)), "first version");
    write_file(root_ / "a.txt", "second, longer version");
    rt::sleep_for(70ms);  // at least `valid` (50 ms) has passed: the lookup revalidates
    EXPECT_EQ(body_of(c.lookup("/a.txt", 0)), "second, longer version");
  });
}

// Within `valid` the cached entry is served as is. `valid` is a minute here, not the
// fixture's 50 ms: a test cannot bound how long it takes between two lookups (ASan on a
// loaded machine once took longer than 50 ms, and the entry was revalidated).
TEST_F(FdCacheTest, ModificationNotSeenWithinValid) {
  config_.fd_cache_valid = Millis{60'000};
  write_file(root_ / "a.txt", "first version");
  with_cache([&](FdCache& c) {
    EXPECT_EQ(body_of(c.lookup("/a.txt", 0)), "first version");
    write_file(root_ / "a.txt", "second, longer version");
    EXPECT_EQ(c.lookup("/a.txt", 0)->size, std::string("first version").size());
  });
}

TEST_F(FdCacheTest, DeletedFileIsNotFoundAfterValid) {
  write_file(root_ / "gone.txt", "here");
  with_cache([&](FdCache& c) {
    EXPECT_EQ(c.lookup("/gone.txt", 0)->error, 0);
    fs::remove(root_ / "gone.txt");
    rt::sleep_for(70ms);
    EXPECT_EQ(c.lookup("/gone.txt", 0)->error, ENOENT);
  });
}

TEST_F(FdCacheTest, ReplacedByRenameServesNewContent) {
  write_file(root_ / "r.txt", "old old old old old old");
  with_cache([&](FdCache& c) {
    FileRef held = c.lookup("/r.txt", 0);
    write_file(root_ / "r.tmp", "brand new contents here");  // same size, new inode
    fs::rename(root_ / "r.tmp", root_ / "r.txt");
    rt::sleep_for(70ms);
    FileRef fresh = c.lookup("/r.txt", 0);
    EXPECT_NE(fresh->ino, held->ino);
    EXPECT_EQ(body_of(fresh), "brand new contents here");
    // A response still holding the old entry keeps reading the old file consistently.
    EXPECT_EQ(body_of(held), "old old old old old old");
  });
}

// Revalidation resolves the path with the root's rules (RESOLVE_BENEATH by default), so a
// served file replaced by a symlink out of the root is refused at the next lookup after
// `valid`, and one replaced by a symlink inside the root serves the target.
TEST_F(FdCacheTest, RevalidationKeepsTheRootsSymlinkRules) {
  write_file(root_ / "out.txt", "inside");
  write_file(root_ / "target.txt", "the target");
  write_file(root_ / "in.txt", "inside too");
  with_cache([&](FdCache& c) {
    EXPECT_EQ(body_of(c.lookup("/out.txt", 0)), "inside");
    EXPECT_EQ(body_of(c.lookup("/in.txt", 0)), "inside too");
    fs::remove(root_ / "out.txt");
    fs::create_symlink("/etc/hostname", root_ / "out.txt");
    fs::remove(root_ / "in.txt");
    fs::create_symlink("target.txt", root_ / "in.txt");
    rt::sleep_for(70ms);
    EXPECT_EQ(c.lookup("/out.txt", 0)->error, EXDEV);
    EXPECT_EQ(body_of(c.lookup("/in.txt", 0)), "the target");
  });
}

TEST_F(FdCacheTest, TruncatedFileNeverDisagreesWithItsSize) {
  std::string big(100'000, 'x');
  write_file(root_ / "t.bin", big);
  with_cache([&](FdCache& c) {
    FileRef e = c.lookup("/t.bin", 0);
    ASSERT_FALSE(e->has_bytes());
    ASSERT_EQ(e->size, big.size());
    ::truncate((root_ / "t.bin").c_str(), 10);
    // The entry still promises 100000 bytes; reading past the new end yields 0 (EOF), which
    // the connection treats as "close without completing" (tested end to end). The cache
    // itself picks up the new size after `valid`.
    char buf[16];
    EXPECT_EQ(::pread(e->fd, buf, sizeof buf, 50'000), 0);
    rt::sleep_for(70ms);
    EXPECT_EQ(c.lookup("/t.bin", 0)->size, 10u);
  });
}

TEST_F(FdCacheTest, ManyDistinctFilesThroughSmallCacheLeakNoDescriptor) {
  const int kFiles = std::getenv("WEFT_TEST_SCALE") ? 10'000 : 100'000;
  fs::create_directories(root_ / "many");
  for (int i = 0; i < kFiles; ++i) {
    int fd =
        ::open((root_ / "many" / std::to_string(i)).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ::write(fd, "0123456789abcdefghij", 20);  // over max_file_bytes: kept open as an fd
    ::close(fd);
  }
  int before = count_fds();
  with_cache(
      [&](FdCache& c) {
        for (int i = 0; i < kFiles; ++i) {
          FileRef e = c.lookup("/many/" + std::to_string(i), 0);
          ASSERT_EQ(e->error, 0);
        }
        EXPECT_LE(c.size(), 1000u + 64);  // per-shard rounding
        // Open descriptors: at most the cache's entries (plus the runtime's own).
        EXPECT_LE(count_fds(), before + 1000 + 64 + 32);
      },
      1000);
  EXPECT_EQ(count_fds(), before);
}

TEST_F(FdCacheTest, ConcurrentMissesOpenOnce) {
  write_file(root_ / "hot.txt", "hot");
  with_cache([&](FdCache& c) {
    rt::WaitGroup wg;
    std::atomic<int> ok{0};
    wg.add(200);
    for (int i = 0; i < 200; ++i) {
      rt::spawn([&] {
        if (c.lookup("/hot.txt", 0)->error == 0) ok.fetch_add(1);
        wg.done();
      }).detach();
    }
    wg.wait();
    EXPECT_EQ(ok.load(), 200);
    EXPECT_EQ(c.opens(), 1u);
  });
}

TEST_F(FdCacheTest, ConcurrentLookupsUnderEvictionStayConsistent) {
  for (int i = 0; i < 200; ++i) write_file(root_ / ("c" + std::to_string(i)), std::to_string(i));
  with_cache(
      [&](FdCache& c) {
        rt::WaitGroup wg;
        std::atomic<int> bad{0};
        wg.add(50);
        for (int f = 0; f < 50; ++f) {
          rt::spawn([&, f] {
            for (int k = 0; k < 2000; ++k) {
              int i = (k * 7 + f * 13) % 200;
              FileRef e = c.lookup("/c" + std::to_string(i), 0);
              if (!e || e->error || body_of(e) != std::to_string(i)) bad.fetch_add(1);
              if (k % 100 == 0) rt::yield();
            }
            wg.done();
          }).detach();
        }
        wg.wait();
        EXPECT_EQ(bad.load(), 0);
        EXPECT_LE(c.size(), 64u + 64);
      },
      64);
}

// `errors_valid` is a minute here: a test cannot bound the time between two lookups (see
// ModificationNotSeenWithinValid).
// Only regular files are opened for reading: a FIFO's writer is not woken (opening it would
// be a side effect), and a UNIX socket is refused like a FIFO, not with open(2)'s ENXIO.
TEST_F(FdCacheTest, SpecialFilesAreRefusedWithoutBeingOpened) {
  const fs::path fifo = root_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  std::atomic<bool> writer_opened{false};
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);  // blocks until a reader opens
    writer_opened = true;
    if (fd >= 0) ::close(fd);
  });
  const int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = (root_ / "sock").string();
  ASSERT_LT(sock_path.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, sock_path.c_str(), sock_path.size());
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  with_cache([&](FdCache& c) {
    EXPECT_EQ(c.lookup("/fifo", 0)->error, EACCES);
    EXPECT_EQ(c.lookup("/sock", 0)->error, EACCES);
  });
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(writer_opened) << "the FIFO was opened for reading";
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // frees the writer
  writer.join();
  ::close(reader);
  ::close(sock);
}

void set_mtime(const fs::path& p, timespec t) {
  const timespec times[2] = {t, t};
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), times, 0), 0);
}

// Two versions of one size within one second get different ETags (the mtime's nanoseconds).
TEST_F(FdCacheTest, EtagSeesSubSecondChanges) {
  config_.fd_cache_valid = Millis{0};
  const fs::path f = root_ / "f.txt";
  with_cache([&](FdCache& c) {
    write_file(f, "aaaa");
    set_mtime(f, {1'600'000'000, 100});
    const std::string first(c.lookup("/f.txt", 0)->etag.view());
    write_file(f, "bbbb");
    set_mtime(f, {1'600'000'000, 200});
    const FileRef second = c.lookup("/f.txt", 0);
    EXPECT_EQ(body_of(second), "bbbb");
    EXPECT_NE(second->etag.view(), first);
  });
}

// A file looked at within its mtime's second gets no Last-Modified (it would not be a strong
// validator), and gets one once that second is over, without waiting for `valid`.
TEST_F(FdCacheTest, LastModifiedOnlyOnceItsSecondIsOver) {
  config_.fd_cache_valid = Millis{60'000};
  const fs::path f = root_ / "new.txt";
  with_cache([&](FdCache& c) {
    write_file(f, "fresh");
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    set_mtime(f, {now.tv_sec + 1, 0});  // within "now" for the next second, whatever the clock
    const FileRef young = c.lookup("/new.txt", 0);
    EXPECT_FALSE(young->mtime_strong);
    EXPECT_EQ(young->fields.text.find("Last-Modified"), std::string::npos) << young->fields.text;
    EXPECT_NE(young->fields.text.find("ETag: "), std::string::npos);
    std::this_thread::sleep_for(2100ms);
    const FileRef old = c.lookup("/new.txt", 0);
    EXPECT_TRUE(old->mtime_strong);
    EXPECT_NE(old->fields.text.find("Last-Modified: "), std::string::npos) << old->fields.text;
    EXPECT_EQ(c.opens(), 2u);
  });
}

TEST_F(FdCacheTest, MissesAreCachedForErrorsValid) {
  config_.fd_cache_errors_valid = Millis{60'000};
  with_cache([&](FdCache& c) {
    EXPECT_EQ(c.lookup("/missing", 0)->error, ENOENT);
    write_file(root_ / "missing", "now here");
    EXPECT_EQ(c.lookup("/missing", 0)->error, ENOENT);
    EXPECT_EQ(c.opens(), 1u);
  });
}

TEST_F(FdCacheTest, MissesExpireAfterErrorsValid) {
  with_cache([&](FdCache& c) {
    EXPECT_EQ(c.lookup("/missing", 0)->error, ENOENT);
    write_file(root_ / "missing", "now here");
    rt::sleep_for(70ms);  // at least `errors_valid` (50 ms) has passed
    EXPECT_EQ(c.lookup("/missing", 0)->error, 0);
    EXPECT_EQ(c.opens(), 2u);
  });
}

TEST_F(FdCacheTest, ByteBudgetBoundsCachedContents) {
  config_.fd_cache_max_file_bytes = 1000;
  config_.fd_cache_max_bytes = 2500;
  for (int i = 0; i < 5; ++i) write_file(root_ / ("f" + std::to_string(i)), std::string(1000, 'a'));
  with_cache([&](FdCache& c) {
    int in_memory = 0;
    for (int i = 0; i < 5; ++i) {
      FileRef e = c.lookup("/f" + std::to_string(i), 0);
      in_memory += e->has_bytes();
      EXPECT_EQ(body_of(e), std::string(1000, 'a'));
    }
    EXPECT_EQ(in_memory, 2);
    EXPECT_LE(c.bytes(), 2500u);
  });
}

TEST_F(FdCacheTest, InotifyModeSeesChangesWithoutWaitingForValid) {
  config_.fd_cache_valid = Millis{3'600'000};  // an hour: only inotify can notice
  config_.fd_cache_revalidate = Revalidation::inotify;
  write_file(root_ / "w.txt", "before");
  with_cache([&](FdCache& c) {
    rt::CancelToken stop;
    auto watcher = rt::spawn([&] { c.watch_loop(stop); });
    EXPECT_EQ(body_of(c.lookup("/w.txt", 0)), "before");
    write_file(root_ / "w.txt", "after!!");
    std::string seen;
    for (int i = 0; i < 200 && seen != "after!!"; ++i) {
      rt::sleep_for(5ms);
      seen = body_of(c.lookup("/w.txt", 0));
    }
    EXPECT_EQ(seen, "after!!");
    stop.cancel();
    watcher.join();
  });
}

// A change reported while the file is being opened: the load may have seen the old file, so
// its result is handed to the lookup but not kept (watched, it would be served for ever).
TEST_F(FdCacheTest, InotifyChangeDuringALoadIsNotLost) {
  config_.fd_cache_valid = Millis{3'600'000};
  config_.fd_cache_revalidate = Revalidation::inotify;
  write_file(root_ / "l.txt", "v1");
  with_cache(
      [&](FdCache& c) {
        // One processor: this fiber runs while the lookup below waits for its open.
        auto changer = rt::spawn([&] {
          for (int i = 0; i < 10'000 && c.size() == 0; ++i) rt::yield();
          c.clear();  // what the inotify loop does on a directory event
        });
        c.lookup("/l.txt", 0);
        changer.join();
        EXPECT_EQ(c.size(), 0u) << "the load that raced a change was kept";
        c.lookup("/l.txt", 0);
        EXPECT_EQ(c.opens(), 2u);
      },
      1000, /*processors=*/1);
}

// Renaming a grandparent directory (the content leaves the root) is noticed, though no
// watch on the file's own directory reports it.
TEST_F(FdCacheTest, InotifySeesAGrandparentRenamed) {
  config_.fd_cache_valid = Millis{3'600'000};
  config_.fd_cache_revalidate = Revalidation::inotify;
  fs::create_directories(root_ / "a" / "b");
  write_file(root_ / "a" / "b" / "f.txt", "inside");
  const fs::path outside = make_test_dir("fdcache-out");
  with_cache([&](FdCache& c) {
    rt::CancelToken stop;
    auto watcher = rt::spawn([&] { c.watch_loop(stop); });
    EXPECT_EQ(body_of(c.lookup("/a/b/f.txt", 0)), "inside");
    fs::rename(root_ / "a", outside / "a");
    int err = 0;
    for (int i = 0; i < 200 && err == 0; ++i) {
      rt::sleep_for(5ms);
      err = c.lookup("/a/b/f.txt", 0)->error;
    }
    EXPECT_EQ(err, ENOENT) << "content moved out of the root is still served";
    stop.cancel();
    watcher.join();
  });
  fs::remove_all(outside);
}

// Directories that do not exist are not remembered: a client naming /n1/x, /n2/x, ... must
// not grow the watch table.
TEST_F(FdCacheTest, InotifyDoesNotRememberMissingDirectories) {
  config_.fd_cache_revalidate = Revalidation::inotify;
  with_cache([&](FdCache& c) {
    for (int i = 0; i < 200; ++i) {
      EXPECT_EQ(c.lookup("/n" + std::to_string(i) + "/x", 0)->error, ENOENT);
    }
    EXPECT_EQ(c.watched_dirs(), 1u) << "only the root, which exists";
    fs::create_directories(root_ / "d");
    write_file(root_ / "d" / "in.txt", "t");
    c.lookup("/d/in.txt", 0);
    EXPECT_EQ(c.watched_dirs(), 2u);  // the root and /d
  });
}

// Writes `content` over the start of the existing file `p`, in place (same inode, no
// truncation): what an editor saving with the same size, or a copy over the file, does.
void rewrite_in_place(const fs::path& p, std::string_view content) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, content.data(), content.size(), 0), static_cast<ssize_t>(content.size()));
  ::close(fd);
}

// Writes `content` to a temporary name and renames it over `p`, as deploy tools do.
void replace_by_rename(const fs::path& p, std::string_view content) {
  const fs::path tmp = p.string() + ".tmp";
  write_file(tmp, content);
  fs::rename(tmp, p);
}

// The default configuration serves no file that changed before the lookup: replaced by a
// rename, rewritten in place with the same size (a new ETag too), truncated, removed, and
// created where a lookup had failed. Before the inotify default, each of these served the
// old entry for fd_cache.valid (5 s).
TEST_F(FdCacheTest, DefaultNeverServesAChangedFile) {
  config_ = Config{};
  config_.root = root_;
  const fs::path f = root_ / "f.txt";
  write_file(f, "version 1");
  with_cache([&](FdCache& c) {
    EXPECT_EQ(body_of(c.lookup("/f.txt", 0)), "version 1");
    replace_by_rename(f, "version 2");
    const FileRef v2 = c.lookup("/f.txt", 0);
    EXPECT_EQ(body_of(v2), "version 2");
    rewrite_in_place(f, "version 3");
    const FileRef v3 = c.lookup("/f.txt", 0);
    EXPECT_EQ(body_of(v3), "version 3");
    EXPECT_NE(v3->etag.view(), v2->etag.view());
    ASSERT_EQ(::truncate(f.c_str(), 4), 0);
    EXPECT_EQ(body_of(c.lookup("/f.txt", 0)), "vers");
    fs::remove(f);
    EXPECT_EQ(c.lookup("/f.txt", 0)->error, ENOENT);
    replace_by_rename(f, "version 4");
    EXPECT_EQ(body_of(c.lookup("/f.txt", 0)), "version 4");
  });
}

// The same for what changes around a file: its directory renamed away and another put in
// its place, a symlink to a directory switched (and a change in the new target after),
// a symlink's target file rewritten (inotify reports that in the target's directory: statx),
// one directory reached by two paths, and a file changed through another hard link.
TEST_F(FdCacheTest, DefaultSeesDirectoriesSymlinksAndLinksChange) {
  config_ = Config{};
  config_.root = root_;
  for (const char* d : {"d", "r1", "r2", "real"}) fs::create_directories(root_ / d);
  write_file(root_ / "d" / "f.txt", "in d, first");
  write_file(root_ / "r1" / "f.txt", "release one");
  write_file(root_ / "r2" / "f.txt", "release two");
  write_file(root_ / "real" / "g.txt", "g version 1");
  write_file(root_ / "v1.txt", "target 1");
  write_file(root_ / "h1.txt", "hard 1");
  fs::create_hard_link(root_ / "h1.txt", root_ / "h2.txt");
  fs::create_directory_symlink("r1", root_ / "cur");
  fs::create_directory_symlink("real", root_ / "alias");
  fs::create_symlink("v1.txt", root_ / "latest.txt");
  with_cache([&](FdCache& c) {
    EXPECT_EQ(body_of(c.lookup("/d/f.txt", 0)), "in d, first");
    fs::create_directories(root_ / "d.new");
    write_file(root_ / "d.new" / "f.txt", "in d, second");
    fs::rename(root_ / "d", root_ / "d.old");
    fs::rename(root_ / "d.new", root_ / "d");
    EXPECT_EQ(body_of(c.lookup("/d/f.txt", 0)), "in d, second");

    EXPECT_EQ(body_of(c.lookup("/cur/f.txt", 0)), "release one");
    fs::create_directory_symlink("r2", root_ / "cur.tmp");
    fs::rename(root_ / "cur.tmp", root_ / "cur");
    EXPECT_EQ(body_of(c.lookup("/cur/f.txt", 0)), "release two");
    rewrite_in_place(root_ / "r2" / "f.txt", "release 2bis");
    EXPECT_EQ(body_of(c.lookup("/cur/f.txt", 0)), "release 2bis");

    EXPECT_EQ(body_of(c.lookup("/latest.txt", 0)), "target 1");
    rewrite_in_place(root_ / "v1.txt", "target 2");
    EXPECT_EQ(body_of(c.lookup("/latest.txt", 0)), "target 2");

    EXPECT_EQ(body_of(c.lookup("/alias/g.txt", 0)), "g version 1");
    EXPECT_EQ(body_of(c.lookup("/real/g.txt", 0)), "g version 1");
    rewrite_in_place(root_ / "real" / "g.txt", "g version 2");
    EXPECT_EQ(body_of(c.lookup("/alias/g.txt", 0)), "g version 2");
    EXPECT_EQ(body_of(c.lookup("/real/g.txt", 0)), "g version 2");

    EXPECT_EQ(body_of(c.lookup("/h1.txt", 0)), "hard 1");
    rewrite_in_place(root_ / "h2.txt", "hard 2");
    EXPECT_EQ(body_of(c.lookup("/h1.txt", 0)), "hard 2");
  });
}

// Issue 43: the release layout `site -> rel/cur`, `rel/cur -> v1`, switched by a rename in
// rel/ (a directory no request path names): the next lookup sees v2, and a cached miss of a
// file only v2 has is found. Links to an ancestor (`a -> .`, `b -> .`) add no watch however
// many paths go through them, and fd_cache.max_watches bounds the real directories watched.
TEST_F(FdCacheTest, PathsThroughSymlinksAreRevalidatedAndWatchesBounded) {
  config_ = Config{};
  config_.root = root_;
  config_.fd_cache_max_watches = 4;
  for (const char* d : {"rel/v1", "rel/v2", "loop", "d1", "d2", "d3", "d4"}) {
    fs::create_directories(root_ / d);
  }
  write_file(root_ / "rel" / "v1" / "app.js", "v1");
  write_file(root_ / "rel" / "v2" / "app.js", "version 2");
  write_file(root_ / "rel" / "v2" / "new.js", "new");
  write_file(root_ / "loop" / "f.txt", "loop");
  fs::create_directory_symlink("v1", root_ / "rel" / "cur");
  fs::create_directory_symlink("rel/cur", root_ / "site");
  fs::create_directory_symlink(".", root_ / "loop" / "a");
  fs::create_directory_symlink(".", root_ / "loop" / "b");
  with_cache([&](FdCache& c) {
    ASSERT_TRUE(c.watching());
    EXPECT_EQ(body_of(c.lookup("/site/app.js", 0)), "v1");
    EXPECT_EQ(c.lookup("/site/new.js", 0)->error, ENOENT);
    fs::create_directory_symlink("v2", root_ / "rel" / "cur.tmp");
    fs::rename(root_ / "rel" / "cur.tmp", root_ / "rel" / "cur");
    EXPECT_EQ(body_of(c.lookup("/site/app.js", 0)), "version 2");
    EXPECT_EQ(body_of(c.lookup("/site/new.js", 0)), "new");

    EXPECT_EQ(body_of(c.lookup("/loop/f.txt", 0)), "loop");
    const std::size_t watched = c.watched_dirs();  // the root and /loop
    EXPECT_EQ(watched, 2u);
    for (int i = 0; i < 200; ++i) {
      std::string path = "/loop";
      for (int k = 0; k < 12; ++k) path += (i >> (k % 8)) & 1 ? "/a" : "/b";
      EXPECT_EQ(body_of(c.lookup(path + "/f.txt", 0)), "loop") << path;
    }
    EXPECT_EQ(c.watched_dirs(), watched);

    for (const char* d : {"d1", "d2", "d3", "d4"}) {
      write_file(root_ / d / "f.txt", std::string(d) + " one");
      EXPECT_EQ(body_of(c.lookup(std::string("/") + d + "/f.txt", 0)), std::string(d) + " one");
    }
    EXPECT_EQ(c.watched_dirs(), 4u);  // the bound: d3 and d4 are not watched
    for (const char* d : {"d1", "d2", "d3", "d4"}) {
      rewrite_in_place(root_ / d / "f.txt", std::string(d) + " two");
      EXPECT_EQ(body_of(c.lookup(std::string("/") + d + "/f.txt", 0)), std::string(d) + " two");
    }
  });
}

// The change queue is read once for all the lookups whose fiber's bytes arrived before the
// read began (the I/O stamp, runtime/io_epoch.hpp), not once per lookup: here one fiber's
// stamp stands for a reaped batch.
TEST_F(FdCacheTest, ChangeQueueIsReadOncePerBatch) {
  config_ = Config{};
  config_.root = root_;
  write_file(root_ / "b.txt", "batch");
  with_cache([&](FdCache& c) {
    ASSERT_TRUE(c.watching());
    rt::set_io_stamp(rt::io_epoch());  // as if a completion had just been reaped
    EXPECT_EQ(body_of(c.lookup("/b.txt", 0)), "batch");
    const uint64_t reads = c.event_reads();
    EXPECT_GE(reads, 1u);
    for (int i = 0; i < 100; ++i) EXPECT_EQ(body_of(c.lookup("/b.txt", 0)), "batch");
    EXPECT_EQ(c.event_reads(), reads);
    rt::set_io_stamp(rt::io_epoch());  // the next batch: read again
    rewrite_in_place(root_ / "b.txt", "BATCH");
    EXPECT_EQ(body_of(c.lookup("/b.txt", 0)), "BATCH");
    EXPECT_EQ(c.event_reads(), reads + 1);
  });
}

// Lost events (the queue overflowed while nothing read it) drop every entry, and watches
// are set up again: a change whose event was lost is still seen, and so is the next one.
TEST_F(FdCacheTest, OverflowedQueueDropsEverything) {
  config_ = Config{};
  config_.root = root_;
  int max_events = 16384;
  if (std::ifstream q("/proc/sys/fs/inotify/max_queued_events"); q) q >> max_events;
  if (max_events > 1'000'000) GTEST_SKIP() << "max_queued_events too large to overflow quickly";
  write_file(root_ / "a.txt", "a one");
  write_file(root_ / "b", "");
  write_file(root_ / "c", "");
  with_cache([&](FdCache& c) {
    EXPECT_EQ(body_of(c.lookup("/a.txt", 0)), "a one");
    // Alternating names: consecutive identical events would be merged into one.
    for (int i = 0; i <= max_events; ++i) {
      ASSERT_EQ(::utimensat(AT_FDCWD, (root_ / (i % 2 ? "b" : "c")).c_str(), nullptr, 0), 0);
    }
    rewrite_in_place(root_ / "a.txt", "a two");  // its event is lost
    EXPECT_EQ(body_of(c.lookup("/a.txt", 0)), "a two");
    rewrite_in_place(root_ / "a.txt", "a 3rd");
    EXPECT_EQ(body_of(c.lookup("/a.txt", 0)), "a 3rd");
  });
}

// statx revalidation without a window checks every lookup: a rewrite in place with the
// same size is seen (mtime and ctime).
TEST_F(FdCacheTest, StatxWithoutAWindowSeesEveryChange) {
  config_.fd_cache_valid = Millis{0};
  write_file(root_ / "s.txt", "statx 1");
  with_cache([&](FdCache& c) {
    ASSERT_FALSE(c.watching());
    EXPECT_EQ(body_of(c.lookup("/s.txt", 0)), "statx 1");
    rewrite_in_place(root_ / "s.txt", "statx 2");
    EXPECT_EQ(body_of(c.lookup("/s.txt", 0)), "statx 2");
  });
}

// With inotify, `valid` > 0 is an opt-in window: events are read at most that often, so a
// change within it is not seen by lookups (nothing reads in the background here).
TEST_F(FdCacheTest, InotifyWindowIsOptIn) {
  config_.fd_cache_revalidate = Revalidation::inotify;
  config_.fd_cache_valid = Millis{3'600'000};
  write_file(root_ / "w.txt", "window 1");
  with_cache([&](FdCache& c) {
    EXPECT_EQ(body_of(c.lookup("/w.txt", 0)), "window 1");
    rewrite_in_place(root_ / "w.txt", "window 2");
    EXPECT_EQ(body_of(c.lookup("/w.txt", 0)), "window 1");
  });
}

// The process's address space now, in bytes (/proc/self/statm counts pages).
std::size_t address_space() {
  unsigned long pages = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%lu", &pages) != 1) pages = 0;
    std::fclose(f);
  }
  return pages * static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
}

// A load that throws (memory runs out while a small file is read into memory) leaves no
// slot behind: its waiters' list lived on the unwound stack, so a later lookup of the path
// that found the slot still loading waited on it for ever (or corrupted that stack). In a
// child process, whose address space is limited so that the file's copy cannot be made.
TEST_F(FdCacheTest, ALoadThatThrowsLeavesNoSlot) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "the sanitizers reserve terabytes of address space";
#endif
  // Larger than a glibc thread arena's heap (64 MiB, reserved whole): the copy needs a new
  // mapping, which the limit below refuses.
  constexpr std::size_t kSize = 100 << 20;
  config_.fd_cache_max_file_bytes = 128 << 20;
  config_.fd_cache_max_bytes = std::size_t{1} << 30;
  write_file(root_ / "big.bin", std::string(kSize, 'b'));
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::alarm(30);  // a lookup waiting for ever ends the child
    int code = 0;
    with_cache([&](FdCache& c) {
      rlimit old{};
      ::getrlimit(RLIMIT_AS, &old);
      rlimit tight = old;
      ::malloc_trim(0);  // no free block left that could hold the copy without a new mapping
      tight.rlim_cur = address_space() + (8 << 20);  // far less than the file
      ::setrlimit(RLIMIT_AS, &tight);
      try {
        FileRef e = c.lookup("/big.bin", 0);
        code = 1;  // no copy was attempted: the test proves nothing
      } catch (const std::bad_alloc&) {
      }
      ::setrlimit(RLIMIT_AS, &old);
      if (code != 0) return;
      const FileRef e = c.lookup("/big.bin", 0);
      if (e->error != 0 || e->size != kSize) code = 2;
    });
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: the load did not throw; 2: the second lookup failed";
}

TEST_F(FdCacheTest, SweepDropsInactiveEntries) {
  config_.fd_cache_inactive = Millis{30};
  write_file(root_ / "s.txt", "x");
  with_cache([&](FdCache& c) {
    c.lookup("/s.txt", 0);
    EXPECT_EQ(c.size(), 1u);
    rt::sleep_for(50ms);
    EXPECT_EQ(c.sweep(), 1u);
    EXPECT_EQ(c.size(), 0u);
  });
}

TEST_F(FdCacheTest, DisabledCacheOpensEveryTime) {
  config_.fd_cache = false;
  write_file(root_ / "d.txt", "x");
  with_cache([&](FdCache& c) {
    c.lookup("/d.txt", 0);
    c.lookup("/d.txt", 0);
    EXPECT_EQ(c.opens(), 2u);
    EXPECT_EQ(c.size(), 0u);
  });
}

}  // namespace
}  // namespace weft::http
