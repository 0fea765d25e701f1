// cycles_per_us: the cycle counter's rate, measured against the monotonic clock.
#include "runtime/clock.hpp"

namespace weft::rt {
namespace {

uint64_t measure_cycles_per_us() {
#if defined(__x86_64__)
  // Half a millisecond gives the rate to about 0.1% (clock_gettime reads within tens of
  // nanoseconds), plenty for thresholds of tens of microseconds.
  constexpr int64_t kWindowNs = 500'000;
  int64_t t0 = to_ns(now());
  uint64_t c0 = cycles();
  int64_t t1 = t0;
  while (t1 - t0 < kWindowNs) t1 = to_ns(now());
  uint64_t c1 = cycles();
  uint64_t per_us = (c1 - c0) * 1000 / static_cast<uint64_t>(t1 - t0);
  return per_us > 0 ? per_us : 1;
#else
  return 1000;  // cycles() counts nanoseconds
#endif
}

}  // namespace

uint64_t cycles_per_us() {
  static const uint64_t rate = measure_cycles_per_us();
  return rate;
}

}  // namespace weft::rt
