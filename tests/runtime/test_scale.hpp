// Test sizes, scaled by WEFT_TEST_SCALE: the tsan preset sets 0.1, because TSan makes each
// fiber and each synchronisation far more expensive, while the behaviour under test is the
// same at a tenth of the size.
#pragma once

#include <algorithm>
#include <cstdlib>

namespace weft::rt {

/// Returns n scaled by WEFT_TEST_SCALE (default 1), at least 1.
inline int scaled(int n) {
  const char* s = std::getenv("WEFT_TEST_SCALE");
  double f = s ? std::atof(s) : 1.0;
  return std::max(1, static_cast<int>(n * (f > 0 ? f : 1.0)));
}

}  // namespace weft::rt
