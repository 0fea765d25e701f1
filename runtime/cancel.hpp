// Cancellation and deadlines for the I/O calls of io.hpp: what code outside the runtime holds
// to bound or stop a fiber's operations.
//
// A deadline is an absolute TimePoint (kNoDeadline: none); past it an operation fails with
// -ETIMEDOUT. A CancelToken cancels, from any fiber or thread, every operation in flight under
// it and every later one (-ECANCELED). A ReadyWait is the caller's storage for a readiness
// wait with no fiber parked behind it (io::when_ready); what it holds belongs to the I/O
// driver and is opaque here (io_driver_internal.hpp defines it).
#pragma once

#include <cstddef>

#include "runtime/clock.hpp"
#include "runtime/spinlock.hpp"

namespace weft::rt {

class IoWait;
struct ReadyState;

/// The absence of a deadline.
inline constexpr TimePoint kNoDeadline = TimePoint::max();

/// Lets any fiber or thread cancel the operations fibers have in flight under this token
/// (any number, on any processors), and every later one (they fail with -ECANCELED at once).
class CancelToken {
 public:
  CancelToken() = default;
  CancelToken(const CancelToken&) = delete;
  CancelToken& operator=(const CancelToken&) = delete;

  /// Cancels the operations in flight (their results become -ECANCELED) and all later ones.
  void cancel();

  /// Returns whether cancel() was called.
  bool cancelled() const;

 private:
  friend class IoWait;
  mutable Spinlock lock_;
  bool cancelled_ = false;
  IoWait* inflight_ = nullptr;  // intrusive list through IoWait::token_next/prev
};

/// A one-shot readiness wait with no fiber parked behind it (io::when_ready): when the fd
/// is ready, the deadline passes or the token is cancelled, the callback runs on a new fiber.
/// A connection idle between requests waits this way, so it holds no stack meanwhile.
/// Caller-owned: it must stay in place from arming until the callback has started.
class ReadyWait {
 public:
  /// Runs on a fresh fiber with the ready events, or -ETIMEDOUT, -ECANCELED, -errno.
  using Callback = void (*)(void* arg, int result);

  /// Makes a wait that is not armed.
  ReadyWait();
  ReadyWait(const ReadyWait&) = delete;
  ReadyWait& operator=(const ReadyWait&) = delete;

 private:
  friend struct ReadyState;
  // Room for the driver's ReadyState (its size on x86-64); io_driver.cpp checks that it fits.
  static constexpr std::size_t kStateSize = 232;
  alignas(8) std::byte state_[kStateSize];
};

}  // namespace weft::rt
