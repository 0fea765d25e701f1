#include "loadgen/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace weft::load {

Histogram::Histogram() : buckets_(kBucketCount, 0) {}

std::size_t Histogram::index_of(std::uint64_t ns) {
  // ns is already clamped, so its top bit e lies in [kMinExponent, kMaxExponent]; the next
  // kSubBucketBits bits below it pick the linear bucket inside that octave.
  const auto e = static_cast<unsigned>(63 - std::countl_zero(ns));
  const std::uint64_t sub = (ns >> (e - kSubBucketBits)) & ((1u << kSubBucketBits) - 1);
  return (std::size_t{e - kMinExponent} << kSubBucketBits) + static_cast<std::size_t>(sub);
}

std::uint64_t Histogram::lowest_in(std::size_t index) {
  const auto e = static_cast<unsigned>(index >> kSubBucketBits) + kMinExponent;
  const std::uint64_t sub = index & ((1u << kSubBucketBits) - 1);
  return ((std::uint64_t{1} << kSubBucketBits) + sub) << (e - kSubBucketBits);
}

std::uint64_t Histogram::width_of(std::size_t index) {
  const auto e = static_cast<unsigned>(index >> kSubBucketBits) + kMinExponent;
  return std::uint64_t{1} << (e - kSubBucketBits);
}

void Histogram::record(std::uint64_t ns) {
  if (ns < kLowestNs || ns > kHighestNs) {
    ++clamped_;
    ns = std::clamp(ns, kLowestNs, kHighestNs);
  }
  ++buckets_[index_of(ns)];
  if (count_ == 0 || ns < min_) min_ = ns;
  if (ns > max_) max_ = ns;
  ++count_;
  const double x = static_cast<double>(ns);
  const double delta = x - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (x - mean_);
}

void Histogram::merge(const Histogram& other) {
  if (other.count_ == 0) return;
  for (std::size_t i = 0; i < kBucketCount; ++i) buckets_[i] += other.buckets_[i];
  if (count_ == 0 || other.min_ < min_) min_ = other.min_;
  max_ = std::max(max_, other.max_);
  // Chan, Golub and LeVeque's pairwise update of the running moments.
  const double n_a = static_cast<double>(count_);
  const double n_b = static_cast<double>(other.count_);
  const double n = n_a + n_b;
  const double delta = other.mean_ - mean_;
  mean_ += delta * n_b / n;
  m2_ += other.m2_ + delta * delta * n_a * n_b / n;
  count_ += other.count_;
  clamped_ += other.clamped_;
}

void Histogram::reset() {
  std::fill(buckets_.begin(), buckets_.end(), 0);
  count_ = clamped_ = min_ = max_ = 0;
  mean_ = m2_ = 0.0;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    if (buckets_[i] != 0) s.buckets.emplace_back(static_cast<std::uint32_t>(i), buckets_[i]);
  }
  s.count = count_;
  s.clamped = clamped_;
  s.min = min_;
  s.max = max_;
  s.mean = mean_;
  s.m2 = m2_;
  return s;
}

bool Histogram::restore(const Snapshot& s) {
  reset();
  std::uint64_t total = 0;
  for (const auto& [index, n] : s.buckets) {
    if (index >= kBucketCount) {
      reset();
      return false;
    }
    buckets_[index] += n;
    total += n;
  }
  if (total != s.count || s.clamped > s.count || (s.count > 0 && s.min > s.max)) {
    reset();
    return false;
  }
  count_ = s.count;
  clamped_ = s.clamped;
  min_ = s.count ? s.min : 0;
  max_ = s.max;
  mean_ = s.mean;
  m2_ = s.m2;
  return true;
}

double Histogram::stddev() const {
  if (count_ < 2) return 0.0;
  return std::sqrt(m2_ / static_cast<double>(count_ - 1));
}

std::uint64_t Histogram::percentile(double p) const {
  if (count_ == 0) return 0;
  if (!(p > 0.0)) return min_;  // also catches NaN
  if (p >= 100.0) return max_;
  // The rank of the wanted value, 1-based: the smallest r with r >= p% of count.
  auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      const std::uint64_t mid = lowest_in(i) + width_of(i) / 2;
      return std::clamp(mid, min_, max_);
    }
  }
  return max_;
}

}  // namespace weft::load
