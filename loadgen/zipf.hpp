// An exact Zipf sampler: ranks 1..N drawn with P(k) = k^-s / H(N, s), s >= 0.
//
// Built once per run with Walker's alias method in Vose's O(N) construction: the table has N
// columns, each holding an acceptance threshold and an alias rank. A draw picks a column
// uniformly, then keeps it or takes its alias by comparing a second random word against the
// threshold: two random words and no loop or search, whatever N and s (s = 0 is uniform).
// "Exact" means the only error is the rounding of the table entries to 64-bit thresholds
// (relative error about 2^-52 per probability), not an approximation of the distribution as in
// rejection-inversion samplers.
//
// The sampler is immutable after construction: threads share one and each brings its own Rng.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "loadgen/rng.hpp"

namespace weft::load {

class ZipfSampler {
 public:
  /// Builds the alias table for ranks 1..n with exponent s; throws std::invalid_argument
  /// when n is 0 or above 2^32-1, or s is negative or not finite.
  ZipfSampler(std::size_t n, double s);

  /// Returns the number of ranks N.
  std::size_t size() const { return columns_.size(); }

  /// Returns the exponent s.
  double exponent() const { return s_; }

  /// Returns the exact probability of `rank` (1..N), computed from the formula, not the table.
  double probability(std::size_t rank) const;

  /// Returns the probability of `rank` that the alias table realises (for tests and checks).
  double table_probability(std::size_t rank) const;

  /// Returns a rank in 1..N drawn from the distribution, using two outputs of `rng`.
  std::size_t sample(Rng& rng) const {
    const auto column = static_cast<std::size_t>(rng.below(columns_.size()));
    const Column& c = columns_[column];
    // A full column (threshold kAlways) is always kept; otherwise keep with threshold/2^64.
    return (c.threshold == kAlways || rng() < c.threshold) ? column + 1 : c.alias + 1;
  }

 private:
  static constexpr std::uint64_t kAlways = ~std::uint64_t{0};

  struct Column {
    std::uint64_t threshold;  // keep the column if a random word is below this
    std::uint32_t alias;      // else take this rank - 1
  };

  double s_;
  double norm_;  // H(N, s) = sum of k^-s
  std::vector<Column> columns_;
};

}  // namespace weft::load
