// Tests loadgen/histogram.cpp: percentiles within bucket precision, merge, clamping, moments.
#include "loadgen/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "loadgen/rng.hpp"

#include "alloc_counter.hpp"

namespace weft::load {
namespace {

constexpr std::uint64_t kMs = 1'000'000;

// The nearest-rank percentile of sorted values, the definition percentile() follows.
std::uint64_t nearest_rank(const std::vector<std::uint64_t>& sorted, double p) {
  if (p <= 0.0) return sorted.front();
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

void expect_close(std::uint64_t got, std::uint64_t want) {
  const double err = std::abs(static_cast<double>(got) - static_cast<double>(want));
  EXPECT_LE(err, Histogram::kRelativeError * static_cast<double>(want) + 1.0)
      << "got " << got << " want " << want;
}

TEST(Histogram, PercentilesOfOneToHundredMilliseconds) {
  Histogram h;
  for (std::uint64_t v = 1; v <= 100; ++v) h.record(v * kMs);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.min(), 1 * kMs);
  EXPECT_EQ(h.max(), 100 * kMs);
  expect_close(h.percentile(50), 50 * kMs);
  expect_close(h.percentile(90), 90 * kMs);
  expect_close(h.percentile(99), 99 * kMs);
  EXPECT_EQ(h.percentile(99.9), 100 * kMs);  // rank 100 is the max, read back exactly
  EXPECT_EQ(h.percentile(100), 100 * kMs);
  EXPECT_EQ(h.percentile(0), 1 * kMs);
  EXPECT_DOUBLE_EQ(h.mean(), 50.5 * kMs);
}

TEST(Histogram, PercentilesOfRandomValuesMatchNearestRank) {
  Histogram h;
  std::vector<std::uint64_t> values;
  Rng rng(5);
  for (int i = 0; i < 20000; ++i) {
    // Log-uniform over 1 µs .. 10 s, the shape of real latencies.
    const double v = std::exp(std::log(1e3) + rng.uniform01() * (std::log(1e10) - std::log(1e3)));
    values.push_back(static_cast<std::uint64_t>(v));
    h.record(values.back());
  }
  std::sort(values.begin(), values.end());
  for (double p : {1.0, 10.0, 25.0, 50.0, 75.0, 90.0, 99.0, 99.9, 99.99}) {
    expect_close(h.percentile(p), nearest_rank(values, p));
  }
  EXPECT_EQ(h.percentile(100), values.back());
}

TEST(Histogram, EveryValueReadsBackWithinPrecision) {
  // Sweep the range geometrically; each value sits between the two ends, so percentile(50)
  // (rank 2 of 3) returns its bucket's midpoint.
  for (double v = 1e3; v <= 1e11; v *= 1.0137) {
    Histogram h;
    h.record(Histogram::kLowestNs);
    h.record(static_cast<std::uint64_t>(v));
    h.record(Histogram::kHighestNs);
    expect_close(h.percentile(50), static_cast<std::uint64_t>(v));
  }
  EXPECT_LT(Histogram::kRelativeError, 0.005);  // two significant digits need < 0.5%
}

TEST(Histogram, MergeEqualsRecordingBoth) {
  Histogram a, b, both;
  Rng rng(11);
  for (int i = 0; i < 5000; ++i) {
    const auto v = 1000 + rng.below(50 * kMs);
    (i % 3 == 0 ? a : b).record(v);
    both.record(v);
  }
  a.record(7);  // clamped in one half only
  both.record(7);
  Histogram merged;
  merged.merge(a);
  merged.merge(b);
  EXPECT_EQ(merged.count(), both.count());
  EXPECT_EQ(merged.min(), both.min());
  EXPECT_EQ(merged.max(), both.max());
  EXPECT_EQ(merged.clamped(), both.clamped());
  for (double p = 0; p <= 100; p += 0.5) EXPECT_EQ(merged.percentile(p), both.percentile(p));
  EXPECT_NEAR(merged.mean(), both.mean(), 1e-9 * both.mean());
  EXPECT_NEAR(merged.stddev(), both.stddev(), 1e-9 * both.stddev());
  Histogram empty;
  merged.merge(empty);
  EXPECT_EQ(merged.count(), both.count());
}

TEST(Histogram, ExtremeValuesClamp) {
  Histogram h;
  h.record(0);
  h.record(999);
  h.record(Histogram::kHighestNs + 1);
  h.record(UINT64_MAX);
  h.record(5 * kMs);
  EXPECT_EQ(h.count(), 5u);
  EXPECT_EQ(h.clamped(), 4u);
  EXPECT_EQ(h.min(), Histogram::kLowestNs);
  EXPECT_EQ(h.max(), Histogram::kHighestNs);
  EXPECT_EQ(h.percentile(0), Histogram::kLowestNs);
  expect_close(h.percentile(40), Histogram::kLowestNs);
  expect_close(h.percentile(60), 5 * kMs);
  EXPECT_EQ(h.percentile(100), Histogram::kHighestNs);
}

TEST(Histogram, MeanAndSampleStddevAreExact) {
  Histogram h;
  for (std::uint64_t v : {2, 4, 4, 4, 5, 5, 7, 9}) h.record(v * kMs);
  EXPECT_DOUBLE_EQ(h.mean(), 5.0 * kMs);
  EXPECT_NEAR(h.stddev(), std::sqrt(32.0 / 7.0) * kMs, 1e-6 * kMs);
  Histogram one;
  one.record(kMs);
  EXPECT_EQ(one.stddev(), 0.0);
}

TEST(Histogram, EmptyAndReset) {
  Histogram h;
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.percentile(50), 0u);
  EXPECT_EQ(h.min(), 0u);
  EXPECT_EQ(h.max(), 0u);
  EXPECT_EQ(h.mean(), 0.0);
  h.record(3 * kMs);
  h.reset();
  EXPECT_EQ(h.count(), 0u);
  EXPECT_EQ(h.clamped(), 0u);
  EXPECT_EQ(h.percentile(99), 0u);
  h.record(2 * kMs);
  EXPECT_EQ(h.min(), 2 * kMs);
  EXPECT_EQ(h.max(), 2 * kMs);
}

TEST(Histogram, RecordDoesNotAllocate) {
  Histogram h;
  const auto before = testing::allocations();
  for (std::uint64_t v = 0; v < 100000; v += 7) h.record(v * 977);
  EXPECT_EQ(testing::allocations(), before);
}

}  // namespace
}  // namespace weft::load
