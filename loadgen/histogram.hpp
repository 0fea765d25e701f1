// A log-bucketed latency histogram in the manner of HdrHistogram, for values in nanoseconds.
//
// Range: 1 µs .. 100 s. Each power of two in that range is split into 256 equal buckets, so a
// bucket is at most 1/256 (0.39%) of its values wide and any value read back (a percentile) is
// within 0.2% of a recorded one: better than the two significant decimal digits asked for.
// 28 octaves x 256 buckets x 8 bytes = 56 KiB, allocated once at construction.
//
// Values outside the range are clamped to its ends before anything else (count, min, max, mean
// and buckets all see the clamped value); clamped() counts how many were. record() is O(1) and
// never allocates. Mean and standard deviation are exact (Welford's running moments, merged
// with Chan's formula), not bucket approximations. A Histogram belongs to one thread; merge()
// one thread's into another's at the end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace weft::load {

class Histogram {
 public:
  static constexpr std::uint64_t kLowestNs = 1'000;             // 1 µs
  static constexpr std::uint64_t kHighestNs = 100'000'000'000;  // 100 s
  static constexpr unsigned kSubBucketBits = 8;                 // 256 buckets per octave
  /// Largest relative distance between a recorded value and what percentile() reads back.
  static constexpr double kRelativeError = 1.0 / (2 << kSubBucketBits);

  /// Creates an empty histogram (allocates its buckets, the only allocation it makes).
  Histogram();

  /// Records one value in nanoseconds, clamped to [kLowestNs, kHighestNs].
  void record(std::uint64_t ns);

  /// Adds every value recorded in `other` to this histogram.
  void merge(const Histogram& other);

  /// Forgets every value; the buckets stay allocated.
  void reset();

  /// Returns the number of values recorded.
  std::uint64_t count() const { return count_; }

  /// Returns how many recorded values were outside the range and clamped.
  std::uint64_t clamped() const { return clamped_; }

  /// Returns the smallest value recorded (after clamping), or 0 when empty.
  std::uint64_t min() const { return count_ ? min_ : 0; }

  /// Returns the largest value recorded (after clamping), or 0 when empty.
  std::uint64_t max() const { return max_; }

  /// Returns the exact mean of the recorded values, or 0 when empty.
  double mean() const { return mean_; }

  /// Returns the sample standard deviation (n - 1 in the denominator, as httperf), or 0 for
  /// fewer than two values.
  double stddev() const;

  /// Returns the value at percentile p (0..100): the smallest bucket value v such that at least
  /// p% of the values are <= v, read as the bucket's midpoint and kept within [min, max];
  /// percentile(0) is min(), percentile(100) is max(), and an empty histogram gives 0.
  std::uint64_t percentile(double p) const;

  /// Returns the number of buckets (for tests).
  static constexpr std::size_t bucket_count() { return kBucketCount; }

  /// Everything a histogram holds, with only its non-empty buckets: what a report carries so
  /// that another process restores the histogram exactly and merges it (weft-load merge).
  struct Snapshot {
    std::vector<std::pair<std::uint32_t, std::uint64_t>> buckets;  // (index, count), ascending
    std::uint64_t count = 0;
    std::uint64_t clamped = 0;
    std::uint64_t min = 0;
    std::uint64_t max = 0;
    double mean = 0.0;
    double m2 = 0.0;
  };

  /// Returns this histogram's contents.
  Snapshot snapshot() const;

  /// Replaces this histogram's contents with `s`; returns false (and leaves it empty) when
  /// `s` cannot be one: an index out of range, or bucket counts that do not add up to count.
  bool restore(const Snapshot& s);

 private:
  static constexpr unsigned kMinExponent = 9;   // 2^9 = 512 <= kLowestNs
  static constexpr unsigned kMaxExponent = 36;  // 2^36 < kHighestNs < 2^37
  static constexpr std::size_t kBucketCount = std::size_t{kMaxExponent - kMinExponent + 1}
                                              << kSubBucketBits;

  static std::size_t index_of(std::uint64_t ns);
  static std::uint64_t lowest_in(std::size_t index);
  static std::uint64_t width_of(std::size_t index);

  std::vector<std::uint64_t> buckets_;
  std::uint64_t count_ = 0;
  std::uint64_t clamped_ = 0;
  std::uint64_t min_ = 0;
  std::uint64_t max_ = 0;
  double mean_ = 0.0;
  double m2_ = 0.0;  // sum of squared distances from the mean (Welford)
};

}  // namespace weft::load
