#include "server/fd_cache.hpp"

#include <cerrno>

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/io.hpp"
#include "server/http_date.hpp"

namespace weft::http {

namespace rt = weft::rt;

FileEntry::~FileEntry() {
  if (fd >= 0) ::close(fd);
}

FdCache::FdCache(const Config& config, int root_fd, const MimeMap& mime, Metrics* metrics)
    : config_(config), root_fd_(root_fd), mime_(mime), metrics_(metrics) {
  switch (config.symlinks) {
    case SymlinkPolicy::follow:
      resolve_ = RESOLVE_NO_MAGICLINKS;
      break;
    case SymlinkPolicy::inside_root:
      // The kernel refuses any step (a "..", an absolute or relative symlink) that would
      // leave the root: confinement does not depend on our path normalization alone.
      resolve_ = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
      break;
    case SymlinkPolicy::deny:
      resolve_ = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
      break;
  }
}

FdCache::~FdCache() = default;

FileRef FdCache::lookup(std::string_view path, unsigned) {
  return load(path);
}

FileRef FdCache::load(std::string_view path) {
  auto* e = new FileEntry();
  FileRef ref(e);
  e->path.assign(path);
  std::string rel = path.size() > 1 ? std::string(path.substr(1)) : std::string(".");
  if (!rel.empty() && rel.back() == '/') rel.pop_back();
  if (rel.empty()) rel = ".";
  int fd = rt::io::openat2(root_fd_, rel.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY, 0, resolve_);
  if (fd < 0) {
    e->error = -fd;
    return ref;
  }
  struct ::statx st {};
  int rc =
      rt::io::statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_SIZE | STATX_MTIME | STATX_INO, &st);
  if (rc < 0) {
    ::close(fd);
    e->error = -rc;
    return ref;
  }
  e->ino = st.stx_ino;
  e->dev = (uint64_t{st.stx_dev_major} << 32) | st.stx_dev_minor;
  e->mtime = st.stx_mtime.tv_sec;
  e->mtime_ns = st.stx_mtime.tv_nsec;
  if (S_ISDIR(st.stx_mode)) {
    ::close(fd);
    e->directory = true;
    return ref;
  }
  if (!S_ISREG(st.stx_mode)) {
    ::close(fd);
    e->error = EACCES;  // devices, FIFOs, sockets are never served
    return ref;
  }
  e->fd = fd;
  e->size = st.stx_size;
  if (e->size <= config_.fd_cache_file_bytes && config_.fd_cache_file_bytes > 0) {
    // Small file: keep its bytes so the response goes out in one send with the head.
    e->bytes = std::make_unique<char[]>(e->size ? e->size : 1);
    uint64_t got = 0;
    while (got < e->size) {
      int64_t n = rt::io::read(fd, e->bytes.get() + got, e->size - got, static_cast<int64_t>(got));
      if (n < 0) {
        e->bytes.reset();
        break;
      }
      if (n == 0) {
        e->size = got;  // truncated while we read: serve what there is, consistently
        break;
      }
      got += static_cast<uint64_t>(n);
    }
  }
  e->etag = make_etag(e->mtime, e->size);
  e->content_type = mime_.lookup(path);
  HttpDateBuffer lm;
  e->headers.reserve(160);
  e->headers.append("Content-Type: ").append(e->content_type).append("\r\n");
  e->headers.append("Last-Modified: ").append(format_http_date(e->mtime, lm)).append("\r\n");
  e->headers.append("ETag: ").append(e->etag.view()).append("\r\n");
  e->headers.append("Accept-Ranges: bytes\r\n");
  return ref;
}

}  // namespace weft::http
