// The I/O driver's internals, private to the runtime: the operation a fiber asks for
// (IoRequest), the wait state of one in flight (IoWait, ReadyState), and the IoDriver
// interface the io_uring and epoll backends implement. io.cpp fills requests in, the backends
// execute them; code outside the runtime uses io.hpp, cancel.hpp and io_driver.hpp instead.
//
// A fiber asks the driver of the processor it runs on to execute an IoRequest; the driver
// parks the fiber until the operation's final completion, so the request and the wait state
// live on the fiber's stack. Only the owner processor touches its ring or its wait table;
// other threads reach it through unpark() and request_cancel(), which queue work for the
// owner.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include <linux/openat2.h>
#include <sys/socket.h>

#include "runtime/cancel.hpp"
#include "runtime/clock.hpp"
#include "runtime/driver.hpp"
#include "runtime/io_driver.hpp"
#include "runtime/owned_counter.hpp"
#include "runtime/spinlock.hpp"
#include "runtime/timer.hpp"
#include "runtime/waiter.hpp"

struct statx;

namespace weft::rt {

class FileWorkers;
class IoDriver;

enum class IoOpcode : uint8_t {
  accept,
  connect,
  recv,
  send,
  sendmsg,
  read,
  write,
  splice,
  sendfile,
  openat2,
  statx,
  close,
  poll
};

// The operands of each operation, one struct per opcode (as liburing has one prep function
// per operation), so that no field means one thing for one operation and another for the next.
struct AcceptArgs {
  sockaddr* addr;      // the peer's address, or null
  socklen_t* addrlen;  // in: its room; out: its length
  int flags;           // accept4(2) flags
};
struct ConnectArgs {
  const sockaddr* addr;
  socklen_t addrlen;
};
struct SocketIoArgs {  // recv, send
  void* buf;
  std::size_t len;
  int msg_flags;  // MSG_*
};
struct MessageArgs {  // sendmsg
  const msghdr* msg;
  int msg_flags;
};
struct FileIoArgs {  // read, write
  void* buf;
  std::size_t len;
  int64_t offset;  // -1: the file position
};
struct SpliceArgs {  // from IoRequest::fd to fd_out, one of them a pipe
  int fd_out;
  int64_t off_in;   // -1: none (a pipe)
  int64_t off_out;  // -1: none
  std::size_t len;
  unsigned flags;  // SPLICE_F_*
};
struct SendfileArgs {  // from the file IoRequest::fd to the socket fd_out
  int fd_out;
  int64_t offset;  // -1: the file position
  std::size_t len;
};
struct OpenArgs {  // openat2 under the directory IoRequest::fd
  const char* path;
  open_how how;
};
struct StatxArgs {  // statx under the directory IoRequest::fd
  const char* path;
  int flags;  // AT_*
  unsigned mask;
  struct ::statx* out;
};
struct PollArgs {
  short events;  // POLL*
};

/// One operation, as the io:: functions fill it in: the opcode, the descriptor it works on,
/// and that opcode's operands in `args` (close has none).
struct IoRequest {
  IoOpcode op;
  int fd = -1;
  union Args {
    AcceptArgs accept;
    ConnectArgs connect;
    SocketIoArgs socket;  // recv, send
    MessageArgs message;  // sendmsg
    FileIoArgs file;      // read, write
    SpliceArgs splice;
    SendfileArgs sendfile;
    OpenArgs open;
    StatxArgs stat;
    PollArgs poll;
  } args{};
  TimePoint deadline = kNoDeadline;
  CancelToken* token = nullptr;
  bool poll_first = false;  // epoll: wait for readiness before the first try (recv_when_ready)
  bool offload = false;     // a file read for pages not cached: straight to worker threads
};

/// Returns the descriptor whose readiness `r` waits for when it cannot go on at once: the
/// destination socket of a splice or sendfile, else the request's own descriptor.
inline int readiness_fd(const IoRequest& r) {
  if (r.op == IoOpcode::splice) return r.args.splice.fd_out;
  if (r.op == IoOpcode::sendfile) return r.args.sendfile.fd_out;
  return r.fd;
}

/// Returns whether `r` takes bytes in from outside the process (a socket or a stream, or a
/// connection): the operations whose results a fiber's I/O stamp orders (io_epoch.hpp). File
/// operations and sends are not: they tell nothing new about what a client asked.
inline bool receives(const IoRequest& r) {
  return r.op == IoOpcode::recv || r.op == IoOpcode::accept ||
         (r.op == IoOpcode::read && r.args.file.offset < 0);
}

/// The wait state of one operation in flight, on the waiting fiber's stack (or in a
/// ReadyState, for a wait with no fiber behind it).
class IoWait {
 public:
  IoWait() = default;
  /// Makes a wait of the calling fiber.
  IoWait(IoDriver* driver, CancelToken* token) : driver_(driver), token_(token) {
    waiter.bind_current();
  }

  /// Makes the wait new again for `driver` and `token`; only while nothing refers to it.
  void reset(IoDriver* driver, CancelToken* token) {
    waiter.reset();
    result = 0;
    stamp = 0;
    completed = cancel_queued = false;
    next_cancel = token_next = token_prev = nullptr;
    driver_ = driver;
    token_ = token;
  }

  /// Registers with the token; returns false when the token is already cancelled.
  bool begin();
  /// Unregisters from the token; after this no canceller can reach this wait.
  void end();

  /// Returns whether a token (hence a canceller from another thread) is involved.
  bool has_token() const { return token_ != nullptr; }

  /// Returns the token, or nullptr.
  CancelToken* token() const { return token_; }

  Waiter waiter{nullptr};
  int64_t result = 0;
  uint64_t stamp = 0;                      // io_epoch() once the result was there (io_epoch.hpp)
  void (*on_complete)(IoWait*) = nullptr;  // set: called (owner thread) instead of a wake
  // Owner-side bookkeeping (guarded by the driver's remote lock where noted).
  bool completed = false;      // remote lock
  bool cancel_queued = false;  // remote lock
  IoWait* next_cancel = nullptr;
  ReadyState* ready = nullptr;   // the readiness wait this is part of, if any
  IoWait* token_next = nullptr;  // the token's list, guarded by the token's lock
  IoWait* token_prev = nullptr;

 private:
  friend class CancelToken;
  IoDriver* driver_ = nullptr;
  CancelToken* token_ = nullptr;
};

/// What a ReadyWait holds for the driver, in the ReadyWait's own storage: the wait, its
/// deadline's timer, and (epoll) its wait-table slot and the receive it makes on the event.
struct ReadyState {
  /// Returns the state held in `w`.
  static ReadyState& of(ReadyWait& w) {
    return *std::launder(reinterpret_cast<ReadyState*>(w.state_));
  }

  IoWait io;
  TimerEntry timer;
  bool has_timer = false;
  bool fired = false;  // the deadline passed
  bool done = false;   // completed once (a late event or cancel finds it done)
  int fd = -1;
  bool dup_fd = false;  // epoll: fd is this wait's own duplicate, closed when it completes
  bool edge = false;    // epoll: parked on fd's edge-triggered registration, not in a slot
  uint32_t slot = 0;    // epoll: wait-table slot
  // epoll: the receive this wait is for, which the driver makes as it reaps the event (so
  // its stamp precedes any fiber of the batch: io_epoch.hpp); -EAGAIN when it was not made.
  const IoRequest* recv = nullptr;
  int64_t received = -EAGAIN;
  ReadyWait::Callback fn = nullptr;
  void* arg = nullptr;
  IoDriver* driver = nullptr;
};

/// A processor's driver that also performs I/O for its fibers (io_uring or epoll).
class IoDriver : public Driver {
 public:
  /// Returns this driver's counters (relaxed snapshots; any thread).
  IoStats stats() const {
    return {enters_.load(std::memory_order_relaxed), ops_.load(std::memory_order_relaxed),
            completions_.load(std::memory_order_relaxed)};
  }

  /// Owner fiber: performs `req`, parking the calling fiber until its final completion;
  /// returns the result or -errno (-ETIMEDOUT past the deadline, -ECANCELED by the token).
  virtual int64_t execute(IoRequest& req) = 0;

  /// Owner fiber: arms `r` to call fn(arg, result) on a new fiber when fd is ready for
  /// `events`, at `deadline` (-ETIMEDOUT) or on cancellation (-ECANCELED); returns 0, or
  /// -errno when it could not be armed (fn then never runs).
  virtual int arm_ready(ReadyWait& r, int fd, short events, TimePoint deadline, CancelToken* token,
                        ReadyWait::Callback fn, void* arg) = 0;

  /// Owner thread: closes `fd`, which nothing uses any more, without waiting for the close
  /// (the io_uring backend submits it with the next batch and posts no completion unless it
  /// fails); this default closes at once.
  virtual void close_detached(int fd);

  /// Any thread: asks the owner to cancel `w` if it is still in flight.
  void request_cancel(IoWait* w);

  /// Owner thread: like request_cancel, without waking (the owner polls soon anyway).
  void queue_cancel(IoWait* w);

 protected:
  // Owner: marks w completed and unqueues a pending cancel; call before waking its fiber.
  void mark_completed(IoWait* w);
  // Owner: takes the queued cancel requests (each still in flight).
  IoWait* take_cancels();
  // Owner: ends a readiness wait (completed with io.result): unregisters it and starts its
  // callback on a new fiber. Nothing touches `r` afterwards.
  static void finish_ready(ReadyState& r);
  // Owner-only counters that others read (stats()), added to with bump_owned().
  std::atomic<uint64_t> enters_{0}, ops_{0}, completions_{0};

  Spinlock remote_lock_;
  IoWait* cancels_ = nullptr;
};

/// Makes an io_uring driver (the ring itself is set up on the owner thread, in attach()).
std::unique_ptr<IoDriver> make_io_uring_driver(const IoOptions& options);

/// Test seam: called (when set) with the result of each io_uring_enter that submits, which
/// it replaces. A test returns -EBUSY to play a kernel that refuses submissions while its
/// completion queue has a backlog it cannot flush (io_uring_enter(2); this one never does).
inline int (*io_uring_submit_result)(int rc) = nullptr;

/// Makes an epoll driver whose file reads that would block go to `workers` (shared by the
/// drivers of one runtime; null: a pool of its own), raising its capacity by
/// options.iowq_bounded threads.
std::unique_ptr<IoDriver> make_epoll_driver(const IoOptions& options,
                                            std::shared_ptr<FileWorkers> workers = nullptr);

}  // namespace weft::rt
