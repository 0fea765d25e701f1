#include "server/files/change_watch.hpp"

#include <cerrno>
#include <climits>
#include <cstring>

#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/inotify.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "runtime/io.hpp"
#include "runtime/io_epoch.hpp"
#include "runtime/scheduler.hpp"
#include "server/http/path.hpp"

namespace weft::http {

namespace {

// IN_DONT_FOLLOW with IN_ONLYDIR: a symlink on the path is not a directory (ENOTDIR), so it
// is never watched through; see watch_dirs_of.
constexpr uint32_t kWatchMask = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM |
                                IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF |
                                IN_MOVE_SELF | IN_ONLYDIR | IN_DONT_FOLLOW;

// File systems whose files change without this kernel knowing (another client of the
// server, or a FUSE daemon's backing store), so inotify would stay silent: statfs(2) f_type.
bool remote_file_system(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return false;
  switch (static_cast<uint64_t>(fs.f_type)) {
    case 0x6969:      // NFS
    case 0x517B:      // SMB
    case 0xFF534D42:  // CIFS
    case 0xFE534D42:  // SMB2
    case 0x65735546:  // FUSE
    case 0x00C36400:  // Ceph
    case 0x01021997:  // 9P
    case 0x5346414F:  // AFS
    case 0x73757245:  // Coda
    case 0x7461636F:  // OCFS2
    case 0x01161970:  // GFS2
      return true;
    default:
      return false;
  }
}

std::string_view dir_of(std::string_view path) {
  auto slash = path.rfind('/');
  return slash == std::string_view::npos ? std::string_view{} : path.substr(0, slash);
}

}  // namespace

std::unique_ptr<ChangeWatch> ChangeWatch::create(int root_fd, Sink& sink, std::size_t max_watches) {
  if (remote_file_system(root_fd)) {
    spdlog::warn(
        "fd cache: the document root is on a network or FUSE file system, whose changes "
        "inotify may not see; revalidating with statx");
    return nullptr;
  }
  const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    spdlog::warn("fd cache: inotify unavailable ({}); revalidating with statx",
                 std::strerror(errno));
    return nullptr;
  }
  return std::unique_ptr<ChangeWatch>(new ChangeWatch(root_fd, fd, sink, max_watches));
}

ChangeWatch::ChangeWatch(int root_fd, int inotify_fd, Sink& sink, std::size_t max_watches)
    : root_fd_(root_fd), fd_(inotify_fd), sink_(sink), max_watches_(max_watches) {}

ChangeWatch::~ChangeWatch() {
  ::close(fd_);  // drops every watch with the instance
}

void ChangeWatch::catch_up() {
  // Acquire: a ticket seen here comes with the invalidations made before it was published.
  const uint64_t stamp = rt::io_stamp();
  if (read_ticket_.load(std::memory_order_acquire) > stamp) return;
  drain_after(stamp);
}

void ChangeWatch::drain() {
  drain_after(rt::kNoIoStamp);
}

void ChangeWatch::drain_after(uint64_t stamp) {
  std::lock_guard g(drain_mu_);
  // Another fiber's read may have begun after `stamp` while this one waited for the lock.
  if (read_ticket_.load(std::memory_order_relaxed) > stamp) return;
  // The ticket before the read: every event queued before a stamp lower than the ticket
  // is in the queue when the read below looks.
  const uint64_t ticket = rt::advance_io_epoch();
  drained_at_ns_.store(rt::to_ns(rt::now()), std::memory_order_relaxed);
  read_events();
  read_ticket_.store(ticket, std::memory_order_release);
}

void ChangeWatch::read_events() {
  // Room for a few dozen events; a read that leaves room for one more of the longest
  // emptied the queue as it stood, so it needs no second read to see EAGAIN.
  alignas(inotify_event) char buf[4096];
  constexpr std::size_t kLongest = sizeof(inotify_event) + NAME_MAX + 1;
  while (true) {
    reads_.fetch_add(1, std::memory_order_relaxed);
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) {
        // Events may be lost: nothing cached can be trusted.
        spdlog::error("fd cache: inotify read: {}", std::strerror(errno));
        sink_.invalidate_all();
      }
      return;
    }
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<inotify_event*>(p);
      p += sizeof(inotify_event) + ev->len;
      apply(*ev);
    }
    if (static_cast<std::size_t>(n) + kLongest <= sizeof buf) return;
  }
}

void ChangeWatch::apply(const ::inotify_event& ev) {
  if (ev.mask & IN_Q_OVERFLOW) {
    // Events were lost, directory moves among them perhaps: watches may name the wrong
    // paths now. Start over.
    spdlog::warn("fd cache: inotify queue overflowed; dropping every entry and watch");
    {
      std::lock_guard g(watch_mu_);
      forget_all_locked();
    }
    sink_.invalidate_all();
    return;
  }
  std::vector<std::string> paths;
  bool everything = false;
  {
    std::lock_guard g(watch_mu_);
    auto it = wd_dirs_.find(ev.wd);
    if (it == wd_dirs_.end()) return;  // a watch forgotten already (its IN_IGNORED, say)
    if (ev.mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) {
      everything = true;  // a watched directory went away or moved
    } else if (ev.len == 0 || (ev.mask & (IN_ISDIR | IN_ATTRIB)) == (IN_ISDIR | IN_ATTRIB)) {
      // The directory's own attributes, or a subdirectory's (its permissions decide what
      // below it can be opened): every entry below may answer differently now.
      everything = (ev.mask & IN_ATTRIB) != 0;
    } else {
      for (const std::string& dir : it->second) {
        paths.push_back(dir + "/" + ev.name);
        // A watched directory (or a symlink standing for one) removed, replaced or moved:
        // its watch now names another directory, or none.
        if (dir_wds_.contains(paths.back())) everything = true;
      }
    }
    // Watches of paths that now lead elsewhere would report the wrong directory's changes:
    // forget them all (rare); the next loads watch again.
    if (everything && (ev.mask & IN_ATTRIB) == 0) forget_all_locked();
  }
  if (everything) {
    sink_.invalidate_all();
    return;
  }
  for (const std::string& p : paths) sink_.invalidate(p);
}

void ChangeWatch::forget_all_locked() {
  for (const auto& [wd, dirs] : wd_dirs_) ::inotify_rm_watch(fd_, wd);
  wd_dirs_.clear();
  dir_wds_.clear();
}

bool ChangeWatch::watch_dirs_of(std::string_view path) {
  // Every directory from the root down to the file's is watched: inotify reports changes to
  // a directory's own entries only, so renaming or replacing a grandparent (content moved out
  // of the root) is seen only by a watch on the grandparent's parent. Each is watched without
  // following a symlink, from the root down, so every watch is a real directory reached by
  // real directories: a path through a symlink (a release link switched in a directory
  // nobody watches, "site -> releases/cur -> v1") stops at the link, and its entries are
  // revalidated with statx, as is every path past max_watches. So the maps hold one path per
  // directory, never more than max_watches ("a -> ." loops cannot grow them).
  if (path.size() > 1 && names_directory(path)) path.remove_suffix(1);
  std::string_view dir = dir_of(path);  // "" for entries in the root, "/a/b" otherwise
  std::lock_guard g(watch_mu_);
  for (std::size_t end = 0;;) {
    if (!watch_one_dir(std::string(dir.substr(0, end)))) return false;
    if (end == dir.size()) return true;
    end = dir.find('/', end + 1);
    if (end == std::string_view::npos) end = dir.size();
  }
}

std::size_t ChangeWatch::watched_dirs() const {
  std::lock_guard g(watch_mu_);
  return dir_wds_.size();
}

bool ChangeWatch::watch_one_dir(const std::string& dir) {
  if (dir_wds_.contains(dir)) return true;
  if (dir_wds_.size() >= max_watches_) {
    if (!warned_max_.exchange(true)) {
      spdlog::warn(
          "fd cache: {} directories watched (fd_cache.max_watches); files in the others are "
          "checked with statx on every request",
          dir_wds_.size());
    }
    return false;
  }
  std::string rel = root_relative(dir);
  // inotify has no *at() form: watch through the root descriptor's /proc path.
  std::string proc = "/proc/self/fd/" + std::to_string(root_fd_) + "/" + rel;
  const int wd = ::inotify_add_watch(fd_, proc.c_str(), kWatchMask);
  if (wd < 0) {
    if (errno == ENOSPC && !warned_limit_.exchange(true)) {
      spdlog::warn(
          "fd cache: inotify watch limit reached (fs.inotify.max_user_watches); files in "
          "directories not watched are checked with statx on every request");
    }
    // Not remembered: a client can name any number of directories that do not exist (or
    // symlinks, ENOTDIR), and their entries fall back to statx revalidation. The path is
    // client input: quoted.
    spdlog::debug("fd cache: cannot watch {:?}: {}", dir, std::strerror(errno));
    return false;
  }
  dir_wds_[dir] = wd;
  wd_dirs_[wd].push_back(dir);  // the same directory reached by another path: same wd
  return true;
}

void ChangeWatch::run(rt::CancelToken& stop) {
  while (true) {
    const int r = rt::io::poll(fd_, POLLIN, rt::kNoDeadline, &stop);
    if (r == -ECANCELED) return;
    if (r < 0) {
      spdlog::error("fd cache: inotify poll: {}", std::strerror(-r));
      rt::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    drain();
  }
}

}  // namespace weft::http
