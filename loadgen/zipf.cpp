#include "loadgen/zipf.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace weft::load {

namespace {

// 2^64 as a double: thresholds are probabilities scaled to 64-bit words.
constexpr double kTwo64 = 0x1.0p64;

double weight(std::size_t rank, double s) {
  return s == 0.0 ? 1.0 : std::pow(static_cast<double>(rank), -s);
}

}  // namespace

ZipfSampler::ZipfSampler(std::size_t n, double s) : s_(s), norm_(0.0) {
  if (n == 0 || n > std::numeric_limits<std::uint32_t>::max()) {
    throw std::invalid_argument("zipf: the number of ranks must be between 1 and 2^32-1");
  }
  if (!std::isfinite(s) || s < 0.0) {
    throw std::invalid_argument("zipf: the exponent must be a finite number >= 0");
  }
  // Sum the smallest terms first so that rounding error stays near one ulp of the total.
  for (std::size_t k = n; k >= 1; --k) norm_ += weight(k, s);

  // Vose's construction: scaled probabilities q = p * n; columns below 1 are "small" and get
  // topped up from a "large" one, which becomes their alias.
  std::vector<double> q(n);
  for (std::size_t k = 0; k < n; ++k) q[k] = weight(k + 1, s) / norm_ * static_cast<double>(n);
  std::vector<std::uint32_t> small;
  std::vector<std::uint32_t> large;
  small.reserve(n);
  large.reserve(n);
  for (std::size_t k = n; k-- > 0;)
    (q[k] < 1.0 ? small : large).push_back(static_cast<std::uint32_t>(k));

  columns_.assign(n, Column{kAlways, 0});
  for (std::size_t k = 0; k < n; ++k) columns_[k].alias = static_cast<std::uint32_t>(k);
  while (!small.empty() && !large.empty()) {
    const std::uint32_t l = small.back();
    small.pop_back();
    const std::uint32_t g = large.back();
    large.pop_back();
    const double scaled = q[l] * kTwo64;
    columns_[l].threshold = scaled >= kTwo64 ? kAlways : static_cast<std::uint64_t>(scaled);
    columns_[l].alias = g;
    // Subtract in this order (Vose): (q_g + q_l) - 1 loses less than q_g - (1 - q_l).
    q[g] = (q[g] + q[l]) - 1.0;
    (q[g] < 1.0 ? small : large).push_back(g);
  }
  // Whatever is left in either list is 1 up to rounding: keep it always (alias = itself).
}

double ZipfSampler::probability(std::size_t rank) const {
  if (rank < 1 || rank > columns_.size()) return 0.0;
  return weight(rank, s_) / norm_;
}

double ZipfSampler::table_probability(std::size_t rank) const {
  if (rank < 1 || rank > columns_.size()) return 0.0;
  const std::size_t target = rank - 1;
  double mass = 0.0;
  for (std::size_t k = 0; k < columns_.size(); ++k) {
    const Column& c = columns_[k];
    const double keep = c.threshold == kAlways ? 1.0 : static_cast<double>(c.threshold) / kTwo64;
    if (k == target) mass += keep;
    if (c.alias == target && k != target) mass += 1.0 - keep;
  }
  return mass / static_cast<double>(columns_.size());
}

}  // namespace weft::load
