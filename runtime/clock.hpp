// The runtime's clocks: CLOCK_MONOTONIC through std::chrono::steady_clock, in nanoseconds,
// for deadlines; and a cycle counter, for stamping ready fibers on every schedule (the
// scheduler's fairness check compares their ages), where a vDSO clock_gettime would cost
// several times more.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace weft::rt {

using Clock = std::chrono::steady_clock;
using Duration = Clock::duration;
using TimePoint = Clock::time_point;

/// Returns the current monotonic time.
inline TimePoint now() {
  return Clock::now();
}

/// Returns the time as of the calling processor's current scheduling round (at most a few
/// dozen fiber switches old), or now() outside a processor. Cheap: for deadlines and
/// timestamps that tolerate being early by that much, never for sleeps.
TimePoint coarse_now();

/// Returns the time `d` from now, saturated: TimePoint::max() (no time limit) when that is
/// further than the clock can count, as for Duration::max(); now() for a negative `d`.
inline TimePoint deadline_after(Duration d) {
  TimePoint t = now();
  if (d <= Duration::zero()) return t;
  return d >= TimePoint::max() - t ? TimePoint::max() : t + d;
}

/// Returns t as nanoseconds since the clock's epoch (for atomics and kernel timeouts).
inline int64_t to_ns(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// Returns a cycle count: the TSC on x86-64 (constant and shared by all cores on the
/// machines we run on), else nanoseconds. For ageing ready fibers, never for deadlines.
inline uint64_t cycles() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return static_cast<uint64_t>(to_ns(now()));
#endif
}

/// Returns cycles() ticks per microsecond, measured once per process (the first call spins
/// for about half a millisecond).
uint64_t cycles_per_us();

}  // namespace weft::rt
