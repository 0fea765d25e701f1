// Test sizes, scaled by WEFT_TEST_SCALE: the tsan preset sets 0.1, because TSan makes each
// fiber and each synchronisation far more expensive, while the behaviour under test is the
// same at a tenth of the size. And the runtime the tests start: opts(processors).
#pragma once

#include <algorithm>
#include <cstdlib>

#include "runtime/scheduler.hpp"

namespace weft::rt {

/// Returns n scaled by WEFT_TEST_SCALE (default 1), at least 1.
inline int scaled(int n) {
  const char* s = std::getenv("WEFT_TEST_SCALE");
  double f = s ? std::atof(s) : 1.0;
  return std::max(1, static_cast<int>(n * (f > 0 ? f : 1.0)));
}

/// Returns the default runtime options with `processors` processors.
inline RuntimeOptions opts(unsigned processors) {
  RuntimeOptions o;
  o.processors = processors;
  return o;
}

}  // namespace weft::rt
