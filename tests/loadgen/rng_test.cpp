// Tests loadgen/rng.hpp: reference vectors of xoshiro256** and splitmix64, and the helpers.
#include "loadgen/rng.hpp"

#include <cstdint>
#include <set>
#include <vector>

#include <gtest/gtest.h>

namespace weft::load {
namespace {

TEST(Rng, MatchesXoshiroReferenceVector) {
  // State {1, 2, 3, 4}: the first outputs of the reference C implementation.
  Rng r = Rng::from_state(1, 2, 3, 4);
  const std::vector<std::uint64_t> expected = {11520ULL,
                                               0ULL,
                                               1509978240ULL,
                                               1215971899390074240ULL,
                                               1216172134540287360ULL,
                                               607988272756665600ULL};
  for (auto e : expected) EXPECT_EQ(r(), e);
}

TEST(Rng, SplitmixMatchesReference) {
  std::uint64_t state = 0;
  EXPECT_EQ(splitmix64(state), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(splitmix64(state), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(splitmix64(state), 0x06c45d188009454fULL);
}

TEST(Rng, SameSeedSameSequenceOtherSeedOther) {
  Rng a(42), b(42), c(43);
  bool differs = false;
  for (int i = 0; i < 100; ++i) {
    const auto x = a();
    EXPECT_EQ(x, b());
    differs = differs || x != c();
  }
  EXPECT_TRUE(differs);
}

TEST(Rng, StreamsAndIndicesAreDistinct) {
  std::set<std::uint64_t> first;
  for (std::uint64_t stream = 0; stream < 4; ++stream) {
    for (std::uint64_t index = 0; index < 256; ++index) {
      first.insert(Rng::for_stream(7, stream, index)());
    }
  }
  EXPECT_EQ(first.size(), 4u * 256u);
  EXPECT_EQ(Rng::for_stream(7, 1, 5)(), Rng::for_stream(7, 1, 5)());
}

TEST(Rng, Uniform01StaysInRange) {
  Rng r(1);
  double lo = 1.0, hi = 0.0, sum = 0.0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = r.uniform01();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    lo = std::min(lo, u);
    hi = std::max(hi, u);
    sum += u;
  }
  EXPECT_LT(lo, 0.001);
  EXPECT_GT(hi, 0.999);
  EXPECT_NEAR(sum / n, 0.5, 0.01);  // sd of the mean is 0.0009
}

TEST(Rng, BelowIsInRangeAndCoversIt) {
  Rng r(3);
  std::vector<int> seen(7, 0);
  for (int i = 0; i < 7000; ++i) {
    const auto k = r.below(7);
    ASSERT_LT(k, 7u);
    ++seen[k];
  }
  for (int n : seen) EXPECT_GT(n, 800);  // expected 1000 each, sd 29
  EXPECT_EQ(r.below(1), 0u);
}

}  // namespace
}  // namespace weft::load
