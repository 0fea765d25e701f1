// The runtime's clock: CLOCK_MONOTONIC through std::chrono::steady_clock, in nanoseconds.
#pragma once

#include <chrono>
#include <cstdint>

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

/// Returns t as nanoseconds since the clock's epoch (for atomics and kernel timeouts).
inline int64_t to_ns(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace weft::rt
