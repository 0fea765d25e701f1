// AdmissionGate: keeps a listening socket's kernel queue short under overload, at no cost to
// the server per refused client.
//
// Why: past saturation the kernel's listen queue grows at arrivals minus service, and a
// connection that waited there longer than its client's patience costs the server a reply
// nobody reads or, refused after the fact, a reset whose delivery runs in the server's
// context. The only free refusal is one the kernel makes before a connection exists: a SYN
// dropped on arrival, in the softirq of the client's own send. So the gate is a classic BPF
// socket filter on the listening socket that drops SYNs without ACK (new handshakes) and
// passes everything else (handshakes already under way complete, queued connections stay).
// A client whose SYN was dropped retransmits it after the kernel's initial RTO (1 s on
// Linux) and is let in then if the gate has opened: a refusal here is a delay first, and a
// timeout only if the overload lasts. (A small listen backlog would drop SYNs too, but also
// the final ACKs of handshakes it let in, leaving them half-open.)
//
// When to close: a connection let into the queue now will wait about queue length / service
// rate before weft takes it. The gate closes when that predicted wait passes
// limits.queue_target and opens again when it is under half of it (hysteresis; and at
// once when the acceptor finds nothing to accept), so no admitted connection waits much past
// the target, and none has to be reset later as stale (each reset costs what a dropped SYN
// does not). The service rate is the socket's accept rate, measured over kWindow and
// smoothed: past saturation that is what the server serves; below it, arrivals, which makes
// the prediction the queue's own wait. Under a CPU cap the queue is bursty (throttling stops
// the server for most of each period), so the target must sit above the waits seen below
// saturation.
//
// Two guards keep a burst on a lightly loaded server from closing the gate. Below
// saturation the accept rate is only the arrival rate, and after an idle spell it is tiny:
// a browser's six connections, queued for a millisecond, then predicted seconds of wait, and
// the gate dropped the SYNs of the next clients to come (a 1 s delay each). So:
// - a window longer than kStaleWindow says nothing about the service rate (the accepts were
//   sparse, or the server did not run) and resets the estimate to unknown;
// - the gate closes only once the queue has stayed non-empty for kWindow (every sample
//   since saw connections waiting). A burst drains in milliseconds; overload does not.
//
// States: open (no filter) -> closed (filter attached) -> open. The acceptors of a socket
// (one, or one per processor when server.reuseport = false) share its gate (its Listener's
// ListenerAdmission); its mutex is held for a decision and the state change, never across a
// park (the setsockopt under it is short).
#pragma once

#include <cstdint>
#include <mutex>

#include "runtime/timer.hpp"

namespace weft::http {

class AdmissionGate {
 public:
  /// The window over which accepts are counted for the service rate; picked: ten periods of
  /// a 10 ms CPU quota, short against a client's patience.
  static constexpr rt::Duration kWindow = std::chrono::milliseconds(100);

  /// A window at least this long resets the service rate to unknown: under overload accepts
  /// come every few milliseconds, so such a window was idle or stopped, not saturated.
  static constexpr rt::Duration kStaleWindow = 2 * kWindow;

  /// How often steer_sampled() reads the queue's length: picked so that the gate costs no
  /// system call per connection (a getsockopt was two thirds of the io_uring backend's system
  /// calls per connection under overload) yet reacts within a CPU quota's period.
  static constexpr rt::Duration kSample = std::chrono::milliseconds(1);

  /// The gate of listening socket `fd` (which outlives it), open.
  explicit AdmissionGate(int fd) : fd_(fd) {}
  AdmissionGate(const AdmissionGate&) = delete;
  AdmissionGate& operator=(const AdmissionGate&) = delete;

  /// Steers the gate after an accept at `now`, with `queued` connections still waiting:
  /// closes it when queued / service rate > `target` and the queue has not been empty for
  /// kWindow, opens it under half of that. Returns +1 when this call closed it, -1 when it
  /// opened it, else 0. A filter that cannot be attached is logged once, and the gate stays
  /// open.
  int steer(unsigned queued, rt::Duration target, rt::TimePoint now);

  /// Steers the gate like steer() after an accept at `now`, reading the accept queue's
  /// length (accept_queue_length) at most once per kSample; between reads it counts the
  /// accept and decides nothing (returns 0).
  int steer_sampled(rt::Duration target, rt::TimePoint now);

  /// Opens the gate if it is closed (nothing left to accept); true when it did.
  bool open();

  /// Returns whether the gate is closed.
  bool is_closed();

 private:
  void count_locked(rt::TimePoint now);
  int decide_locked(unsigned queued, rt::Duration target, rt::TimePoint now);
  bool close_locked();
  bool open_locked();

  const int fd_;
  std::mutex mutex_;  // held for a decision, never across a park
  bool closed_ = false;
  rt::TimePoint sampled_{};        // when steer_sampled() last read the queue's length
  rt::TimePoint backlog_since_{};  // first of the decisions since that all saw a queue; {}: none
  bool broken_ = false;            // the filter could not be attached: never close again
  rt::TimePoint window_start_{};   // of the current accept count
  unsigned accepts_ = 0;           // in the current window
  double rate_ = 0;                // smoothed accepts per second; 0: not measured yet
};

/// Returns the number of connections waiting in listening socket `fd`'s accept queue (its
/// TCP_INFO), or 0 when it cannot be read.
unsigned accept_queue_length(int fd);

}  // namespace weft::http
