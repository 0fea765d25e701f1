// weft::rt::io: I/O calls that park the calling fiber instead of blocking its processor.
//
// Each returns the result (a count, an fd, 0) or -errno; none sets errno. Each takes an
// optional deadline (an absolute time; kNoDeadline for none): at the deadline the operation
// is cancelled and the call returns -ETIMEDOUT, after the operation's final completion (so
// buffers may live on the caller's stack). An optional CancelToken lets another fiber or
// thread cancel the call (-ECANCELED). SIGPIPE is never raised: sends use MSG_NOSIGNAL.
// Sockets made here are non-blocking and close-on-exec. Call only from fibers of a runtime
// made with an I/O driver (make_io_driver_factory).
#pragma once

#include <cstddef>
#include <cstdint>

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "runtime/cancel.hpp"
#include "runtime/clock.hpp"
#include "runtime/io_driver.hpp"

struct statx;

namespace weft::rt::io {

/// Creates a non-blocking, close-on-exec socket; returns the fd or -errno.
int socket(int domain, int type, int protocol);

/// Accepts a connection (non-blocking, close-on-exec, a byte stream); returns the new fd or
/// -errno. Close it with io::close or io::close_detached, never close(2): the epoll backend
/// keeps the connection registered until then (fd_generation.hpp), and would wait on a
/// registration the kernel dropped if the number came back. The epoll backend takes at most
/// one connection per poll of the processor's events, so under a flood the connections
/// already accepted are served between two accepts, as on io_uring.
int accept(int fd, sockaddr* addr, socklen_t* addrlen, TimePoint deadline = kNoDeadline,
           CancelToken* token = nullptr);

/// Connects fd to addr; returns 0 or -errno.
int connect(int fd, const sockaddr* addr, socklen_t addrlen, TimePoint deadline = kNoDeadline,
            CancelToken* token = nullptr);

/// Receives up to len bytes; returns the count (0 at end of stream) or -errno.
int64_t recv(int fd, void* buf, std::size_t len, int flags = 0, TimePoint deadline = kNoDeadline,
             CancelToken* token = nullptr);

/// Like recv, where the caller has just read all there was and answered it, so the next bytes
/// are not there yet: the epoll backend waits for readiness before the first try, which
/// saves the recv that would fail. io_uring tries first as recv does: there the failed try is
/// no system call of its own, and a poll first cost about 9% of the keep-alive requests per
/// CPU-second.
int64_t recv_when_ready(int fd, void* buf, std::size_t len, int flags = 0,
                        TimePoint deadline = kNoDeadline, CancelToken* token = nullptr);

/// Sends up to len bytes (MSG_MORE etc. in flags); returns the count sent or -errno.
int64_t send(int fd, const void* buf, std::size_t len, int flags = 0,
             TimePoint deadline = kNoDeadline, CancelToken* token = nullptr);

/// Sends the iov[0..iovcnt) buffers in order (sendmsg(2)); returns the count sent or -errno.
int64_t sendv(int fd, const iovec* iov, int iovcnt, int flags = 0, TimePoint deadline = kNoDeadline,
              CancelToken* token = nullptr);

/// Sends every byte of iov[0..iovcnt), continuing after partial sends (the array is
/// modified as it goes); returns the total or -errno. `sent`, when given, is set to the
/// bytes sent, also when it fails part way.
int64_t sendv_all(int fd, iovec* iov, int iovcnt, int flags = 0, TimePoint deadline = kNoDeadline,
                  CancelToken* token = nullptr, uint64_t* sent = nullptr);

/// Sends all len bytes, continuing after partial sends; returns len or -errno. `sent`, when
/// given, is set to the bytes sent, also when it fails part way.
int64_t send_all(int fd, const void* buf, std::size_t len, int flags = 0,
                 TimePoint deadline = kNoDeadline, CancelToken* token = nullptr,
                 uint64_t* sent = nullptr);

/// Reads up to len bytes at offset (-1: the file position); returns the count or -errno.
/// A read at an offset never blocks the processor on the disk: io_uring reads
/// asynchronously (the page cache's async reads, else its bounded kernel workers), and epoll
/// copies cached pages at once (preadv2 RWF_NOWAIT) and hands a read that would wait to its
/// FileWorkers threads, uninterruptibly (the deadline and token then apply after it).
int64_t read(int fd, void* buf, std::size_t len, int64_t offset = -1,
             TimePoint deadline = kNoDeadline, CancelToken* token = nullptr);

/// Like read() at an offset, for a range known not to be in the page cache: io_uring hands
/// it straight to a bounded kernel worker (IOSQE_ASYNC) and epoll to its FileWorkers, so the
/// page allocation, the readahead and any memory-cgroup reclaim for it happen there, not on
/// the processor. Returns the count or -errno.
int64_t read_cold(int fd, void* buf, std::size_t len, int64_t offset,
                  TimePoint deadline = kNoDeadline, CancelToken* token = nullptr);

/// Writes up to len bytes at offset (-1: the file position); returns the count or -errno.
int64_t write(int fd, const void* buf, std::size_t len, int64_t offset = -1,
              TimePoint deadline = kNoDeadline, CancelToken* token = nullptr);

/// Moves up to len bytes between fds, one of which is a pipe (splice(2)); offsets -1 mean
/// "none". The epoll backend splices without blocking (SPLICE_F_NONBLOCK) and waits for
/// readiness of the side that was not ready. Returns the count or -errno.
int64_t splice(int fd_in, int64_t off_in, int fd_out, int64_t off_out, std::size_t len,
               unsigned flags = 0, TimePoint deadline = kNoDeadline, CancelToken* token = nullptr);

/// Sends up to len bytes of file fd_in from offset to socket fd_out with sendfile(2),
/// waiting for room when the socket is full; returns the count or -errno.
int64_t sendfile(int fd_out, int fd_in, int64_t offset, std::size_t len,
                 TimePoint deadline = kNoDeadline, CancelToken* token = nullptr);

/// Sends what socket fd_out takes now of len bytes of file fd_in from offset (sendfile(2),
/// without waiting for room); returns the count, -EAGAIN when the socket is full, or -errno.
/// A system call on the calling thread: the pages it sends should be cached.
int64_t try_sendfile(int fd_out, int fd_in, int64_t offset, std::size_t len);

/// Reads what the page cache holds now of up to len bytes of fd at offset (preadv2 with
/// RWF_NOWAIT); returns the count (short when only the start is cached), -EAGAIN when the
/// first page is not cached, or -errno. A system call on the calling thread that never waits
/// for the disk: for many small reads of hot files, where a driver's round trip costs more.
int64_t try_read(int fd, void* buf, std::size_t len, int64_t offset);

/// Opens path relative to dirfd like openat2(2) (flags, mode, RESOLVE_* in resolve);
/// returns the fd or -errno.
int openat2(int dirfd, const char* path, uint64_t flags, uint64_t mode = 0, uint64_t resolve = 0);

/// Opens like openat2() but as a plain system call on the calling thread, for a caller that
/// must not wait for a driver (a RESOLVE_CACHED lookup, the epoll backend, a plain thread);
/// returns the fd or -errno.
int openat2_now(int dirfd, const char* path, uint64_t flags, uint64_t mode = 0,
                uint64_t resolve = 0);

/// Opens path relative to dirfd like openat(2); returns the fd or -errno.
inline int openat(int dirfd, const char* path, int flags, unsigned mode = 0) {
  return openat2(dirfd, path, static_cast<uint64_t>(flags), mode, 0);
}

/// Fills *out like statx(2); returns 0 or -errno.
int statx(int dirfd, const char* path, int flags, unsigned mask, struct ::statx* out);

/// Closes fd (and, for an accepted connection, drops what the epoll backend kept for it);
/// returns 0 or -errno.
int close(int fd);

/// Closes fd, which nothing uses any more, without waiting (dropping, for an accepted
/// connection, what the epoll backend kept for it): on io_uring the close goes to
/// the kernel with the processor's next batch of submissions (no system call of its own); a
/// failure is dropped, as close(2)'s would be by a caller that cannot act on it. Outside a
/// fiber of a runtime with an I/O driver it closes at once.
void close_detached(int fd);

/// Shuts down one or both directions of a socket; returns 0 or -errno.
int shutdown(int fd, int how);

/// Waits until fd is ready for `events` (POLLIN, POLLOUT...); returns the ready events or
/// -errno.
int poll(int fd, short events, TimePoint deadline = kNoDeadline, CancelToken* token = nullptr);

/// Arms `w` (caller storage, kept in place until the callback starts) so that fn(arg, result)
/// runs on a new fiber when fd is ready for `events` (result: the ready events), at
/// `deadline` (-ETIMEDOUT) or when `token` is cancelled (-ECANCELED). Nothing waits
/// meanwhile: the caller's fiber may end. Returns 0, or -errno when it could not arm (then fn
/// never runs).
int when_ready(ReadyWait& w, int fd, short events, TimePoint deadline, CancelToken* token,
               ReadyWait::Callback fn, void* arg);

/// Returns the I/O backend of the calling fiber's processor ("io_uring" or "epoll").
const char* backend();

}  // namespace weft::rt::io
