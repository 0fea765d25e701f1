// eio_shim: an LD_PRELOAD library that makes file reads fail, for weft's fault-injection tests
// (tests/e2e/server/test_faults.py).
//
// It wraps read, pread, readv, preadv, preadv2, sendfile and splice. A call whose *file* descriptor
// (the source of sendfile and splice) is a regular file whose path contains WEFT_FAULT_PATH fails
// with WEFT_FAULT_ERRNO, as a failing disk would; every other call goes through untouched. The
// descriptor is matched by its path at the time of the call (readlink of /proc/self/fd/N), so
// the shim needs to see no open: that matters because weft opens files with io_uring's
// OPENAT2 on its io_uring backend, which no preloaded library can see.
//
// What a preloaded library can reach differs by backend: on the epoll backend every open, read,
// sendfile and splice is a plain system call; on the io_uring backend reads, splices and opens
// go through the ring, and only sendfile (which has no io_uring opcode) is a plain call.
//
// One call passes untouched: a one-byte preadv2 with RWF_NOWAIT, which is how weft asks
// whether a page is in the page cache (server/files/page_cache.cpp), not a read of a body; on a
// real failing disk a cached page answers it without touching the disk.
//
// Environment (unset WEFT_FAULT_PATH: the shim does nothing):
//   WEFT_FAULT_PATH   substring of the file paths to fail
//   WEFT_FAULT_ERRNO  EIO (default), EINTR or EAGAIN (EAGAIN only on sendfile, the one call
//                     where a real kernel can say it for a file transfer: the socket is full)
//   WEFT_FAULT_AFTER  fail only at and past this file offset (default 0); a call that starts
//                     before it is shortened to end there, so a transfer fails midway
//   WEFT_FAULT_EVERY  fail one matching call in N (default 1: all)
//   WEFT_FAULT_LOG    a file that gets one line per injected fault (tests check it is not empty)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

typedef ssize_t (*read_fn)(int, void*, size_t);
typedef ssize_t (*pread_fn)(int, void*, size_t, off_t);
typedef ssize_t (*readv_fn)(int, const struct iovec*, int);
typedef ssize_t (*preadv_fn)(int, const struct iovec*, int, off_t);
typedef ssize_t (*preadv2_fn)(int, const struct iovec*, int, off_t, int);
typedef ssize_t (*sendfile_fn)(int, int, off_t*, size_t);
typedef ssize_t (*splice_fn)(int, loff_t*, int, loff_t*, size_t, unsigned);

static atomic_ulong g_calls;

static const char* fault_path(void) {
  const char* p = getenv("WEFT_FAULT_PATH");
  return p && *p ? p : NULL;
}

static int fault_errno(void) {
  const char* e = getenv("WEFT_FAULT_ERRNO");
  if (e && strcmp(e, "EINTR") == 0) return EINTR;
  if (e && strcmp(e, "EAGAIN") == 0) return EAGAIN;
  return EIO;
}

static long long env_ll(const char* name, long long fallback) {
  const char* v = getenv(name);
  return v && *v ? atoll(v) : fallback;
}

// Whether `fd` is a regular file whose path contains WEFT_FAULT_PATH.
static int matches(int fd) {
  const char* want = fault_path();
  if (!want) return 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return 0;
  path[n] = '\0';
  return strstr(path, want) != NULL;
}

static void note(const char* call, int fd, int err, long long offset) {
  const char* log = getenv("WEFT_FAULT_LOG");
  if (!log) return;
  int lfd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (lfd < 0) return;
  char line[160];
  int n = snprintf(line, sizeof line, "%s fd=%d offset=%lld errno=%s\n", call, fd, offset,
                   strerrorname_np(err));
  if (n > 0) {
    ssize_t w = write(lfd, line, (size_t)n);
    (void)w;
  }
  close(lfd);
}

// Decides a call on `fd` at file `offset` (-1: the descriptor's own) for `len` bytes:
// returns 0 to fail it with *err, or the (possibly shortened) length to let through.
static size_t decide(const char* call, int fd, long long offset, size_t len, int allow_eagain,
                     int* err) {
  *err = 0;
  if (!matches(fd)) return len;
  int e = fault_errno();
  if (e == EAGAIN && !allow_eagain) return len;
  if (offset < 0) offset = lseek(fd, 0, SEEK_CUR);
  const long long after = env_ll("WEFT_FAULT_AFTER", 0);
  if (offset < after) {
    unsigned long long room = (unsigned long long)(after - offset);
    return len < room ? len : (size_t)room;
  }
  const long long every = env_ll("WEFT_FAULT_EVERY", 1);
  if (every > 1 && atomic_fetch_add(&g_calls, 1) % (unsigned long long)every != 0) return len;
  *err = e;
  note(call, fd, e, offset);
  return 0;
}

// Returns the next definition of `name` (libc's, or a sanitizer's interceptor's), once.
static void* next(void** cache, const char* name) {
  if (!*cache) *cache = dlsym(RTLD_NEXT, name);
  return *cache;
}

ssize_t read(int fd, void* buf, size_t len) {
  static void* cache;
  read_fn real_read = (read_fn)next(&cache, "read");
  int err;
  size_t n = decide("read", fd, -1, len, 0, &err);
  if (err) {
    errno = err;
    return -1;
  }
  return real_read(fd, buf, n);
}

ssize_t pread(int fd, void* buf, size_t len, off_t offset) {
  static void* cache;
  pread_fn real_pread = (pread_fn)next(&cache, "pread");
  int err;
  size_t n = decide("pread", fd, offset, len, 0, &err);
  if (err) {
    errno = err;
    return -1;
  }
  return real_pread(fd, buf, n, offset);
}

ssize_t pread64(int fd, void* buf, size_t len, off_t offset) {
  return pread(fd, buf, len, offset);
}

ssize_t readv(int fd, const struct iovec* iov, int cnt) {
  static void* cache;
  readv_fn real_readv = (readv_fn)next(&cache, "readv");
  int err;
  decide("readv", fd, -1, 1, 0, &err);
  if (err) {
    errno = err;
    return -1;
  }
  return real_readv(fd, iov, cnt);
}

ssize_t preadv(int fd, const struct iovec* iov, int cnt, off_t offset) {
  static void* cache;
  preadv_fn real_preadv = (preadv_fn)next(&cache, "preadv");
  int err;
  decide("preadv", fd, offset, 1, 0, &err);
  if (err) {
    errno = err;
    return -1;
  }
  return real_preadv(fd, iov, cnt, offset);
}

ssize_t preadv2(int fd, const struct iovec* iov, int cnt, off_t offset, int flags) {
  static void* cache;
  preadv2_fn real_preadv2 = (preadv2_fn)next(&cache, "preadv2");
  size_t len = 0;
  for (int i = 0; i < cnt; ++i) len += iov[i].iov_len;
  if ((flags & RWF_NOWAIT) && len == 1) return real_preadv2(fd, iov, cnt, offset, flags);
  int err;
  size_t n = decide("preadv2", fd, offset, len, 0, &err);
  if (err) {
    errno = err;
    return -1;
  }
  if (n < len && cnt == 1) {  // WEFT_FAULT_AFTER: end the read there, as pread does
    struct iovec shorter = {iov[0].iov_base, n};
    return real_preadv2(fd, &shorter, 1, offset, flags);
  }
  return real_preadv2(fd, iov, cnt, offset, flags);
}

ssize_t preadv64v2(int fd, const struct iovec* iov, int cnt, off_t offset, int flags) {
  return preadv2(fd, iov, cnt, offset, flags);
}

ssize_t sendfile(int out_fd, int in_fd, off_t* offset, size_t count) {
  static void* cache;
  sendfile_fn real_sendfile = (sendfile_fn)next(&cache, "sendfile");
  int err;
  size_t n = decide("sendfile", in_fd, offset ? *offset : -1, count, 1, &err);
  if (err) {
    errno = err;
    return -1;
  }
  return real_sendfile(out_fd, in_fd, offset, n);
}

ssize_t sendfile64(int out_fd, int in_fd, off_t* offset, size_t count) {
  return sendfile(out_fd, in_fd, offset, count);
}

ssize_t splice(int fd_in, loff_t* off_in, int fd_out, loff_t* off_out, size_t len, unsigned flags) {
  static void* cache;
  splice_fn real_splice = (splice_fn)next(&cache, "splice");
  int err;
  size_t n = decide("splice", fd_in, off_in ? *off_in : -1, len, 0, &err);
  if (err) {
    errno = err;
    return -1;
  }
  return real_splice(fd_in, off_in, fd_out, off_out, n, flags);
}
