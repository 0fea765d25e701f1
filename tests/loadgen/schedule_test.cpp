// Tests loadgen/schedule.cpp: --period syntax, exact fixed spacing, random spacing statistics,
// limits, and independence from anything but the seed.
#include "loadgen/schedule.hpp"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace weft::load {
namespace {

std::vector<std::uint64_t> due_times(Schedule s, std::size_t n) {
  std::vector<std::uint64_t> out;
  while (out.size() < n) {
    auto next = s.next();
    if (!next) break;
    EXPECT_EQ(next->index, out.size());
    out.push_back(next->due_ns);
  }
  return out;
}

TEST(Period, ParsesHttperfSyntax) {
  std::string error;
  struct Case {
    const char* text;
    Period want;
  };
  const Case cases[] = {
      {"0.2", Period{Spacing::kFixed, 0.2, 0.0}},
      {"d0.2", Period{Spacing::kFixed, 0.2, 0.0}},
      {"e0.01", Period{Spacing::kExponential, 0.01, 0.0}},
      {"u1,3", Period{Spacing::kUniform, 1.0, 3.0}},
      {"u0.5,0.5", Period{Spacing::kUniform, 0.5, 0.5}},
      {"0", Period{}},
      {"d0", Period{}},
      {"e0", Period{}},
      {"u0,0", Period{}},
  };
  for (const Case& c : cases) {
    auto p = parse_period(c.text, error);
    ASSERT_TRUE(p) << c.text << ": " << error;
    EXPECT_EQ(*p, c.want) << c.text;
  }
}

TEST(Period, RejectsMalformedValues) {
  for (const char* bad : {"", "x1", "d", "e", "-1", "d-0.5", "u1", "u3,1", "u1,", "d1,2", "e1,2",
                          "1s", "nan", "inf", "u1,x"}) {
    std::string error;
    EXPECT_FALSE(parse_period(bad, error)) << bad;
    EXPECT_NE(error.find("--period"), std::string::npos) << bad << ": " << error;
  }
}

TEST(Period, RateMeanAndText) {
  const Period p = Period::from_rate(50);
  EXPECT_EQ(p.spacing, Spacing::kFixed);
  EXPECT_DOUBLE_EQ(p.t1, 0.02);
  EXPECT_DOUBLE_EQ(p.rate(), 50.0);
  EXPECT_EQ(Period::from_rate(0).spacing, Spacing::kSequential);
  EXPECT_DOUBLE_EQ((Period{Spacing::kUniform, 1.0, 3.0}).mean(), 2.0);
  EXPECT_EQ((Period{Spacing::kUniform, 1.0, 3.0}).to_string(), "u1,3");
  EXPECT_EQ((Period{Spacing::kExponential, 0.01, 0.0}).to_string(), "e0.01");
  std::string error;
  for (const char* text : {"u1,3", "e0.01", "d0.25"}) {
    EXPECT_EQ(parse_period(text, error)->to_string(), text);
  }
}

TEST(Schedule, FixedSpacingIsExact) {
  const auto t = due_times(Schedule(Period::from_rate(50), 1, 1000, std::nullopt), 1000);
  ASSERT_EQ(t.size(), 1000u);
  for (std::size_t i = 0; i < t.size(); ++i) EXPECT_EQ(t[i], i * 20'000'000u);
  // A period that is not a whole number of nanoseconds rounds per session, never drifts.
  const auto third = due_times(Schedule(Period::from_rate(3), 1, 3001, std::nullopt), 3001);
  EXPECT_EQ(third[1], 333'333'333u);
  EXPECT_EQ(third[2], 666'666'667u);
  EXPECT_EQ(third[3000], 1'000'000'000'000u);
}

TEST(Schedule, ExponentialMeanGapWithinTolerance) {
  const double mean = 0.01;
  const std::size_t n = 200'000;
  const auto t = due_times(Schedule(Period{Spacing::kExponential, mean, 0.0}, 12345, n, {}), n);
  ASSERT_EQ(t.size(), n);
  EXPECT_EQ(t[0], 0u);
  double sum = 0.0, sum2 = 0.0;
  for (std::size_t i = 1; i < n; ++i) {
    ASSERT_GE(t[i], t[i - 1]);
    const double gap = static_cast<double>(t[i] - t[i - 1]) / 1e9;
    sum += gap;
    sum2 += gap * gap;
  }
  const double m = sum / static_cast<double>(n - 1);
  const double sd = std::sqrt(sum2 / static_cast<double>(n - 1) - m * m);
  // The sample mean's sd is mean / sqrt(n) = 0.22%; allow 5 of them. An exponential's sd
  // equals its mean, which tells Poisson arrivals from, say, uniform gaps of the same mean.
  EXPECT_NEAR(m, mean, 5 * mean / std::sqrt(static_cast<double>(n)));
  EXPECT_NEAR(sd / m, 1.0, 0.02);
}

TEST(Schedule, UniformGapsStayInTheirInterval) {
  const std::size_t n = 100'000;
  const auto t = due_times(Schedule(Period{Spacing::kUniform, 0.001, 0.003}, 9, n, {}), n);
  double sum = 0.0;
  for (std::size_t i = 1; i < n; ++i) {
    const double gap = static_cast<double>(t[i] - t[i - 1]) / 1e9;
    ASSERT_GE(gap, 0.001 - 1e-9);
    ASSERT_LT(gap, 0.003 + 1e-9);
    sum += gap;
  }
  // Uniform on [1, 3) ms: mean 2 ms, sd 0.577 ms, sd of the mean 0.0018 ms.
  EXPECT_NEAR(sum / static_cast<double>(n - 1), 0.002, 0.00001);
}

TEST(Schedule, SameSeedSameTimesOtherSeedOther) {
  const Period p{Spacing::kExponential, 0.005, 0.0};
  const auto a = due_times(Schedule(p, 77, 500, {}), 500);
  const auto b = due_times(Schedule(p, 77, 500, {}), 500);
  const auto c = due_times(Schedule(p, 78, 500, {}), 500);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Schedule, StopsAtMaxSessionsOrDuration) {
  EXPECT_EQ(due_times(Schedule(Period::from_rate(10), 1, 7, std::nullopt), 100).size(), 7u);
  // 10/s for 1 s: sessions due at 0, 0.1, ..., 0.9 s; the one due at 1.0 s is not.
  Schedule s(Period::from_rate(10), 1, std::nullopt, 1'000'000'000);
  EXPECT_EQ(due_times(s, 100).size(), 10u);
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(s.next());
  EXPECT_FALSE(s.next());
  EXPECT_FALSE(s.next());  // stays ended
  // Random spacing: every time is below the duration.
  const auto t =
      due_times(Schedule(Period{Spacing::kExponential, 0.01, 0}, 3, {}, 2'000'000'000), 100000);
  EXPECT_GT(t.size(), 150u);
  EXPECT_LT(t.size(), 250u);
  EXPECT_LT(t.back(), 2'000'000'000u);
}

TEST(Schedule, SequentialHasNoTimesAndIgnoresDuration) {
  Schedule s(Period{}, 1, 3, 1);
  EXPECT_TRUE(s.sequential());
  const auto t = due_times(s, 10);
  EXPECT_EQ(t, (std::vector<std::uint64_t>{0, 0, 0}));
}

}  // namespace
}  // namespace weft::load
