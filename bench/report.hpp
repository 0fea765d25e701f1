// Table helpers shared by the benchmark programs (runtime_bench, io_bench).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace weft::bench {

/// Returns the median of v (the mean of the middle two for an even count); NaN when empty.
inline double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Formats a figure with three or four significant digits ("-" for NaN).
inline std::string fmt(double v) {
  char buf[64];
  if (std::isnan(v)) return "-";
  double a = std::fabs(v);
  if (a >= 1000 || a == 0) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else if (a >= 100) {
    std::snprintf(buf, sizeof buf, "%.1f", v);
  } else if (a >= 1) {
    std::snprintf(buf, sizeof buf, "%.2f", v);
  } else {
    std::snprintf(buf, sizeof buf, "%.3f", v);
  }
  return buf;
}

}  // namespace weft::bench
