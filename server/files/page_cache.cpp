#include "server/files/page_cache.hpp"

#include <atomic>
#include <cerrno>

#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

namespace weft::http {
namespace {

// <linux/mman.h> of Debian 12's headers predates cachestat(2): its ABI, from the kernel's
// include/uapi/linux/mman.h and arch/x86/entry/syscalls/syscall_64.tbl.
#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif
struct CachestatRange {
  uint64_t off;
  uint64_t len;
};
struct Cachestat {
  uint64_t nr_cache;
  uint64_t nr_dirty;
  uint64_t nr_writeback;
  uint64_t nr_evicted;
  uint64_t nr_recently_evicted;
};

// Cleared for good when the kernel has no cachestat (ENOSYS): then every call would fail.
std::atomic<bool> g_cachestat{true};

const uint64_t kPage = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));

// Returns 1 resident, 0 not, -1 when cachestat cannot answer for this file.
int cachestat_resident(int fd, uint64_t offset, uint64_t length) {
  CachestatRange range{offset, length};
  Cachestat cs{};
  if (::syscall(SYS_cachestat, fd, &range, &cs, 0) != 0) {
    if (errno == ENOSYS) g_cachestat.store(false, std::memory_order_relaxed);
    return -1;
  }
  uint64_t pages = (offset + length + kPage - 1) / kPage - offset / kPage;
  return cs.nr_cache >= pages ? 1 : 0;
}

bool page_readable_now(int fd, uint64_t offset) {
  char byte;
  iovec iov{&byte, 1};
  ssize_t n;
  do {
    n = ::preadv2(fd, &iov, 1, static_cast<off_t>(offset), RWF_NOWAIT);
  } while (n < 0 && errno == EINTR);
  // 0: at or past the end (a file that shrank): the send finds out and ends cleanly.
  return n >= 0;
}

}  // namespace

bool range_resident(int fd, uint64_t offset, uint64_t length, ResidencyProbe* probe) {
  if (length == 0) return true;
  const uint64_t last = (offset + length - 1) / kPage * kPage;
  if (g_cachestat.load(std::memory_order_relaxed)) {
    int r = cachestat_resident(fd, offset, length);
    if (r >= 0) {
      if (probe) *probe = ResidencyProbe::cachestat;
      // cachestat also counts pages whose read is still in flight (readahead fills a range
      // front to back), and sendfile would wait for those: the last page must be readable.
      return r == 1 && page_readable_now(fd, last);
    }
  }
  if (probe) *probe = ResidencyProbe::nowait_read;
  return page_readable_now(fd, offset) && (last <= offset || page_readable_now(fd, last));
}

}  // namespace weft::http
