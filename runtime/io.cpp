// The io:: calls: fill in an IoRequest and hand it to the calling processor's I/O driver.
#include "runtime/io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "runtime/fd_generation.hpp"
#include "runtime/io_driver_internal.hpp"
#include "runtime/scheduler.hpp"

namespace weft::rt::io {
namespace {

IoDriver& driver() {
  Processor* p = Processor::current();
  IoDriver* d = p ? p->io_driver() : nullptr;
  if (!d) {
    std::fputs("weft: rt::io call outside a fiber of a runtime with an I/O driver\n", stderr);
    std::abort();
  }
  return *d;
}

int64_t run(IoRequest& r) {
  return driver().execute(r);
}

}  // namespace

int socket(int domain, int type, int protocol) {
  int fd = ::socket(domain, type | SOCK_NONBLOCK | SOCK_CLOEXEC, protocol);
  if (fd < 0) return -errno;
  // A new file under this number: if it named a connection that was closed without
  // io::close, the epoll backend must not take this socket for it.
  fd_generation::end_connection(fd);
  return fd;
}

int accept(int fd, sockaddr* addr, socklen_t* addrlen, TimePoint deadline, CancelToken* token) {
  IoRequest r{.op = IoOpcode::accept,
              .fd = fd,
              .args = {.accept = {addr, addrlen, SOCK_NONBLOCK | SOCK_CLOEXEC}},
              .deadline = deadline,
              .token = token};
  return static_cast<int>(run(r));
}

int connect(int fd, const sockaddr* addr, socklen_t addrlen, TimePoint deadline,
            CancelToken* token) {
  IoRequest r{.op = IoOpcode::connect,
              .fd = fd,
              .args = {.connect = {addr, addrlen}},
              .deadline = deadline,
              .token = token};
  return static_cast<int>(run(r));
}

namespace {

int64_t recv_request(int fd, void* buf, std::size_t len, int flags, TimePoint deadline,
                     CancelToken* token, bool poll_first) {
  IoRequest r{.op = IoOpcode::recv,
              .fd = fd,
              .args = {.socket = {buf, len, flags}},
              .deadline = deadline,
              .token = token,
              .poll_first = poll_first};
  return run(r);
}

}  // namespace

int64_t recv(int fd, void* buf, std::size_t len, int flags, TimePoint deadline,
             CancelToken* token) {
  return recv_request(fd, buf, len, flags, deadline, token, false);
}

int64_t recv_when_ready(int fd, void* buf, std::size_t len, int flags, TimePoint deadline,
                        CancelToken* token) {
  return recv_request(fd, buf, len, flags, deadline, token, true);
}

int64_t send(int fd, const void* buf, std::size_t len, int flags, TimePoint deadline,
             CancelToken* token) {
  IoRequest r{.op = IoOpcode::send,
              .fd = fd,
              .args = {.socket = {const_cast<void*>(buf), len, flags | MSG_NOSIGNAL}},
              .deadline = deadline,
              .token = token};
  return run(r);
}

int64_t sendv(int fd, const iovec* iov, int iovcnt, int flags, TimePoint deadline,
              CancelToken* token) {
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<std::size_t>(iovcnt);
  IoRequest r{.op = IoOpcode::sendmsg,
              .fd = fd,
              .args = {.message = {&msg, flags | MSG_NOSIGNAL}},
              .deadline = deadline,
              .token = token};
  return run(r);
}

int64_t sendv_all(int fd, iovec* iov, int iovcnt, int flags, TimePoint deadline, CancelToken* token,
                  uint64_t* sent) {
  int64_t total = 0;
  if (sent) *sent = 0;
  while (iovcnt > 0) {
    if (iov->iov_len == 0) {
      ++iov;
      --iovcnt;
      continue;
    }
    int64_t n = sendv(fd, iov, iovcnt, flags, deadline, token);
    if (n < 0) return n;
    if (n == 0) return -EPIPE;
    total += n;
    if (sent) *sent = static_cast<uint64_t>(total);
    auto left = static_cast<std::size_t>(n);
    while (iovcnt > 0 && left >= iov->iov_len) {
      left -= iov->iov_len;
      ++iov;
      --iovcnt;
    }
    if (iovcnt > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + left;
      iov->iov_len -= left;
    }
  }
  return total;
}

int64_t send_all(int fd, const void* buf, std::size_t len, int flags, TimePoint deadline,
                 CancelToken* token, uint64_t* sent) {
  const char* p = static_cast<const char*>(buf);
  std::size_t done = 0;
  if (sent) *sent = 0;
  while (done < len) {
    int64_t n = send(fd, p + done, len - done, flags, deadline, token);
    if (n < 0) return n;
    if (n == 0) return -EPIPE;
    done += static_cast<std::size_t>(n);
    if (sent) *sent = done;
  }
  return static_cast<int64_t>(len);
}

int64_t read(int fd, void* buf, std::size_t len, int64_t offset, TimePoint deadline,
             CancelToken* token) {
  IoRequest r{.op = IoOpcode::read,
              .fd = fd,
              .args = {.file = {buf, len, offset}},
              .deadline = deadline,
              .token = token};
  return run(r);
}

int64_t read_cold(int fd, void* buf, std::size_t len, int64_t offset, TimePoint deadline,
                  CancelToken* token) {
  IoRequest r{.op = IoOpcode::read,
              .fd = fd,
              .args = {.file = {buf, len, offset}},
              .deadline = deadline,
              .token = token,
              .offload = true};
  return run(r);
}

int64_t write(int fd, const void* buf, std::size_t len, int64_t offset, TimePoint deadline,
              CancelToken* token) {
  IoRequest r{.op = IoOpcode::write,
              .fd = fd,
              .args = {.file = {const_cast<void*>(buf), len, offset}},
              .deadline = deadline,
              .token = token};
  return run(r);
}

int64_t splice(int fd_in, int64_t off_in, int fd_out, int64_t off_out, std::size_t len,
               unsigned flags, TimePoint deadline, CancelToken* token) {
  IoRequest r{.op = IoOpcode::splice,
              .fd = fd_in,
              .args = {.splice = {fd_out, off_in, off_out, len, flags}},
              .deadline = deadline,
              .token = token};
  return run(r);
}

int64_t sendfile(int fd_out, int fd_in, int64_t offset, std::size_t len, TimePoint deadline,
                 CancelToken* token) {
  IoRequest r{.op = IoOpcode::sendfile,
              .fd = fd_in,
              .args = {.sendfile = {fd_out, offset, len}},
              .deadline = deadline,
              .token = token};
  return run(r);
}

int64_t try_sendfile(int fd_out, int fd_in, int64_t offset, std::size_t len) {
  // The drivers' own sendfile is this same call on the non-blocking socket, then a wait for
  // room; the caller of this one decides what to do before trying again.
  off_t off = offset;
  ssize_t n;
  do {
    n = ::sendfile(fd_out, fd_in, offset >= 0 ? &off : nullptr, len);
  } while (n < 0 && errno == EINTR);
  return n >= 0 ? n : -errno;
}

int64_t try_read(int fd, void* buf, std::size_t len, int64_t offset) {
  iovec iov{buf, len};
  ssize_t n;
  do {
    n = ::preadv2(fd, &iov, 1, offset, RWF_NOWAIT);
  } while (n < 0 && errno == EINTR);
  return n >= 0 ? n : -errno;
}

int openat2(int dirfd, const char* path, uint64_t flags, uint64_t mode, uint64_t resolve) {
  IoRequest r{
      .op = IoOpcode::openat2,
      .fd = dirfd,
      .args = {.open = {path, {.flags = flags | O_CLOEXEC, .mode = mode, .resolve = resolve}}}};
  return static_cast<int>(run(r));
}

int openat2_now(int dirfd, const char* path, uint64_t flags, uint64_t mode, uint64_t resolve) {
  // glibc 2.36 has no openat2() wrapper: the system call itself.
  open_how how{.flags = flags | O_CLOEXEC, .mode = mode, .resolve = resolve};
  long fd = ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
  return fd < 0 ? -errno : static_cast<int>(fd);
}

int statx(int dirfd, const char* path, int flags, unsigned mask, struct ::statx* out) {
  IoRequest r{.op = IoOpcode::statx, .fd = dirfd, .args = {.stat = {path, flags, mask, out}}};
  return static_cast<int>(run(r));
}

int close(int fd) {
  fd_generation::end_connection(fd);  // before the number can be handed out again
  IoRequest r{.op = IoOpcode::close, .fd = fd};
  return static_cast<int>(run(r));
}

void close_detached(int fd) {
  fd_generation::end_connection(fd);  // before the number can be handed out again
  Processor* p = Processor::current();
  IoDriver* d = p ? p->io_driver() : nullptr;
  if (d) {
    d->close_detached(fd);
  } else {
    ::close(fd);
  }
}

int shutdown(int fd, int how) {
  // A plain system call on every backend: shutdown never blocks on a socket, and io_uring
  // punts every IORING_OP_SHUTDOWN to an io-wq worker thread (the kernel marks it
  // force-async), a thread wake-up and two context switches that took a fifth of the
  // server's core under one-request connections (docs/benchmarks.md, "Connection cost").
  return ::shutdown(fd, how) == 0 ? 0 : -errno;
}

int poll(int fd, short events, TimePoint deadline, CancelToken* token) {
  IoRequest r{.op = IoOpcode::poll,
              .fd = fd,
              .args = {.poll = {events}},
              .deadline = deadline,
              .token = token};
  return static_cast<int>(run(r));
}

int when_ready(ReadyWait& w, int fd, short events, TimePoint deadline, CancelToken* token,
               ReadyWait::Callback fn, void* arg) {
  return driver().arm_ready(w, fd, events, deadline, token, fn, arg);
}

const char* backend() {
  return driver().name();
}

}  // namespace weft::rt::io
