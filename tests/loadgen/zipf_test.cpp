// Tests loadgen/zipf.cpp: exact table, chi-square goodness of fit, determinism, bad arguments.
#include "loadgen/zipf.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace weft::load {
namespace {

// Upper quantile of chi-square with k degrees of freedom at standard-normal quantile z,
// by Wilson and Hilferty's cube-root approximation (good to ~1% for k >= 30).
double chi_square_quantile(double k, double z) {
  const double a = 2.0 / (9.0 * k);
  return k * std::pow(1.0 - a + z * std::sqrt(a), 3.0);
}

constexpr double kZ999 = 3.090232306167813;  // standard normal 0.999 quantile

struct ChiSquare {
  double statistic;
  double dof;
};

// Pearson's statistic of `counts` against `expected_p` for `total` draws. Adjacent cells with
// an expected count under 5 are pooled (from the tail), as the test's validity requires.
ChiSquare chi_square(const std::vector<std::uint64_t>& counts,
                     const std::vector<double>& expected_p, std::uint64_t total) {
  double stat = 0.0;
  double cells = 0.0;
  double pooled_expected = 0.0;
  double pooled_observed = 0.0;
  for (std::size_t k = counts.size(); k-- > 0;) {
    pooled_expected += expected_p[k] * static_cast<double>(total);
    pooled_observed += static_cast<double>(counts[k]);
    if (pooled_expected >= 5.0 || k == 0) {
      const double d = pooled_observed - pooled_expected;
      stat += d * d / pooled_expected;
      cells += 1.0;
      pooled_expected = pooled_observed = 0.0;
    }
  }
  return ChiSquare{stat, cells - 1.0};
}

std::vector<std::uint64_t> draw(const ZipfSampler& z, std::uint64_t seed, std::uint64_t samples) {
  std::vector<std::uint64_t> counts(z.size(), 0);
  Rng rng(seed);
  for (std::uint64_t i = 0; i < samples; ++i) {
    const std::size_t rank = z.sample(rng);
    EXPECT_GE(rank, 1u);
    EXPECT_LE(rank, z.size());
    ++counts[rank - 1];
  }
  return counts;
}

std::vector<double> exact(const ZipfSampler& z) {
  std::vector<double> p(z.size());
  for (std::size_t k = 1; k <= z.size(); ++k) p[k - 1] = z.probability(k);
  return p;
}

class ZipfFit : public ::testing::TestWithParam<double> {};

TEST_P(ZipfFit, ChiSquareBelowThe999Quantile) {
  const double s = GetParam();
  const ZipfSampler z(1000, s);
  const std::uint64_t n = 1'000'000;
  const auto counts = draw(z, 20240601, n);
  const ChiSquare c = chi_square(counts, exact(z), n);
  const double critical = chi_square_quantile(c.dof, kZ999);
  EXPECT_LT(c.statistic, critical) << "s=" << s << " dof=" << c.dof;
  EXPECT_GT(c.dof, 500.0);  // pooling must not have hidden the tail
}

INSTANTIATE_TEST_SUITE_P(Exponents, ZipfFit, ::testing::Values(0.0, 0.8, 1.0, 1.2));

TEST(Zipf, ChiSquareRejectsANeighbouringExponent) {
  // The test above must be able to fail: samples of s = 1.0 judged against s = 1.02.
  const ZipfSampler z(1000, 1.0);
  const ZipfSampler other(1000, 1.02);
  const std::uint64_t n = 1'000'000;
  const ChiSquare c = chi_square(draw(z, 7, n), exact(other), n);
  EXPECT_GT(c.statistic, chi_square_quantile(c.dof, kZ999));
}

TEST(Zipf, WilsonHilfertyMatchesTabulatedQuantiles) {
  // Exact chi-square 0.999 quantiles (incomplete gamma): dof 100 -> 149.449, 999 -> 1142.848.
  EXPECT_NEAR(chi_square_quantile(100, kZ999), 149.449, 0.5);
  EXPECT_NEAR(chi_square_quantile(999, kZ999), 1142.848, 1.0);
}

TEST(Zipf, TableRealisesTheExactDistribution) {
  for (double s : {0.0, 0.5, 1.0, 1.2, 3.0}) {
    const ZipfSampler z(257, s);
    double total = 0.0;
    for (std::size_t k = 1; k <= z.size(); ++k) {
      const double p = z.probability(k);
      EXPECT_NEAR(z.table_probability(k), p, 1e-12 + 1e-9 * p) << "s=" << s << " k=" << k;
      total += p;
    }
    EXPECT_NEAR(total, 1.0, 1e-12);
  }
}

TEST(Zipf, ProbabilityFollowsThePowerLaw) {
  const ZipfSampler z(100, 1.0);
  EXPECT_NEAR(z.probability(1) / z.probability(2), 2.0, 1e-12);
  EXPECT_NEAR(z.probability(10) / z.probability(100), 10.0, 1e-12);
  EXPECT_EQ(z.probability(0), 0.0);
  EXPECT_EQ(z.probability(101), 0.0);
  const ZipfSampler uniform(4, 0.0);
  for (std::size_t k = 1; k <= 4; ++k) EXPECT_DOUBLE_EQ(uniform.probability(k), 0.25);
}

TEST(Zipf, SameSeedSameSequence) {
  const ZipfSampler z(1000, 1.0);
  Rng a(99), b(99), c(100);
  std::vector<std::size_t> first, second, third;
  for (int i = 0; i < 10000; ++i) {
    first.push_back(z.sample(a));
    second.push_back(z.sample(b));
    third.push_back(z.sample(c));
  }
  EXPECT_EQ(first, second);
  EXPECT_NE(first, third);
}

TEST(Zipf, SingleRankAlwaysDrawsIt) {
  const ZipfSampler z(1, 1.5);
  Rng rng(1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(z.sample(rng), 1u);
  EXPECT_DOUBLE_EQ(z.probability(1), 1.0);
}

TEST(Zipf, RejectsBadArguments) {
  EXPECT_THROW(ZipfSampler(0, 1.0), std::invalid_argument);
  EXPECT_THROW(ZipfSampler(10, -0.1), std::invalid_argument);
  EXPECT_THROW(ZipfSampler(10, std::nan("")), std::invalid_argument);
  EXPECT_THROW(ZipfSampler(10, INFINITY), std::invalid_argument);
}

}  // namespace
}  // namespace weft::load
