// Driver: what a processor blocks in when it has nothing to run, and how others wake it.
//
// Each processor owns one driver. The same three verbs stack across layers (as in Tokio):
// poll() does pending work without blocking, park(timeout) blocks until unpark(), an event
// of the driver's own (an I/O completion), or the timeout; unpark() may be called from any
// thread and is never lost (an unpark before park makes that park return at once).
// The I/O drivers (io_uring, epoll) extend this with operations; see io_driver.hpp.
#pragma once

#include <cstdint>
#include <memory>

namespace weft::rt {

class TimerHeap;

class Driver {
 public:
  virtual ~Driver() = default;

  /// Returns a short name for logs ("basic", "io_uring", "epoll").
  virtual const char* name() const = 0;

  /// Owner thread, once, before the first poll/park: hands the driver its processor's I/O
  /// timer heap (where it arms the deadlines of operations; only the owner fires it, since
  /// only the owner can cancel on its ring) and sets up thread-bound state (an io_uring with
  /// SINGLE_ISSUER belongs to the thread that sets it up).
  void attach(TimerHeap& timers) {
    timers_ = &timers;
    set_up();
  }

  /// Owner thread: flushes queued work and handles ready events without blocking; returns
  /// the number of events handled.
  virtual int poll() = 0;

  /// Returns whether poll() costs a system call even when nothing is ready (epoll), so an
  /// idle processor's spin rounds should not each call it; io_uring's reads a ring in memory.
  virtual bool poll_makes_a_system_call() const { return false; }

  /// Owner thread: blocks until unpark(), an event, or timeout_ns (< 0: no limit) passed.
  virtual void park(int64_t timeout_ns) = 0;

  /// Any thread: wakes the owner from park(), or makes its next park() return at once.
  virtual void unpark() = 0;

  /// Owner thread, when its processor stops: hands the kernel what is still queued (a
  /// detached close, io::close_detached) without waiting for anything.
  virtual void flush() {}

 protected:
  /// Owner thread, from attach(): the driver's own thread-bound set-up.
  virtual void set_up() {}

  /// The owner processor's timer heap (owner thread only), set by attach().
  TimerHeap& timers() { return *timers_; }

 private:
  TimerHeap* timers_ = nullptr;
};

/// Returns a driver with no I/O: park() waits on an eventfd with poll(2).
std::unique_ptr<Driver> make_basic_driver();

}  // namespace weft::rt
