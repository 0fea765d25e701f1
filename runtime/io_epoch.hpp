// I/O epochs: what a fiber has read through the I/O driver, ordered against later looks at
// shared state.
//
// A cache that must never serve anything older than the request asking for it (the fd cache
// with inotify, server/files/fd_cache.hpp) has to know whether it read its change queue after the
// request's bytes arrived. A system call per request would tell, but costs about a tenth of
// a small keep-alive response here. Instead: one process-wide counter, the epoch, which a
// looker advances (advance_io_epoch()) just before it looks; and a stamp per fiber, which the
// I/O drivers set after every operation that takes bytes in (a receive, an accept, a stream
// read: receives() in io_driver_internal.hpp) to the epoch as read once its result was there
// (io_uring: as its completion is reaped; epoll: after the system call that produced it, and
// a receive that waited for readiness is made by the driver as it reaps the event).
// A look whose ticket is greater than a fiber's stamp therefore began after everything that
// fiber has read had arrived, so it saw whatever the kernel queued before those bytes: a
// change event queued by a rename that returned before the client sent its request. The
// fibers of one reaped batch carry about the same stamp, so one look serves them all.
//
// States: a fiber's stamp is kNoIoStamp until its first receive completes (a look is then
// always needed), and only grows afterwards (the epoch never goes back).
//
// Threads: any. The epoch is sequentially consistent: a stamp read after a completion was
// observed (the completion queue's tail loaded with acquire, or a system call returned) and a
// ticket taken before a look's system call are ordered in one total order, on x86-64's TSO.
#pragma once

#include <atomic>
#include <cstdint>

namespace weft::rt {

/// The stamp of a fiber that has received nothing yet: older than any look.
inline constexpr uint64_t kNoIoStamp = UINT64_MAX;

namespace detail {
inline std::atomic<uint64_t> g_io_epoch{0};
}  // namespace detail

/// Returns the epoch now (any thread).
inline uint64_t io_epoch() {
  return detail::g_io_epoch.load();
}

/// Advances the epoch and returns its new value: the ticket of a look about to begin.
inline uint64_t advance_io_epoch() {
  return detail::g_io_epoch.fetch_add(1) + 1;
}

/// Returns the calling fiber's stamp: the epoch read after its latest receive's result was
/// there; kNoIoStamp outside a fiber or before the fiber's first receive.
uint64_t io_stamp();

/// Drivers: sets the calling fiber's stamp (no-op outside a fiber).
void set_io_stamp(uint64_t stamp);

}  // namespace weft::rt
