// The processors' I/O drivers as the code that starts a runtime sees them: which backend
// (io_uring or epoll) and how it is tuned (IoOptions), the factory that probes and makes them,
// and their counters.
//
// A fiber asks the driver of the processor it runs on to execute each operation of io.hpp;
// only the owner processor touches its ring or its wait table, and other threads reach it
// through unpark() and cancellation. Backends: io_uring (io_uring_driver.cpp) and epoll
// (epoll_driver.cpp), both behind the IoDriver interface, which with the operations' wait
// state is private to the runtime (io_driver_internal.hpp). Sockets are non-blocking in
// both; io_uring arms its own poll, and the rare -EAGAIN it can return for such sockets is
// retried after a poll.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "runtime/driver.hpp"
#include "runtime/io_backend.hpp"

namespace weft::rt {

enum class WakeMethod { eventfd, msg_ring };

struct IoOptions {
  IoBackendKind backend = IoBackendKind::automatic;
  // How another processor wakes a parked io_uring processor: an eventfd the ring keeps a
  // read pending on, or IORING_OP_MSG_RING from the waker's own ring (threads outside the
  // runtime always use the eventfd). Both wake as fast; eventfd is the default because it
  // also serves threads without a ring and costs the waker no ring entry.
  WakeMethod wake = WakeMethod::eventfd;
  unsigned ring_entries = 1024;
  // IORING_REGISTER_IOWQ_MAX_WORKERS, per ring; for epoll, each processor's share of the
  // FileWorkers threads.
  unsigned iowq_bounded = 4;
  unsigned iowq_unbounded = 4;
};

/// Counters of one driver, for benchmarks ("io_uring_enter calls per operation").
struct IoStats {
  uint64_t enters = 0;       // io_uring_enter / epoll_wait calls
  uint64_t operations = 0;   // operations started (submissions, or syscalls tried)
  uint64_t completions = 0;  // completions handled
};

/// Makes processor i's driver.
using DriverFactory = std::function<std::unique_ptr<Driver>(unsigned index)>;

/// Returns whether an io_uring can be set up here (it is blocked by containers' default
/// seccomp profiles and by kernel.io_uring_disabled); opens and closes a ring to find out.
bool io_uring_usable();

/// Probes io_uring once (logging the outcome, and the reason and fix on a fallback) and
/// returns a factory for the chosen backend; throws std::runtime_error when io_uring is
/// required by `options` but unavailable.
DriverFactory make_io_driver_factory(const IoOptions& options);

}  // namespace weft::rt
